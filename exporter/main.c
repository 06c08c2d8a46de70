// SPDX-License-Identifier: GPL-2.0-only
/* netstack_exporter: flags, configuration, collector lifecycle and signals. */
#define _GNU_SOURCE /* vasprintf */
#include <bpf/libbpf.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "config.h"
#include "events.h"
#include "http.h"
#include "log.h"
#include "privs.h"
#include "scrape.h"
#include "version.h"

static const char usage[] =
	"Usage: netstack_exporter [flags]\n"
	"Prometheus exporter for Linux network stack drops, retransmits and RTT.\n\n"
	"  --config FILE               INI configuration (default: built-in defaults)\n"
	"  --web.listen-address ADDR   host:port, [ipv6]:port or :port (default :9437)\n"
	"  --node NAME                 add node=\"NAME\" to every series (default: none)\n"
	"  --check-config              validate the configuration and exit 0 or 1\n"
	"  --strict                    exit when an enabled collector cannot start\n"
	"  --log-level LEVEL           error, warn, info (default) or debug\n"
	"  --version                   print the version and exit\n"
	"  --help                      print this help and exit\n"
	"Flags override the configuration file.\n";

enum { OPT_CONFIG = 1, OPT_LISTEN, OPT_NODE, OPT_CHECK, OPT_STRICT, OPT_LOG_LEVEL, OPT_VERSION, OPT_HELP };

static const struct option options[] = {
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "web.listen-address", required_argument, NULL, OPT_LISTEN },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "check-config", no_argument, NULL, OPT_CHECK },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg, *line, *save;

	/* libbpf explains load failures at length (the verifier log): debug level only. */
	if (log_threshold < LOG_DEBUG || level == LIBBPF_DEBUG || vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_debug("%s%s", strncmp(line, "libbpf: ", 8) ? "libbpf: " : "", line);
	free(msg);
	return 0;
}

static int flag_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "netstack_exporter: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see --help)\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *config_path = NULL, *listen = NULL, *level = NULL, *node = NULL;
	bool check = false, strict = false;
	struct config cfg;
	char err[512];
	sigset_t sigs;
	int opt, sig, started = 0, exit_code = 0;

	opterr = 0;
	while ((opt = getopt_long_only(argc, argv, ":", options, NULL)) != -1) {
		switch (opt) {
		case OPT_CONFIG:
			config_path = optarg;
			break;
		case OPT_LISTEN:
			listen = optarg;
			break;
		case OPT_NODE:
			node = optarg;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_STRICT:
			strict = true;
			break;
		case OPT_LOG_LEVEL:
			level = optarg;
			break;
		case OPT_VERSION:
			printf("netstack_exporter %s (commit %s)\n", NETSTACK_VERSION,
			       NETSTACK_COMMIT);
			return 0;
		case OPT_HELP:
			fputs(usage, stdout);
			return 0;
		case ':':
			return flag_error("flag %s needs a value", argv[optind - 1]);
		default:
			/* getopt leaves the offending word just before optind. */
			return flag_error("unknown flag '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return flag_error("unexpected argument '%s'", argv[optind]);

	config_defaults(&cfg);
	if (config_path && config_load(&cfg, config_path, err, sizeof(err))) {
		fprintf(stderr, "netstack_exporter: %s\n", err);
		return 1;
	}
	if (listen) {
		struct sockaddr_storage ss;
		bool any;

		if (strlen(listen) >= sizeof(cfg.listen_address) ||
		    parse_listen_address(listen, &ss, &any))
			return flag_error("flag --web.listen-address: " LISTEN_ADDRESS_FORM
					  ", got '%s'",
					  listen);
		strcpy(cfg.listen_address, listen);
	}
	if (node) {
		if (strlen(node) >= sizeof(cfg.node))
			return flag_error("flag --node: value longer than 127 characters%s", "");
		strcpy(cfg.node, node);
	}
	if (level && log_level_parse(level, &cfg.log_level))
		return flag_error("flag --log-level: expected error, warn, info or debug, got '%s'",
				  level);
	if (check) {
		printf("%s: configuration OK\n", config_path ? config_path : "built-in defaults");
		return 0;
	}
	log_threshold = cfg.log_level;
	if (cfg.node[0])
		scrape_constant_label("node", cfg.node);
	libbpf_set_print(libbpf_log);

	/* Block the stop signals before any thread starts, then wait for them here. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	events_configure(&cfg.sampling);
	for (struct collector *const *p = collectors; *p; p++) {
		struct collector *c = *p;

		if (!c->enabled)
			continue;
		c->up = c->start() == 0;
		started += c->up;
		if (!c->up) {
			log_error("collector %s failed to start%s", c->name,
				  strict ? "; exiting (--strict)" : "; serving without it");
			if (strict) {
				exit_code = 1;
				goto out;
			}
		}
	}
	if (events_start()) {
		exit_code = 1;
		goto out;
	}
	if (http_start(&cfg)) {
		exit_code = 1;
		goto out;
	}
	if (cfg.drop_caps && privs_drop(privs_runtime_caps(), cfg.user)) {
		exit_code = 1;
		goto out;
	}
	log_info("netstack_exporter %s started with %d collector(s) attached", NETSTACK_VERSION,
		 started);
	sigwait(&sigs, &sig);
	log_info("received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	http_stop();
out:
	events_stop();
	for (struct collector *const *p = collectors; *p; p++)
		if ((*p)->up)
			(*p)->stop();
	return exit_code;
}
