// SPDX-License-Identifier: GPL-2.0-only
/* netstack_exporter: flags, configuration, collector lifecycle and signals. */
#define _GNU_SOURCE /* vasprintf */
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stddef.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/collector.h"
#include "config.h"
#include "sampling/events.h"
#include "http/http.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "pods/pods.h"
#include "kernel/pin.h"
#include "kernel/privs.h"
#include "kernel/confine.h"
#include "scrape.h"
#include "http/status.h"
#include "version.h"

static const char usage[] =
	"Usage: netstack_exporter [flags]\n"
	"Prometheus exporter of the Linux network stack: drops by reason, TCP retransmits, "
	"resets,\n"
	"connections and round-trip times, counted by BPF programs.\n\n"
	"  --config FILE               INI configuration (default: built-in defaults)\n"
	"  --web.listen-address ADDR   host:port, [ipv6]:port or :port (default :9437)\n"
	"  --node NAME                 add node=\"NAME\" to every series (default: none)\n"
	"  --check-config              validate the configuration and exit 0 or 1\n"
	"  --strict                    exit when an enabled collector cannot start\n"
	"  --unpin                     remove what the exporter pinned under [bpf] pin_path, exit\n"
	"  --log-level LEVEL           error, warn, info (default) or debug\n"
	"  --version                   print the version and exit\n"
	"  --help                      print this help and exit\n"
	"Flags override the configuration file.\n";

enum {
	OPT_CONFIG = 1,
	OPT_LISTEN,
	OPT_NODE,
	OPT_CHECK,
	OPT_STRICT,
	OPT_LOG_LEVEL,
	OPT_VERSION,
	OPT_HELP,
	OPT_UNPIN
};

static const struct option options[] = {
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "web.listen-address", required_argument, NULL, OPT_LISTEN },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "check-config", no_argument, NULL, OPT_CHECK },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "unpin", no_argument, NULL, OPT_UNPIN },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg, *line, *save;

	/* libbpf explains load failures at length (the verifier log): debug level only. */
	if (__atomic_load_n(&log_threshold, __ATOMIC_RELAXED) < LOG_DEBUG ||
	    level == LIBBPF_DEBUG || vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		log_debug("%s%s", strncmp(line, "libbpf: ", 8) ? "libbpf: " : "", line);
	free(msg);
	return 0;
}

/* Flags override the file, at start and at each reload. */
struct overrides {
	const char *listen, *node, *level;
};

static void apply_overrides(struct config *cfg, const struct overrides *o)
{
	/* Checked when parsing flags (main). */
	if (o->listen)
		strcpy(cfg->web.listen_address, o->listen);
	if (o->node)
		strcpy(cfg->node, o->node);
	if (o->level)
		log_level_parse(o->level, &cfg->log_level);
}

/* Start c (not running) with o: it is up when c->state is set after. */
static void start_collector(struct collector *c, const struct collector_opts *o,
			    const struct collector_env *env, bool strict)
{
	void *state = NULL;

	if (c->ops->start(env, o->v, &state)) {
		log_error("collector %s failed to start%s", c->ops->name,
			  strict ? "; exiting (--strict)" : "; serving without it");
		return;
	}
	c->state = state;
}

/*
 * Keys only a restart applies: next keeps the running value, and each changed one is named in
 * the log and in list (", "-separated).
 */
static void keep_restart_keys(struct config *next, const struct config *cfg, char *list, size_t len)
{
	static const struct {
		const char *key;
		size_t off, size; /* size 0: a bool, else a string in char[size] */
	} keys[] = {
#define STR(name, field)                                                                           \
	{ name, offsetof(struct config, field), sizeof(((struct config *)0)->field) }
		STR("[web] listen_address", web.listen_address),
		STR("[bpf] pin_path", pin_path),
		STR("[labels] node", node),
		{ "[security] drop_capabilities", offsetof(struct config, drop_caps), 0 },
		STR("[security] user", user),
		{ "[security] seccomp", offsetof(struct config, seccomp), 0 },
#undef STR
	};
	size_t used = 0;

	list[0] = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *n = (char *)next + keys[i].off;
		const char *c = (const char *)cfg + keys[i].off;

		if (keys[i].size ? !strcmp(n, c) : *(bool *)n == *(const bool *)c)
			continue;
		/* Privileges are dropped, the socket bound and the pins placed once, at start. */
		log_warn("reload: %s changed; it needs a restart, the running value stays",
			 keys[i].key);
		if (keys[i].size)
			memcpy(n, c, keys[i].size);
		else
			*(bool *)n = *(const bool *)c;
		used += snprintf(list + used, len - used, "%s%s", used ? ", " : "", keys[i].key);
		if (used >= len)
			used = len - 1;
	}
}

/*
 * SIGHUP: read and check the file again, the TLS files included, and start serving it beside
 * the running daemon. Anything wrong rejects the reload whole: logged, nothing changes, the
 * running configuration keeps serving. An accepted one applies every section under the scrape
 * lock (so no scrape sees a half-applied state), restarting only collectors whose options or
 * sampling settings changed; keys only a restart applies are logged by name.
 */
static void reload(const char *path, char **text, struct config *cfg, const struct overrides *o,
		   const struct collector_env *env, struct collector *run, struct pods *pods,
		   struct scrape *sc, struct http *http)
{
	struct web *web = NULL;
	struct config next;
	char err[512] = "", restart[256];
	size_t len;
	char *new_text = config_read(path, &len, err, sizeof(err));
	bool failed = false;
	unsigned resample;
	int i;

	scrape_lock(sc);
	/* Parsed into next alone: a rejected file leaves everything as it runs. */
	config_defaults(&next);
	if (new_text && !config_load_text(&next, path, new_text, len, err, sizeof(err))) {
		apply_overrides(&next, o);
		web = http_prepare(&next.web, err, sizeof(err));
		if (web && http_begin(http, web, err, sizeof(err)))
			web = NULL;
	}
	if (!web) {
		log_error("reload: %s; keeping the running configuration", err);
		scrape_reload_result(sc, false);
		scrape_unlock(sc);
		free(new_text);
		return;
	}
	keep_restart_keys(&next, cfg, restart, sizeof(restart));
	resample = events_reconfigure(env->events, &next.sampling);
	for (i = 0; run[i].ops; i++) {
		struct collector *c = &run[i];
		const struct collector_opts *want = &next.collectors[i];
		bool up = c->state, resampled = resample & (1u << c->ops->sampled);

		/* Same options and running (or off): leave it, its counters go on. */
		if (collector_opts_equal(want, &cfg->collectors[i]) && (up || !want->enabled) &&
		    !(resampled && up))
			continue;
		if (up)
			c->ops->stop(c->state);
		c->state = NULL;
		c->enabled = want->enabled;
		if (c->enabled)
			start_collector(c, want, env, false);
		else
			pin_remove(env->pin_root, c->ops->name);
		log_info("reload: collector %s %s%s", c->ops->name,
			 !c->enabled ? "disabled"
			 : c->state  ? "(re)started"
				     : "failed",
			 resampled ? " ([sampling] changed)" : "");
		if (c->enabled && !c->state) {
			/* A reload applies or is reported failed: what ran before runs on. */
			failed = true;
			if (up)
				start_collector(c, &cfg->collectors[i], env, false);
			if (c->state) {
				next.collectors[i] = cfg->collectors[i];
				log_error("reload: collector %s runs on with its previous settings",
					  c->ops->name);
			}
		}
	}
	events_start(env->events, env->kernel); /* logged: no events until a restart */
	pods_reconfigure(pods, &next.pods);	/* logged: no pod labels */
	*cfg = next; /* under the lock: scrapes read the node label from it */
	__atomic_store_n(&log_threshold, cfg->log_level, __ATOMIC_RELAXED); /* others log */
	scrape_reload_result(sc, !failed);
	scrape_unlock(sc);
	http_retire(http);
	free(*text);
	*text = new_text;
	if (failed)
		log_error("reload: %s applied but for the collectors that failed above; "
			  "netstack_config_last_reload_successful is 0",
			  path);
	else
		log_info("reload: %s applied%s%s", path, restart[0] ? "; needs a restart: " : "",
			 restart);
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
	bool check = false, strict = false, unpin = false;
	/* The collectors as they run, in registry order, then an end mark (ops NULL). */
	struct collector run[MAX_COLLECTORS + 1] = { 0 };
	struct status *status = NULL;
	struct events *events = NULL;
	struct scrape *scrape = NULL;
	struct overrides over;
	struct kernel kernel;
	struct pods *pods = NULL;
	struct http *http = NULL;
	struct passwd *pw;
	struct config cfg;
	/* The running pin_path: a restart key, a reload keeps its value (keep_restart_keys). */
	bool rtt_covered_once = false;
	struct collector_env env = { &kernel, cfg.pin_path, NULL /* events_new */,
				     &rtt_covered_once };
	const char *names[MAX_COLLECTORS + 1] = { 0 }; /* the collectors' */
	char err[512], *text = NULL;
	size_t len = 0;
	sigset_t sigs;
	int opt, sig, started = 0, exit_code = 0, pin_fd = -1;

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
		case OPT_UNPIN:
			unpin = true;
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
	if (config_path && (!(text = config_read(config_path, &len, err, sizeof(err))) ||
			    config_load_text(&cfg, config_path, text, len, err, sizeof(err)))) {
		fprintf(stderr, "netstack_exporter: %s\n", err);
		free(text);
		return 1;
	}
	if (listen) {
		struct sockaddr_storage ss;
		bool any;

		if (strlen(listen) >= sizeof(cfg.web.listen_address) ||
		    parse_listen_address(listen, &ss, &any))
			return flag_error("flag --web.listen-address: " LISTEN_ADDRESS_FORM
					  ", got '%s'",
					  listen);
	}
	if (node && strlen(node) >= sizeof(cfg.node))
		return flag_error("flag --node: value longer than 127 characters%s", "");
	if (level && log_level_parse(level, &cfg.log_level))
		return flag_error("flag --log-level: expected error, warn, info or debug, got '%s'",
				  level);
	over = (struct overrides){ listen, node, level };
	apply_overrides(&cfg, &over);
	if (check) {
		/* The TLS files too: a pair that does not load fails a start (or a reload). */
		struct web *w = http_prepare(&cfg.web, err, sizeof(err));

		free(text);
		if (!w) {
			fprintf(stderr, "netstack_exporter: %s\n", err);
			return 1;
		}
		http_discard(w);
		printf("%s: configuration OK\n", config_path ? config_path : "built-in defaults");
		return 0;
	}
	__atomic_store_n(&log_threshold, cfg.log_level, __ATOMIC_RELAXED);
	for (int i = 0; i < MAX_COLLECTORS && collectors[i]; i++)
		names[i] = collectors[i]->name;
	if (unpin) {
		free(text);
		return pin_remove_all(cfg.pin_path, names) ? 1 : 0;
	}
	/*
	 * Before anything attaches: a second exporter on the same pins would count every event
	 * twice. Held until exit; the kernel lets go of it however the process ends.
	 */
	if (cfg.pin_path[0] && (pin_fd = pin_lock(cfg.pin_path, cfg.pin_wait_seconds)) < 0) {
		free(text);
		return pin_fd == -EBUSY ? 3 : 1;
	}
	libbpf_set_print(libbpf_log);

	/* Block the stop signals before any thread starts, then wait for them here. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	/*
	 * Names and features from the kernel, read-only from here and shared by every thread until
	 * they are all joined (out:).
	 */
	kernel_init(&kernel);
	/* Before any BPF object is made, while CAP_SYS_RESOURCE (if granted) is still held. */
	kernel_raise_memlock(&kernel);
	env.events = events = events_new(&cfg.sampling);
	pods = pods_new(&cfg.pods);
	scrape = scrape_new(run, pods, events);
	status = scrape ? status_new(scrape, events) : NULL;
	if (!events || !pods || !scrape || !status) {
		log_error("out of memory");
		exit_code = 1;
		goto out;
	}
	if (cfg.node[0])
		scrape_constant_label(scrape, "node", cfg.node);
	scrape_reload_result(scrape, true); /* start-up counts as a successful load */
	for (int i = 0; collectors[i]; i++) {
		struct collector *c = &run[i];

		c->ops = collectors[i];
		c->enabled = cfg.collectors[i].enabled;
		if (!c->enabled) {
			pin_remove(env.pin_root,
				   c->ops->name); /* or its pinned programs would count on */
			continue;
		}
		start_collector(c, &cfg.collectors[i], &env, strict);
		started += c->state != NULL;
		if (!c->state && strict) {
			exit_code = 1;
			goto out;
		}
	}
	/*
	 * From here a fixed threshold (glibc otherwise raises it to the largest block freed): the
	 * scrape's large transient blocks (the response copy) go back to the system after each
	 * scrape instead of growing the heap for good. Not before: start-up parses the kernel's
	 * BTF four times (libbpf once per BPF object), megabytes each, and the heap reuses those
	 * pages where mmap'ed blocks fault every page in again; trimmed here.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	malloc_trim(0);
	http = http_open(&cfg.web, scrape, status, events);
	if (!http) {
		exit_code = 1;
		goto out;
	}
	/*
	 * Capabilities, the bounding set and no_new_privs are per thread: drop them before any
	 * thread that lasts starts (consumer, HTTP, pod resolver, and those they or a reload
	 * start), so every thread inherits the dropped state.
	 */
	if (cfg.drop_caps && cfg.user[0] && (pw = getpwnam(cfg.user)) &&
	    pin_give(cfg.pin_path, names, pw->pw_uid, pw->pw_gid)) {
		exit_code = 1;
		goto out;
	}
	if (cfg.drop_caps && privs_drop(privs_runtime_caps(), cfg.user)) {
		exit_code = 1;
		goto out;
	}
	/* Then the filter, while this is the only thread (TSYNC covers any other anyway). */
	if (cfg.seccomp && confine_self()) {
		exit_code = 1;
		goto out;
	}
	if (events_start(events, &kernel)) {
		exit_code = 1;
		goto out;
	}
	/* Before HTTP: a scrape may ask for its filters from the first request on. */
	if (pods_start(pods)) { /* logged */
		exit_code = 1;
		goto out;
	}
	status_tick(status); /* the first reading, so the page never shows none */
	if (http_start(http)) {
		exit_code = 1;
		goto out;
	}
	log_info("netstack_exporter %s started with %d collector(s) attached", NETSTACK_VERSION,
		 started);
	/* Between signals, the status page's samples. */
	for (;;) {
		double wait = status_tick(status);
		struct timespec ts = { (time_t)wait, (long)((wait - (time_t)wait) * 1e9) };

		sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (sig != SIGHUP)
			break;
		if (config_path)
			reload(config_path, &text, &cfg, &over, &env, run, pods, scrape, http);
		else
			log_info("SIGHUP: no --config file to reload");
	}
	log_info("received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
out:
	http_stop(http);
	pods_free(pods);
	for (struct collector *c = run; c->ops; c++)
		if (c->state)
			c->ops->stop(c->state);
	events_free(events); /* after the collectors: they hand their counters back */
	status_free(status); /* the HTTP daemons that read it are stopped */
	scrape_free(scrape);
	kernel_free(&kernel); /* every thread that reads it is joined */
	free(text);
	if (pin_fd >= 0)
		close(pin_fd); /* the next exporter may take the pins over */
	return exit_code;
}
