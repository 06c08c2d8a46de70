// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests for exporter/config.c: defaults, every key, every error and its line number. */
#include "check.h"
#include "collectors/collector.h"
#include "config.h"
#include "pods/pods.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every file a test writes goes here, under a fresh name, and is removed at exit. */
static char dir[] = "/tmp/test_config.XXXXXX";
static int nfiles;

static void write_file(char *path, size_t len, const char *text)
{
	FILE *f;

	snprintf(path, len, "%s/%d.ini", dir, ++nfiles);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		exit(2);
	}
}

/* Parse text over c; path receives the file name so messages can be matched exactly. */
static int load_text(struct config *c, const char *text, char *path, size_t pathlen, char *err,
		     size_t errlen)
{
	write_file(path, pathlen, text);
	err[0] = '\0';
	return config_load(c, path, err, errlen);
}

/* The drops collector's section of c. */
static struct collector_opts *drops(struct config *c)
{
	int i = collector_index("drops");

	if (i < 0) {
		fprintf(stderr, "no drops collector in the registry\n");
		exit(2);
	}
	return &c->collectors[i];
}

/* On defaults, text must fail with exactly "<path>:<line>: <msg>". */
static void expect_error_at(int src_line, const char *text, int line, const char *msg)
{
	char path[PATH_MAX], err[512], want[PATH_MAX + 512];
	int before = check_case_failed;
	struct config c;

	check_case_failed = 0;
	config_defaults(&c);
	CHECK(load_text(&c, text, path, sizeof(path), err, sizeof(err)) == -EINVAL);
	snprintf(want, sizeof(want), "%s:%d: %s", path, line, msg);
	CHECK_STR(err, want);
	if (check_case_failed)
		fprintf(stderr, "  (expected error from %s:%d)\n", __FILE__, src_line);
	check_case_failed |= before;
}
#define EXPECT_ERROR(text, line, msg) expect_error_at(__LINE__, text, line, msg)

/* On defaults, text must load without error; c holds the result. */
static void expect_ok_at(int src_line, struct config *c, const char *text)
{
	char path[PATH_MAX], err[512];

	config_defaults(c);
	if (load_text(c, text, path, sizeof(path), err, sizeof(err))) {
		fprintf(stderr, "  %s:%d: unexpected error: %s\n", __FILE__, src_line, err);
		check_case_failed = 1;
	}
}
#define EXPECT_OK(c, text) expect_ok_at(__LINE__, c, text)

static void test_defaults(void)
{
	struct config c;

	/* Garbage first: defaults must set every field, not rely on a zeroed struct. */
	memset(&c, 0xa5, sizeof(c));
	drops(&c)->enabled = false;
	config_defaults(&c);
	CHECK_STR(c.web.listen_address, ":9437");
	CHECK_STR(c.web.metrics_path, "/metrics");
	CHECK(c.web.max_connections == 256);
	CHECK(c.web.timeout_seconds == 10);
	CHECK(c.log_level == LOG_INFO);
	CHECK(c.seccomp);
	CHECK(collector_find("drops")->default_enabled);
	CHECK(drops(&c)->enabled);
	for (int i = 0; collectors[i]; i++)
		CHECK(c.collectors[i].enabled == collectors[i]->default_enabled);
}

static void test_empty_and_comment_only_files(void)
{
	struct config c, d;

	config_defaults(&d);
	EXPECT_OK(&c, "");
	CHECK(!memcmp(&c, &d, sizeof(c)));
	EXPECT_OK(&c, "; comment\n# another\n\n[web]\n; nothing set\n");
	CHECK(!memcmp(&c, &d, sizeof(c)));
	CHECK(drops(&c)->enabled);
}

/* conf/ says every value in it is the built-in default: hold it to that. */
static void test_shipped_ini_is_defaults(void)
{
	char err[512] = "";
	struct config c, d;

	config_defaults(&d);
	config_defaults(&c);
	if (config_load(&c, "conf/netstack_exporter.ini", err, sizeof(err))) {
		fprintf(stderr, "  %s (run from the repository root)\n", err);
		check_case_failed = 1;
		return;
	}
	/* pod_labels (empty) and its line. */
	for (int i = 0; i < c.pods.n_per; i++)
		CHECK(!c.pods.per[i].mask);
	c.pods.n_per = 0;
	memset(c.pods.per, 0, sizeof(c.pods.per));
	CHECK(!memcmp(&c, &d, sizeof(c)));
	CHECK(drops(&c)->enabled);
}

static void test_every_key_applied(void)
{
	struct config c;

	EXPECT_OK(&c, "[web]\n"
		      "listen_address = [::1]:9100\n"
		      "metrics_path = /probe/metrics\n"
		      "max_connections = 128\n"
		      "connection_timeout = 30\n"
		      "\n"
		      "[log]\n"
		      "level = debug\n"
		      "\n"
		      "[collector.drops]\n"
		      "enabled = false\n"
		      "labels = reason, family, protocol, function, netns, interface\n"
		      "max_series = 100\n");
	CHECK_STR(c.web.listen_address, "[::1]:9100");
	CHECK_STR(c.web.metrics_path, "/probe/metrics");
	CHECK(c.web.max_connections == 128);
	CHECK(c.web.timeout_seconds == 30);
	CHECK(c.log_level == LOG_DEBUG);
	CHECK(!drops(&c)->enabled);

	EXPECT_OK(&c, "[collector.drops]\nenabled = true\n");
	CHECK(drops(&c)->enabled);
}

static void test_log_levels(void)
{
	static const struct {
		const char *name;
		enum log_level level;
	} levels[] = {
		{ "error", LOG_ERROR },
		{ "warn", LOG_WARN },
		{ "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};
	char text[64];
	struct config c;

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		snprintf(text, sizeof(text), "[log]\nlevel = %s\n", levels[i].name);
		EXPECT_OK(&c, text);
		CHECK(c.log_level == levels[i].level);
	}
}

static void test_number_limits_accepted(void)
{
	struct config c;

	EXPECT_OK(&c, "[web]\nmax_connections = 1\nconnection_timeout = 1\n");
	CHECK(c.web.max_connections == 1);
	CHECK(c.web.timeout_seconds == 1);
	EXPECT_OK(&c, "[web]\nmax_connections = 65536\nconnection_timeout = 3600\n");
	CHECK(c.web.max_connections == 65536);
	CHECK(c.web.timeout_seconds == 3600);
	EXPECT_OK(&c, "[collector.drops]\nmax_series = 1\n");
	EXPECT_OK(&c, "[collector.drops]\nmax_series = 1048576\n");
}

/* inih trims around keys and values and strips "; inline" comments; CRLF files work. */
static void test_whitespace_comments_crlf(void)
{
	struct config c;

	EXPECT_OK(&c, "  [web]  \n"
		      "\tmetrics_path\t=\t/m   ; where metrics live\n"
		      "max_connections=7\n");
	CHECK_STR(c.web.metrics_path, "/m");
	CHECK(c.web.max_connections == 7);
	EXPECT_OK(&c, "[web]\r\nmax_connections = 9\r\n\r\n[log]\r\nlevel = warn\r\n");
	CHECK(c.web.max_connections == 9);
	CHECK(c.log_level == LOG_WARN);
	EXPECT_ERROR("[web]\r\nbogus = 1\r\n", 2, "bogus: unknown key 'bogus' in [web]");
}

/* config_load parses over what is there: keys a file does not name keep their values. */
static void test_load_over_current_values(void)
{
	char path[PATH_MAX], err[512];
	struct config c;

	EXPECT_OK(&c, "[web]\nlisten_address = 127.0.0.1:1\nmax_connections = 3\n");
	CHECK(load_text(&c, "[web]\nmax_connections = 4\n", path, sizeof(path), err, sizeof(err)) ==
	      0);
	CHECK_STR(c.web.listen_address, "127.0.0.1:1");
	CHECK(c.web.max_connections == 4);
}

static void test_unknown_section(void)
{
	/* The error names the header's line, not the first key under it. */
	EXPECT_ERROR("[web]\nlisten_address = :1\n\n; comment\n[bogus]\nkey = 1\n", 5,
		     "unknown section [bogus]");
	/* Even with nothing under it. */
	EXPECT_ERROR("[web]\n[bogus]\n", 2, "unknown section [bogus]");
	EXPECT_ERROR("[collector.nosuch]\nenabled = true\n", 1,
		     "unknown section [collector.nosuch]");
	EXPECT_ERROR("[collector.]\n", 1, "unknown section [collector.]");
	EXPECT_ERROR("[collector]\nenabled = true\n", 1, "unknown section [collector]");
	EXPECT_ERROR("[Web]\n", 1, "unknown section [Web]");
	/* Known sections after an unknown one do not hide it. */
	EXPECT_ERROR("; c\n[nope]\nx = 1\n[web]\nlisten_address = :2\n", 2,
		     "unknown section [nope]");
}

static void test_unknown_keys(void)
{
	EXPECT_ERROR("[web]\nlisten_address = :1\nlisten = :2\n", 3,
		     "listen: unknown key 'listen' in [web]");
	EXPECT_ERROR("[log]\n\nverbosity = 3\n", 3, "verbosity: unknown key 'verbosity' in [log]");
	EXPECT_ERROR("[collector.drops]\nenabled = true\nlabel = reason\n", 3,
		     "label: unknown key 'label' in [collector.drops]");
	/* Key names are case-sensitive. */
	EXPECT_ERROR("[web]\nMetrics_Path = /x\n", 2,
		     "Metrics_Path: unknown key 'Metrics_Path' in [web]");
}

static void test_bad_bool(void)
{
	EXPECT_ERROR("[collector.drops]\nenabled = yes\n", 2,
		     "enabled: expected true or false, got 'yes'");
	EXPECT_ERROR("[collector.drops]\nenabled = 1\n", 2,
		     "enabled: expected true or false, got '1'");
	EXPECT_ERROR("[collector.drops]\nenabled = True\n", 2,
		     "enabled: expected true or false, got 'True'");
	EXPECT_ERROR("[collector.drops]\nenabled =\n", 2,
		     "enabled: expected true or false, got ''");
	EXPECT_ERROR("[security]\n\nseccomp = off\n", 3,
		     "seccomp: expected true or false, got 'off'");
}

static void test_seccomp_key(void)
{
	struct config c;

	EXPECT_OK(&c, "[security]\nseccomp = false\n");
	CHECK(!c.seccomp);
	EXPECT_OK(&c, "[security]\nseccomp = true\n");
	CHECK(c.seccomp);
}

static void test_bad_numbers(void)
{
	EXPECT_ERROR("[web]\nmax_connections = many\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got 'many'");
	EXPECT_ERROR("[web]\nmax_connections = 0\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '0'");
	EXPECT_ERROR("[web]\nmax_connections = 65537\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '65537'");
	EXPECT_ERROR("[web]\nmax_connections = -1\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '-1'");
	EXPECT_ERROR("[web]\nmax_connections = 12x\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '12x'");
	EXPECT_ERROR("[web]\nmax_connections = +5\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '+5'");
	EXPECT_ERROR("[web]\nmax_connections =\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got ''");
	/* Wraps to a small number if the parser trusted strtoul's result. */
	EXPECT_ERROR("[web]\nmax_connections = 4294967297\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '4294967297'");
	EXPECT_ERROR("[web]\nmax_connections = 18446744073709551617\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, "
		     "got '18446744073709551617'");
	EXPECT_ERROR("[web]\nconnection_timeout = 0\n", 2,
		     "connection_timeout: expected a whole number from 1 to 3600, got '0'");
	EXPECT_ERROR("[web]\nconnection_timeout = 3601\n", 2,
		     "connection_timeout: expected a whole number from 1 to 3600, got '3601'");
	EXPECT_ERROR("[collector.drops]\nmax_series = 0\n", 2,
		     "max_series: expected a whole number from 1 to 1048576, got '0'");
	EXPECT_ERROR("[collector.drops]\nmax_series = 1048577\n", 2,
		     "max_series: expected a whole number from 1 to 1048576, got '1048577'");
	EXPECT_ERROR("[collector.drops]\nmax_series = -4096\n", 2,
		     "max_series: expected a whole number from 1 to 1048576, got '-4096'");
}

static void test_bad_metrics_path(void)
{
	char path[PATH_MAX], err[512];
	struct config c;

	EXPECT_ERROR("[web]\nmetrics_path = metrics\n", 2,
		     "metrics_path: metrics_path must start with '/', got 'metrics'");
	EXPECT_ERROR("[web]\nmetrics_path =\n", 2,
		     "metrics_path: metrics_path must start with '/', got ''");
	/* Checked before the length: a long relative path is named as relative. */
	EXPECT_ERROR("[web]\nmetrics_path = metrics/with/a/long/relative/path/that/is/over/"
		     "sixty/three/characters\n",
		     2,
		     "metrics_path: metrics_path must start with '/', got 'metrics/with/a/long/"
		     "relative/path/that/is/over/sixty/three/characters'");
	/* A rejected value is not applied. */
	config_defaults(&c);
	CHECK(load_text(&c, "[web]\nmetrics_path = x\n", path, sizeof(path), err, sizeof(err)) ==
	      -EINVAL);
	CHECK_STR(c.web.metrics_path, "/metrics");
}

static void test_overlong_values(void)
{
	char text[256], val[160], want[256];
	struct config c;

	/* listen_address is checked as an address; metrics_path holds 63 characters. */
	memset(val, 'a', 128);
	val[128] = '\0';
	snprintf(text, sizeof(text), "[web]\n\nlisten_address = %s\n", val);
	snprintf(want, sizeof(want), "listen_address: " LISTEN_ADDRESS_FORM ", got '%s'", val);
	EXPECT_ERROR(text, 3, want);
	EXPECT_ERROR("[web]\nlisten_address = 127.0.0.1\n", 2,
		     "listen_address: " LISTEN_ADDRESS_FORM ", got '127.0.0.1'");
	EXPECT_ERROR("[web]\nlisten_address = 127.0.0.1:70000\n", 2,
		     "listen_address: " LISTEN_ADDRESS_FORM ", got '127.0.0.1:70000'");
	EXPECT_OK(&c, "[web]\nlisten_address = [::1]:9437\n");
	CHECK_STR(c.web.listen_address, "[::1]:9437");

	val[0] = '/';
	memset(val + 1, 'p', 62);
	val[63] = '\0';
	snprintf(text, sizeof(text), "[web]\nmetrics_path = %s\n", val);
	EXPECT_OK(&c, text);
	CHECK_STR(c.web.metrics_path, val);
	val[63] = 'p';
	val[64] = '\0';
	snprintf(text, sizeof(text), "[web]\nmetrics_path = %s\n", val);
	EXPECT_ERROR(text, 2, "metrics_path: value longer than 63 characters");
}

static void test_bad_log_level(void)
{
	EXPECT_ERROR("[log]\nlevel = verbose\n", 2,
		     "level: expected error, warn, info or debug, got 'verbose'");
	EXPECT_ERROR("[log]\nlevel = INFO\n", 2,
		     "level: expected error, warn, info or debug, got 'INFO'");
	EXPECT_ERROR("[log]\nlevel =\n", 2, "level: expected error, warn, info or debug, got ''");
}

static void test_labels(void)
{
	struct config c;

	EXPECT_OK(&c, "[collector.drops]\nlabels = reason,family,protocol\n");
	EXPECT_OK(&c, "[collector.drops]\nlabels = protocol family reason netns\n");
	EXPECT_OK(&c, "[collector.drops]\nlabels = reason,,family,\tprotocol, interface,\n");
	EXPECT_ERROR("[collector.drops]\nlabels = reason, family, protocol, pod\n", 2,
		     "labels: unknown label 'pod' (known: reason, family, protocol, function, "
		     "netns, interface)");
	EXPECT_ERROR("[collector.drops]\nlabels = reason, family, protocol, Function\n", 2,
		     "labels: unknown label 'Function' (known: reason, family, protocol, "
		     "function, netns, interface)");
	EXPECT_ERROR("[collector.drops]\nlabels = family, protocol, function\n", 2,
		     "labels: labels must include reason, family and protocol");
	EXPECT_ERROR("[collector.drops]\nlabels = reason, protocol\n", 2,
		     "labels: labels must include reason, family and protocol");
	EXPECT_ERROR("[collector.drops]\nlabels = reason, family, netns\n", 2,
		     "labels: labels must include reason, family and protocol");
	EXPECT_ERROR("[collector.drops]\nlabels =\n", 2,
		     "labels: labels must include reason, family and protocol");
}

/* Through the collector's own set hook: limits a config line cannot reach. */
static void test_drops_set_hook(void)
{
	const struct collector_ops *ops = collector_find("drops");
	struct collector_opts o = { 0 };
	char err[256], val[300];

	CHECK(ops);
	if (!ops)
		return;
	collector_defaults(ops, &o);
	/* 256 characters are too many, 255 fit. */
	memset(val, ' ', sizeof(val) - 1);
	memcpy(val, "reason,family,protocol", 22);
	val[256] = '\0';
	err[0] = '\0';
	CHECK(collector_set(ops, o.v, "labels", val, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "list too long");
	val[255] = '\0';
	CHECK(collector_set(ops, o.v, "labels", val, err, sizeof(err)) == 0);
	err[0] = '\0';
	CHECK(collector_set(ops, o.v, "nope", "1", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "unknown key 'nope' in [collector.drops]");
	CHECK(collector_set(ops, o.v, "direct_read", "auto", err, sizeof(err)) == 0);
	CHECK(collector_set(ops, o.v, "direct_read", "false", err, sizeof(err)) == 0);
	CHECK(collector_set(ops, o.v, "direct_read", "true", err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "expected auto or false, got 'true'");
}

static void test_syntax_error(void)
{
	EXPECT_ERROR("[web]\nlisten_address = :1\n\nthis is not a key\n", 4,
		     "syntax error: expected '[section]' or 'key = value'");
	EXPECT_ERROR("[web]\nmax_connections\n", 2,
		     "syntax error: expected '[section]' or 'key = value'");
}

static void test_key_outside_section(void)
{
	EXPECT_ERROR("listen_address = :1\n[web]\n", 1,
		     "listen_address: key 'listen_address' outside any section");
	EXPECT_ERROR("; header comment\n\nenabled = true\n", 3,
		     "enabled: key 'enabled' outside any section");
}

static void test_first_error_wins(void)
{
	/* Two key errors. */
	EXPECT_ERROR("[web]\nmax_connections = 0\nbogus = 1\n", 2,
		     "max_connections: expected a whole number from 1 to 65536, got '0'");
	/* A key error before a syntax error, and the other way round. */
	EXPECT_ERROR("[web]\nbogus = 1\nnot a key\n", 2, "bogus: unknown key 'bogus' in [web]");
	EXPECT_ERROR("[web]\nnot a key\nbogus = 1\n", 2,
		     "syntax error: expected '[section]' or 'key = value'");
	/* A key error before an unknown section (whose keys inih also counts as errors). */
	EXPECT_ERROR("[log]\nlevel = loud\n[nope]\nx = 1\n", 2,
		     "level: expected error, warn, info or debug, got 'loud'");
	/* An unknown section before a syntax error, and the other way round. */
	EXPECT_ERROR("[nope]\nx = 1\nnot a key\n[web]\nbogus = 1\n", 1, "unknown section [nope]");
	EXPECT_ERROR("[web]\nnot a key\n[nope]\nx = 1\n", 2,
		     "syntax error: expected '[section]' or 'key = value'");
	/* Key outside any section, then everything else. */
	EXPECT_ERROR("x = 1\n[nope]\n[web]\nbogus = 1\n", 1, "x: key 'x' outside any section");
}

static void test_missing_file(void)
{
	char path[PATH_MAX], err[PATH_MAX + 64], want[PATH_MAX + 64];
	struct config c, d;

	snprintf(path, sizeof(path), "%s/does-not-exist.ini", dir);
	config_defaults(&c);
	config_defaults(&d);
	CHECK(config_load(&c, path, err, sizeof(err)) == -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	CHECK_STR(err, want);
	CHECK(!memcmp(&c, &d, sizeof(c)));

	/* A short buffer gets a truncated, terminated message. */
	memset(err, 'x', sizeof(err));
	CHECK(config_load(&c, path, err, 8) == -ENOENT);
	CHECK(err[7] == '\0' && !strncmp(err, path, 7));
}

/* A second config_defaults (a reload) must not keep what the previous file set. */
static void test_defaults_reset_collector_state(void)
{
	struct config c, d;

	EXPECT_OK(&c, "[web]\nmetrics_path = /x\n[collector.drops]\nenabled = false\n"
		      "labels = reason,family,protocol,function,netns\nmax_series = 10\n");
	CHECK(!drops(&c)->enabled);
	CHECK_STR(c.web.metrics_path, "/x");
	config_defaults(&c);
	CHECK(drops(&c)->enabled);
	CHECK_STR(c.web.metrics_path, "/metrics");
	/* A file that does not mention the collector leaves the defaults. */
	EXPECT_OK(&c, "[web]\nmax_connections = 5\n");
	CHECK(drops(&c)->enabled);
	CHECK_STR(c.web.metrics_path, "/metrics");
	/* labels and max_series are back to the defaults too. */
	config_defaults(&d);
	CHECK(collector_opts_equal(drops(&c), drops(&d)));
}

static void test_parse_bool(void)
{
	char err[128];
	bool b;

	b = false;
	CHECK(parse_bool("true", &b, err, sizeof(err)) == 0 && b);
	CHECK(parse_bool("false", &b, err, sizeof(err)) == 0 && !b);
	static const char *const bad[] = { "", "TRUE", "yes", "on", "1", "0", " true", "true " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[64];

		b = true;
		err[0] = '\0';
		CHECK(parse_bool(bad[i], &b, err, sizeof(err)) == -EINVAL);
		CHECK(b); /* untouched */
		snprintf(want, sizeof(want), "expected true or false, got '%s'", bad[i]);
		CHECK_STR(err, want);
	}
}

static void test_parse_uint(void)
{
	char err[128];
	unsigned v;

	CHECK(parse_uint("7", 1, 10, &v, err, sizeof(err)) == 0 && v == 7);
	CHECK(parse_uint("1", 1, 10, &v, err, sizeof(err)) == 0 && v == 1);
	CHECK(parse_uint("10", 1, 10, &v, err, sizeof(err)) == 0 && v == 10);
	CHECK(parse_uint("0", 0, 10, &v, err, sizeof(err)) == 0 && v == 0);
	CHECK(parse_uint("007", 0, 10, &v, err, sizeof(err)) == 0 && v == 7);
	CHECK(parse_uint("4294967295", 0, UINT_MAX, &v, err, sizeof(err)) == 0 && v == UINT_MAX);

	static const char *const bad[] = { "",	  "x",	 "11",	       " 5",
					   "5 ",  "+5",	 "-0",	       "-1",
					   "0x5", "1e3", "4294967296", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[96];

		v = 12345;
		err[0] = '\0';
		CHECK(parse_uint(bad[i], 0, 10, &v, err, sizeof(err)) == -EINVAL);
		CHECK(v == 12345); /* untouched */
		snprintf(want, sizeof(want), "expected a whole number from 0 to 10, got '%s'",
			 bad[i]);
		CHECK_STR(err, want);
	}
	/* Above max when max is UINT_MAX: only the range check stands between it and a wrap. */
	v = 12345;
	CHECK(parse_uint("4294967296", 0, UINT_MAX, &v, err, sizeof(err)) == -EINVAL && v == 12345);
	CHECK(parse_uint("0", 1, 10, &v, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "expected a whole number from 1 to 10, got '0'");
}

/*
 * inih reads at most 199 characters per call; the rest of a longer line comes back as a line of
 * its own. Either such lines are accepted, or they are refused on their own line number; the
 * lines after them must keep their numbers.
 */
static void test_long_comment_line(void)
{
	char text[512], path[PATH_MAX], err[512], want[PATH_MAX + 8];
	struct config c;
	int ret;

	snprintf(text, sizeof(text), "[web]\n; %0250d\nmax_connections = 5\n", 0);
	config_defaults(&c);
	ret = load_text(&c, text, path, sizeof(path), err, sizeof(err));
	snprintf(want, sizeof(want), "%s:2: ", path);
	if (ret) {
		fprintf(stderr, "  250-character comment: %s\n", err);
		CHECK(!strncmp(err, want, strlen(want)));
	} else {
		CHECK(c.web.max_connections == 5);
	}
}

static void test_line_numbers_after_long_line(void)
{
	char text[512], path[PATH_MAX], err[512], at2[PATH_MAX + 8], want[PATH_MAX + 64];
	struct config c;

	/* 199 characters: one more than a read takes; its newline comes back as another line. */
	snprintf(text, sizeof(text), "[web]\n; %0197d\nbogus = 1\n", 0);
	config_defaults(&c);
	CHECK(load_text(&c, text, path, sizeof(path), err, sizeof(err)) == -EINVAL);
	snprintf(at2, sizeof(at2), "%s:2: ", path);
	snprintf(want, sizeof(want), "%s:3: bogus: unknown key 'bogus' in [web]", path);
	if (strncmp(err, at2, strlen(at2))) /* not refused as too long: line 3 is the error */
		CHECK_STR(err, want);
}

static void test_sampling(void)
{
	struct config c;

	EXPECT_OK(&c, "");
	CHECK(c.sampling.rate[EV_DROP] == 0 && c.sampling.max_per_second[EV_RTT] == 100);
	CHECK(c.sampling.ring_bytes == 262144 && !c.sampling.to_stdout);
	EXPECT_OK(&c, "[sampling]\n"
		      "drop_sample_rate = 1\n"
		      "retrans_sample_rate = 10\n"
		      "rtt_sample_rate = 1000\n"
		      "drop_max_events_per_second = 0\n"
		      "drop_burst = 5\n"
		      "rtt_max_events_per_second = 7\n"
		      "min_rtt_us = 50000\n"
		      "ring_buffer_bytes = 1048576\n"
		      "max_events = 20\n"
		      "stdout = true\n"
		      "stdout_max_per_second = 3\n");
	CHECK(c.sampling.rate[EV_DROP] == 1 && c.sampling.rate[EV_RETRANS] == 10 &&
	      c.sampling.rate[EV_RTT] == 1000);
	CHECK(c.sampling.max_per_second[EV_DROP] == 0 && c.sampling.burst[EV_DROP] == 5 &&
	      c.sampling.max_per_second[EV_RTT] == 7 &&
	      c.sampling.max_per_second[EV_RETRANS] == 100);
	CHECK(c.sampling.min_rtt_us == 50000 && c.sampling.ring_bytes == 1048576);
	CHECK(c.sampling.max_events == 20 && c.sampling.to_stdout &&
	      c.sampling.stdout_per_second == 3);

	EXPECT_ERROR("[sampling]\ndrop_sample_rate = -1\n", 2,
		     "drop_sample_rate: expected a whole number from 0 to 1000000000, got '-1'");
	EXPECT_ERROR("[sampling]\n\nrtt_burst = lots\n", 3,
		     "rtt_burst: expected a whole number from 0 to 1000000, got 'lots'");
	EXPECT_ERROR("[sampling]\nring_buffer_bytes = 100000\n", 2,
		     "ring_buffer_bytes: expected a power of two from 4096, got '100000'");
	EXPECT_ERROR("[sampling]\nring_buffer_bytes = 1024\n", 2,
		     "ring_buffer_bytes: expected a whole number from 4096 to 1073741824, got "
		     "'1024'");
	EXPECT_ERROR("[sampling]\nmax_events = 0\n", 2,
		     "max_events: expected a whole number from 1 to 100000, got '0'");
	/* The stated maximum (EVENTS_MAX): the store then holds about 30 MiB. */
	EXPECT_ERROR("[sampling]\ndrop_sample_rate = 1\n\nmax_events = 100001\n", 4,
		     "max_events: expected a whole number from 1 to 100000, got '100001'");
	EXPECT_ERROR("[sampling]\nstdout = yes\n", 2, "stdout: expected true or false, got 'yes'");
	EXPECT_ERROR("[sampling]\ndrops_sample_rate = 1\n", 2,
		     "drops_sample_rate: unknown key 'drops_sample_rate' in [sampling]");
	EXPECT_ERROR("[sampling]\ndrop_rate = 1\n", 2,
		     "drop_rate: unknown key 'drop_rate' in [sampling]");
}

/* "[web" lacks its bracket: one line, one error, on line 1, without a newline inside. */
static void test_unclosed_section_header(void)
{
	char path[PATH_MAX], err[512], want[PATH_MAX + 8];
	struct config c;

	config_defaults(&c);
	CHECK(load_text(&c, "[web\nlisten_address = :1\n", path, sizeof(path), err, sizeof(err)) ==
	      -EINVAL);
	snprintf(want, sizeof(want), "%s:1: ", path);
	CHECK(!strncmp(err, want, strlen(want)));
	CHECK(!strchr(err, '\n'));
	if (strchr(err, '\n'))
		fprintf(stderr, "  message: \"%s\"\n", err);
}

/* inih skips a UTF-8 byte order mark; an unknown section behind one is still reported as such. */
static void test_bom_unknown_section(void)
{
	EXPECT_ERROR("\xef\xbb\xbf[bogus]\nx = 1\n", 1, "unknown section [bogus]");
}

/* [pods] and pod_labels: every key, its errors with their lines, and the netns requirement. */
static void test_pods(void)
{
	struct config c;
	struct pods *pods;

	EXPECT_OK(&c, "[pods]\nsource = kubernetes\napi_url = https://127.0.0.1:6443\n"
		      "token_file = /t\nca_file = /c\nnode_name = n1\nrefresh_seconds = 1\n"
		      "grace_seconds = 0\nmax_series = 3\ntimeout_seconds = 600\n"
		      "kubelet_url = http://127.0.0.1:10255/pods\n");
	CHECK(c.pods.max_series == 3);
	config_defaults(&c);
	CHECK(c.pods.max_series == 1000);
	EXPECT_OK(&c, "[collector.drops]\npod_labels = namespace,pod,container\n"
		      "labels = reason,family,protocol,netns\n");
	CHECK(pods_labels_of(&c.pods, "drops") ==
	      (POD_LABEL_NAMESPACE | POD_LABEL_POD | POD_LABEL_CONTAINER));
	CHECK(pods_labels_of(&c.pods, "rtt") == 0);
	EXPECT_OK(&c, "[collector.rtt]\nlabels = family,netns\npod_labels = process netns\n");
	CHECK(pods_labels_of(&c.pods, "rtt") == (POD_LABEL_PROCESS | POD_LABEL_NETNS));
	config_defaults(&c);
	CHECK(pods_labels_of(&c.pods, "rtt") == 0);
	/* Parsing fills a value: what runs changes only when it is handed over. */
	EXPECT_OK(&c, "[pods]\nmax_series = 7\n");
	pods = pods_new(&c.pods);
	EXPECT_OK(&c, "[pods]\nmax_series = 9\n");
	config_defaults(&c);
	CHECK(pods && pods_max_series(pods) == 7);
	pods_free(pods);
	EXPECT_OK(&c, "[collector.drops]\npod_labels =\n");
	EXPECT_ERROR("[collector.drops]\n\npod_labels = pod\n", 3,
		     "pod_labels: needs netns in the labels of [collector.drops] (the kernel keys "
		     "counts by network namespace)");
	EXPECT_ERROR("[collector.retrans]\nlabels = family,kind,state,netns\n"
		     "labels = family,kind,state\npod_labels = pod\n",
		     4,
		     "pod_labels: needs netns in the labels of [collector.retrans] (the kernel "
		     "keys counts by network namespace)");
	EXPECT_ERROR("[collector.drops]\npod_labels = pod,node\n", 2,
		     "pod_labels: unknown label 'node' (known: namespace, pod, container, process, "
		     "netns)");
	EXPECT_ERROR("[pods]\nsource = k8s\n", 2,
		     "source: expected auto, kubernetes, kubelet or none, got 'k8s'");
	EXPECT_ERROR("[pods]\napi_url = 127.0.0.1:6443\n", 2,
		     "api_url: expected an http:// or https:// URL, got '127.0.0.1:6443'");
	EXPECT_ERROR("[pods]\nkubelet_url = ftp://x\n", 2,
		     "kubelet_url: expected an http:// or https:// URL, got 'ftp://x'");
	EXPECT_ERROR("[pods]\nmax_series = 0\n", 2,
		     "max_series: expected a whole number from 1 to 1048576, got '0'");
	EXPECT_ERROR("[pods]\nrefresh_seconds = 0\n", 2,
		     "refresh_seconds: expected a whole number from 1 to 3600, got '0'");
	EXPECT_ERROR("[pods]\ngrace_seconds = -1\n", 2,
		     "grace_seconds: expected a whole number from 0 to 86400, got '-1'");
	EXPECT_ERROR("[pods]\ntimeout_seconds = 601\n", 2,
		     "timeout_seconds: expected a whole number from 1 to 600, got '601'");
	EXPECT_ERROR("[pods]\nnamespace = x\n", 2, "namespace: unknown key 'namespace' in [pods]");
}

#define HASH_A "$2b$05$qsv0BsHuRTb2h1fNU4YYIOXVuJOoL2gxqSOCjEvGldOu6M/NWR1bG"

static void test_web_tls_and_users(void)
{
	struct config c;

	EXPECT_OK(&c, "[web]\ntls_cert_file = /c.pem\ntls_key_file = /k.pem\n"
		      "tls_client_ca_file = /ca.pem\ntls_min_version = TLS13\n"
		      "basic_auth_user = alice:" HASH_A "\nbasic_auth_user = bob:" HASH_A "\n");
	CHECK_STR(c.web.tls_cert_file, "/c.pem");
	CHECK_STR(c.web.tls_key_file, "/k.pem");
	CHECK_STR(c.web.tls_client_ca_file, "/ca.pem");
	CHECK_STR(c.web.tls_min_version, "TLS13");
	CHECK(c.web.n_users == 2);
	CHECK_STR(c.web.users[0].name, "alice");
	CHECK_STR(c.web.users[1].name, "bob");
	CHECK_STR(c.web.users[1].hash, HASH_A);
	config_defaults(&c);
	CHECK_STR(c.web.tls_min_version, "TLS12");
	CHECK(c.web.n_users == 0 && !c.web.tls_cert_file[0]);

	EXPECT_ERROR("[web]\ntls_min_version = TLS14\n", 2,
		     "tls_min_version: expected TLS10, TLS11, TLS12 or TLS13, got 'TLS14'");
	EXPECT_ERROR("[web]\nbasic_auth_user = alice\n", 2,
		     "basic_auth_user: expected NAME:BCRYPT_HASH (name 1 to 63 characters)");
	EXPECT_ERROR("[web]\nbasic_auth_user = :" HASH_A "\n", 2,
		     "basic_auth_user: expected NAME:BCRYPT_HASH (name 1 to 63 characters)");
	EXPECT_ERROR("[web]\nbasic_auth_user = alice:$6$salt$abc\n", 2,
		     "basic_auth_user: user 'alice': expected a bcrypt hash ($2b$...)");
	EXPECT_ERROR("[web]\nbasic_auth_user = alice:$2b$05$short\n", 2,
		     "basic_auth_user: user 'alice': malformed bcrypt hash");
	EXPECT_ERROR("[web]\nbasic_auth_user = alice:" HASH_A "\n\nbasic_auth_user = alice:" HASH_A
		     "\n",
		     4, "basic_auth_user: user 'alice' given twice");
	/* Cost 12 is the highest accepted; 13 and 31 (hours per check) are refused by name. */
	EXPECT_OK(&c, "[web]\nbasic_auth_user = "
		      "alice:$2b$12$qsv0BsHuRTb2h1fNU4YYIOXVuJOoL2gxqSOCjEvGldOu6M/"
		      "NWR1bG\n");
	EXPECT_ERROR(
		"[web]\nmax_connections = 8\n\nbasic_auth_user = alice:"
		"$2b$13$qsv0BsHuRTb2h1fNU4YYIOXVuJOoL2gxqSOCjEvGldOu6M/NWR1bG\n",
		4,
		"basic_auth_user: user 'alice': bcrypt cost 13 is above the maximum of 12 (hash "
		"it again with a lower cost, e.g. mkpasswd -m bcrypt -R 10)");
	EXPECT_ERROR("[web]\nbasic_auth_user = bob:"
		     "$2y$31$qsv0BsHuRTb2h1fNU4YYIOXVuJOoL2gxqSOCjEvGldOu6M/NWR1bG\n",
		     2,
		     "basic_auth_user: user 'bob': bcrypt cost 31 is above the maximum of 12 (hash "
		     "it again with a lower cost, e.g. mkpasswd -m bcrypt -R 10)");
	EXPECT_ERROR("[bpf]\npin_path = sys/fs/bpf\n", 2,
		     "pin_path: expected an absolute path, got 'sys/fs/bpf'");
	EXPECT_ERROR("[bpf]\npin = /x\n", 2, "pin: unknown key 'pin' in [bpf]");
	/* A value too long for a line: the key and the limit named. */
	{
		char text[400];

		snprintf(text, sizeof(text), "[web]\ntls_cert_file = /%0220d\n", 0);
		EXPECT_ERROR(text, 2,
			     "tls_cert_file: line longer than 198 characters, the most a line may "
			     "hold (key, '=' and value)");
	}
	EXPECT_ERROR("[bpf]\npin_wait_seconds = 3601\n", 2,
		     "pin_wait_seconds: expected a whole number from 0 to 3600, got '3601'");
}

/* TLS keys that only make sense together are checked once the whole file is read. */
static void test_tls_keys_together(void)
{
	static const char *const bad[] = {
		"[web]\ntls_cert_file = /c.pem\n",
		"[web]\ntls_key_file = /k.pem\n",
		"[web]\ntls_client_ca_file = /ca.pem\n",
	};
	char path[PATH_MAX], err[512], want[PATH_MAX + 512];
	struct config c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_defaults(&c);
		CHECK(load_text(&c, bad[i], path, sizeof(path), err, sizeof(err)) == -EINVAL);
		snprintf(want, sizeof(want),
			 "%s: [web] tls_cert_file and tls_key_file go together, and "
			 "tls_client_ca_file needs them",
			 path);
		CHECK_STR(err, want);
	}
}

/*
 * A reload restarts a collector when its options differ: the values they parse to count, not
 * how the file spells them; enabled counts too.
 */
static void test_collector_options_compared(void)
{
	struct config a, b, d;

	config_defaults(&d);
	EXPECT_OK(&a, "[collector.drops]\nmax_series = 100\n");
	EXPECT_OK(&b, "[collector.drops]\nmax_series = 100\nenabled = true\n");
	CHECK(!collector_opts_equal(drops(&a), drops(&d)));
	CHECK(collector_opts_equal(drops(&a), drops(&b)));
	EXPECT_OK(&b, "[collector.drops]\nmax_series = 101\n");
	CHECK(!collector_opts_equal(drops(&a), drops(&b)));
	EXPECT_OK(&b, "[collector.drops]\nmax_series = 10\n[collector.drops]\nmax_series = 0100\n");
	CHECK(collector_opts_equal(drops(&a), drops(&b)));
	EXPECT_OK(&b, "[collector.drops]\nmax_series = 100\nenabled = false\n");
	CHECK(!collector_opts_equal(drops(&a), drops(&b)));
	EXPECT_OK(&a, "[collector.drops]\nlabels = reason,family,protocol,netns\n");
	EXPECT_OK(&b, "[collector.drops]\nlabels = netns protocol family reason\n");
	CHECK(collector_opts_equal(drops(&a), drops(&b)));
	/* A longer value set before leaves no bytes behind. */
	EXPECT_OK(&a, "[collector.rtt]\ncgroup = /sys/fs/cgroup/some/longer/path\ncgroup = /x\n");
	EXPECT_OK(&b, "[collector.rtt]\ncgroup = /x\n");
	CHECK(collector_opts_equal(&a.collectors[collector_index("rtt")],
				   &b.collectors[collector_index("rtt")]));
	EXPECT_OK(&b, "[web]\nmax_connections = 5\n");
	for (int i = 0; collectors[i]; i++)
		CHECK(collector_opts_equal(&b.collectors[i], &d.collectors[i]));
}

/*
 * [collector.rtt] native_schema: off or 0..3 (the kernel's cells are schema 3), a bad value named
 * with its file and line.
 */
static void test_rtt_native_schema(void)
{
	struct config a, b, d;

	config_defaults(&d);
	EXPECT_OK(&a, "[collector.rtt]\nnative_schema = 3\n");
	CHECK(collector_opts_equal(&a.collectors[collector_index("rtt")],
				   &d.collectors[collector_index("rtt")]));
	EXPECT_OK(&b, "[collector.rtt]\nnative_schema = off\n");
	CHECK(!collector_opts_equal(&a.collectors[collector_index("rtt")],
				    &b.collectors[collector_index("rtt")]));
	EXPECT_OK(&b, "[collector.rtt]\nnative_schema = 0\n");
	CHECK(!collector_opts_equal(&a.collectors[collector_index("rtt")],
				    &b.collectors[collector_index("rtt")]));
	EXPECT_OK(&b, "[collector.rtt]\nnative_schema = 2\n");
	EXPECT_ERROR("[collector.rtt]\n\nnative_schema = 4\n", 3,
		     "native_schema: expected off or a schema from 0 to 3 (the kernel counts at "
		     "schema 3), got '4'");
	EXPECT_ERROR("[collector.rtt]\nnative_schema = on\n", 2,
		     "native_schema: expected off or a schema from 0 to 3 (the kernel counts at "
		     "schema 3), got 'on'");
}

/* [collector.connections] native_schema: off or 0..3 (the kernel's cells resolve schema 3). */
static void test_connections_native_schema(void)
{
	struct config a, b, d;

	config_defaults(&d);
	EXPECT_OK(&a, "[collector.connections]\nnative_schema = 3\n");
	CHECK(collector_opts_equal(&a.collectors[collector_index("connections")],
				   &d.collectors[collector_index("connections")]));
	EXPECT_OK(&b, "[collector.connections]\nnative_schema = off\n");
	CHECK(!collector_opts_equal(&a.collectors[collector_index("connections")],
				    &b.collectors[collector_index("connections")]));
	EXPECT_OK(&b, "[collector.connections]\nnative_schema = 0\n");
	EXPECT_ERROR("[collector.connections]\nnative_schema = 4\n", 2,
		     "native_schema: expected off or a schema from 0 to 3 (the kernel counts at "
		     "schema 3), got '4'");
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	RUN(test_defaults);
	RUN(test_empty_and_comment_only_files);
	RUN(test_shipped_ini_is_defaults);
	RUN(test_every_key_applied);
	RUN(test_log_levels);
	RUN(test_number_limits_accepted);
	RUN(test_whitespace_comments_crlf);
	RUN(test_load_over_current_values);
	RUN(test_unknown_section);
	RUN(test_unknown_keys);
	RUN(test_bad_bool);
	RUN(test_seccomp_key);
	RUN(test_bad_numbers);
	RUN(test_bad_metrics_path);
	RUN(test_overlong_values);
	RUN(test_bad_log_level);
	RUN(test_labels);
	RUN(test_drops_set_hook);
	RUN(test_syntax_error);
	RUN(test_key_outside_section);
	RUN(test_first_error_wins);
	RUN(test_missing_file);
	RUN(test_defaults_reset_collector_state);
	RUN(test_parse_bool);
	RUN(test_parse_uint);
	RUN(test_long_comment_line);
	RUN(test_line_numbers_after_long_line);
	RUN(test_unclosed_section_header);
	RUN(test_bom_unknown_section);
	RUN(test_pods);
	RUN(test_web_tls_and_users);
	RUN(test_tls_keys_together);
	RUN(test_collector_options_compared);
	RUN(test_rtt_native_schema);
	RUN(test_connections_native_schema);
	RUN(test_sampling);

	for (int i = 1; i <= nfiles; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%d.ini", dir, i);
		unlink(path);
	}
	if (rmdir(dir))
		perror(dir);
	CHECK_EXIT();
}
