// SPDX-License-Identifier: GPL-2.0-only
#include <crypt.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collectors/collector.h"
#include "config.h"
#include "pods/podsconf.h"

#define COLLECTOR_PREFIX "collector."

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->web.listen_address, ":9437");
	strcpy(c->web.metrics_path, "/metrics");
	c->web.max_connections = 256;
	c->web.timeout_seconds = 10;
	c->web.max_per_ip = 16;
	c->web.max_request = 16384;
	strcpy(c->web.tls_min_version, "TLS12");
	c->drop_caps = true;
	c->seccomp = true;
	c->pin_wait_seconds = 30;
	c->log_level = LOG_INFO;
	pods_config_defaults(&c->pods);
	events_defaults(&c->sampling);
	for (int i = 0; collectors[i]; i++) {
		collector_defaults(collectors[i], &c->collectors[i]);
	}
}

static int set_string(char *dst, size_t size, const char *s, char *err, size_t errlen)
{
	if (strlen(s) >= size) {
		snprintf(err, errlen, "value longer than %zu characters", size - 1);
		return -EINVAL;
	}
	strcpy(dst, s);
	return 0;
}

/* NAME:HASH with a bcrypt hash (as Prometheus' exporter-toolkit: bcrypt only). */
static int add_user(struct config *c, const char *val, char *err, size_t errlen)
{
	const char *colon = strchr(val, ':');
	struct web_user *u = &c->web.users[c->web.n_users];
	size_t nl = colon ? (size_t)(colon - val) : 0;
	unsigned cost;

	if (!nl || nl >= sizeof(u->name)) {
		snprintf(err, errlen, "expected NAME:BCRYPT_HASH (name 1 to %zu characters)",
			 sizeof(u->name) - 1);
		return -EINVAL;
	}
	if (strncmp(colon + 1, "$2a$", 4) && strncmp(colon + 1, "$2b$", 4) &&
	    strncmp(colon + 1, "$2y$", 4)) {
		snprintf(err, errlen, "user '%.*s': expected a bcrypt hash ($2b$...)", (int)nl,
			 val);
		return -EINVAL;
	}
	/* $2b$NN$ and 53 characters of bcrypt's base64: salt and hash. */
	if (strlen(colon + 1) != 60 || colon[4] != '$' || colon[7] != '$' ||
	    strspn(colon + 8, "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") !=
		    53 ||
	    crypt_checksalt(colon + 1) != CRYPT_SALT_OK) {
		snprintf(err, errlen, "user '%.*s': malformed bcrypt hash", (int)nl, val);
		return -EINVAL;
	}
	/* Each check of a wrong password costs 2^cost rounds: beyond the cap, seconds each. */
	cost = (colon[5] - '0') * 10 + (colon[6] - '0');
	if (cost > MAX_BCRYPT_COST) {
		snprintf(err, errlen,
			 "user '%.*s': bcrypt cost %u is above the maximum of %d (hash it again "
			 "with a lower cost, e.g. mkpasswd -m bcrypt -R 10)",
			 (int)nl, val, cost, MAX_BCRYPT_COST);
		return -EINVAL;
	}
	for (unsigned i = 0; i < c->web.n_users; i++)
		if (strlen(c->web.users[i].name) == nl && !strncmp(c->web.users[i].name, val, nl)) {
			snprintf(err, errlen, "user '%.*s' given twice", (int)nl, val);
			return -EINVAL;
		}
	if (c->web.n_users == MAX_WEB_USERS) {
		snprintf(err, errlen, "more than %d users", MAX_WEB_USERS);
		return -EINVAL;
	}
	memcpy(u->name, val, nl);
	u->name[nl] = 0;
	strcpy(u->hash, colon + 1);
	c->web.n_users++;
	return 0;
}

static int set_web(struct config *c, const char *key, const char *val, char *err, size_t errlen)
{
	if (!strcmp(key, "listen_address")) {
		struct sockaddr_storage ss;
		bool any;

		if (parse_listen_address(val, &ss, &any)) {
			snprintf(err, errlen, LISTEN_ADDRESS_FORM ", got '%s'", val);
			return -EINVAL;
		}
		return set_string(c->web.listen_address, sizeof(c->web.listen_address), val, err,
				  errlen);
	}
	if (!strcmp(key, "metrics_path")) {
		if (val[0] != '/') {
			snprintf(err, errlen, "metrics_path must start with '/', got '%s'", val);
			return -EINVAL;
		}
		return set_string(c->web.metrics_path, sizeof(c->web.metrics_path), val, err,
				  errlen);
	}
	if (!strcmp(key, "max_connections"))
		return parse_uint(val, 1, 65536, &c->web.max_connections, err, errlen);
	if (!strcmp(key, "connection_timeout"))
		return parse_uint(val, 1, 3600, &c->web.timeout_seconds, err, errlen);
	if (!strcmp(key, "max_connections_per_ip"))
		return parse_uint(val, 1, 65536, &c->web.max_per_ip, err, errlen);
	if (!strcmp(key, "max_request_bytes"))
		return parse_uint(val, 4096, 1 << 20, &c->web.max_request, err, errlen);
	if (!strcmp(key, "tls_cert_file"))
		return set_string(c->web.tls_cert_file, sizeof(c->web.tls_cert_file), val, err,
				  errlen);
	if (!strcmp(key, "tls_key_file"))
		return set_string(c->web.tls_key_file, sizeof(c->web.tls_key_file), val, err,
				  errlen);
	if (!strcmp(key, "tls_client_ca_file"))
		return set_string(c->web.tls_client_ca_file, sizeof(c->web.tls_client_ca_file), val,
				  err, errlen);
	if (!strcmp(key, "tls_min_version")) {
		if (strcmp(val, "TLS10") && strcmp(val, "TLS11") && strcmp(val, "TLS12") &&
		    strcmp(val, "TLS13")) {
			snprintf(err, errlen, "expected TLS10, TLS11, TLS12 or TLS13, got '%s'",
				 val);
			return -EINVAL;
		}
		strcpy(c->web.tls_min_version, val);
		return 0;
	}
	if (!strcmp(key, "basic_auth_user"))
		return add_user(c, val, err, errlen);
	snprintf(err, errlen, "unknown key '%s' in [web]", key);
	return -EINVAL;
}

/* Parser state: inih reports lines through our reader so errors can name them. */
struct parse_state {
	struct config *cfg;
	FILE *f;
	int line;
	int err_line;
	char err[256];
};

static bool known_section(const char *s)
{
	if (!strcmp(s, "web") || !strcmp(s, "log") || !strcmp(s, "security") ||
	    !strcmp(s, "labels") || !strcmp(s, "pods") || !strcmp(s, "bpf") ||
	    !strcmp(s, "sampling"))
		return true;
	return !strncmp(s, COLLECTOR_PREFIX, strlen(COLLECTOR_PREFIX)) &&
	       collector_find(s + strlen(COLLECTOR_PREFIX));
}

static void __attribute__((format(printf, 2, 3))) fail(struct parse_state *st, const char *fmt, ...)
{
	va_list ap;

	if (st->err_line)
		return;
	st->err_line = st->line;
	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
}

static char *reader(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	const char *p = str;
	char name[128];
	size_t len;
	int end = 0, c;

	if (!fgets(str, num, st->f))
		return NULL;
	st->line++;
	len = strlen(str);
	if (len && str[len - 1] != '\n' && !feof(st->f)) {
		/* inih would see the rest as a line of its own: refuse it here, once. */
		while ((c = fgetc(st->f)) != EOF && c != '\n')
			;
		/* A long comment is harmless; a long value would be cut. */
		p += strspn(p, " \t");
		len = strcspn(p, "= \t");
		if (*p != ';' && *p != '#' && p[len + strspn(p + len, " \t")] == '=' && len < 64)
			fail(st,
			     "%.*s: line longer than %d characters, the most a line may hold "
			     "(key, '=' and value)",
			     (int)len, p, num - 2);
		else if (*p != ';' && *p != '#')
			fail(st, "line longer than %d characters", num - 2);
		str[0] = 0;
		return str;
	}
	if (st->line == 1 && !strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	/* Check sections as they appear: inih calls the handler only for keys. */
	if (sscanf(p, " [%127[^]\n]]%n", name, &end) == 1 && end && !known_section(name))
		fail(st, "unknown section [%s]", name);
	return str;
}

static int handler(void *user, const char *section, const char *key, const char *val)
{
	struct parse_state *st = user;
	struct config *c = st->cfg;
	char msg[200] = "";
	int ret = -1;

	if (!strcmp(section, "web")) {
		ret = set_web(c, key, val, msg, sizeof(msg));
	} else if (!strcmp(section, "security")) {
		if (!strcmp(key, "drop_capabilities"))
			ret = parse_bool(val, &c->drop_caps, msg, sizeof(msg));
		else if (!strcmp(key, "user"))
			ret = set_string(c->user, sizeof(c->user), val, msg, sizeof(msg));
		else if (!strcmp(key, "seccomp"))
			ret = parse_bool(val, &c->seccomp, msg, sizeof(msg));
		else
			snprintf(msg, sizeof(msg), "unknown key '%s' in [security]", key);
	} else if (!strcmp(section, "labels")) {
		if (!strcmp(key, "node"))
			ret = set_string(c->node, sizeof(c->node), val, msg, sizeof(msg));
		else
			snprintf(msg, sizeof(msg), "unknown key '%s' in [labels]", key);
	} else if (!strcmp(section, "pods")) {
		ret = pods_config_set(&c->pods, key, val, msg, sizeof(msg));
	} else if (!strcmp(section, "bpf")) {
		if (!strcmp(key, "pin_wait_seconds"))
			ret = parse_uint(val, 0, 3600, &c->pin_wait_seconds, msg, sizeof(msg));
		else if (strcmp(key, "pin_path"))
			snprintf(msg, sizeof(msg), "unknown key '%s' in [bpf]", key);
		else if (val[0] && val[0] != '/')
			snprintf(msg, sizeof(msg), "expected an absolute path, got '%s'", val);
		else
			ret = set_string(c->pin_path, sizeof(c->pin_path), val, msg, sizeof(msg));
	} else if (!strcmp(section, "sampling")) {
		ret = events_set(&c->sampling, key, val, msg, sizeof(msg));
	} else if (!strcmp(section, "log")) {
		if (strcmp(key, "level"))
			snprintf(msg, sizeof(msg), "unknown key '%s' in [log]", key);
		else if (log_level_parse(val, &c->log_level))
			snprintf(msg, sizeof(msg), "expected error, warn, info or debug, got '%s'",
				 val);
		else
			ret = 0;
	} else if (!strncmp(section, COLLECTOR_PREFIX, strlen(COLLECTOR_PREFIX))) {
		int i = collector_index(section + strlen(COLLECTOR_PREFIX));
		const struct collector_ops *col = i < 0 ? NULL : collectors[i];

		if (!col)
			return 1; /* already reported by the reader */
		if (!strcmp(key, "enabled"))
			ret = parse_bool(val, &c->collectors[i].enabled, msg, sizeof(msg));
		else if (!strcmp(key, "pod_labels"))
			ret = pods_collector_labels(&c->pods, col->name, val, st->line, msg,
						    sizeof(msg));
		else
			ret = collector_set(col, c->collectors[i].v, key, val, msg, sizeof(msg));
		/* pod_labels works from the netns label: remember whether it is there. */
		if (!ret && !strcmp(key, "labels"))
			pods_collector_netns(&c->pods, col->name, val);
	} else if (!section[0]) {
		snprintf(msg, sizeof(msg), "key '%s' outside any section", key);
	} else {
		return 1; /* unknown section, already reported by the reader */
	}
	if (ret) {
		/* Name the key; values like "expected ..." make sense only next to it. */
		char full[256];

		snprintf(full, sizeof(full), "%s: %s", key, msg);
		fail(st, "%s", full);
	}
	return 1;
}

char *config_read(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat sb;
	char *text = NULL;
	int e = 0;

	if (!f) {
		e = errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	if (!fstat(fileno(f), &sb) && S_ISDIR(sb.st_mode)) {
		e = EISDIR;
		snprintf(err, errlen, "%s: is a directory", path);
	} else if (!(text = malloc(CONFIG_MAX_BYTES + 1))) {
		e = ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
	} else if ((*len = fread(text, 1, CONFIG_MAX_BYTES + 1, f)) > CONFIG_MAX_BYTES ||
		   ferror(f)) {
		e = ferror(f) ? EIO : EFBIG;
		snprintf(err, errlen, "%s: %s", path,
			 e == EIO ? "read error" : "larger than 1 MiB");
		free(text);
		text = NULL;
	} else {
		text[*len] = 0; /* the pages past the text are never touched: no RSS */
	}
	fclose(f);
	errno = e;
	return text;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	size_t len;
	char *text = config_read(path, &len, err, errlen);
	int ret = text ? config_load_text(c, path, text, len, err, errlen) : -errno;

	free(text);
	return ret;
}

int config_load_text(struct config *c, const char *path, const char *text, size_t len, char *err,
		     size_t errlen)
{
	struct parse_state st = { .cfg = c };
	int ret;

	if (!len)
		return 0;
	st.f = fmemopen((void *)text, len, "r");
	if (!st.f) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	ret = ini_parse_stream(reader, &st, handler, &st);
	fclose(st.f);
	if (ret > 0 && (!st.err_line || ret < st.err_line)) {
		snprintf(err, errlen, "%s:%d: syntax error: expected '[section]' or 'key = value'",
			 path, ret);
		return -EINVAL;
	}
	if (st.err_line) {
		snprintf(err, errlen, "%s:%d: %s", path, st.err_line, st.err);
		return -EINVAL;
	}
	if (ret) {
		snprintf(err, errlen, "%s: cannot parse (error %d)", path, ret);
		return -EINVAL;
	}
	if (!c->web.tls_cert_file[0] != !c->web.tls_key_file[0] ||
	    (c->web.tls_client_ca_file[0] && !c->web.tls_cert_file[0])) {
		snprintf(err, errlen,
			 "%s: [web] tls_cert_file and tls_key_file go together, and "
			 "tls_client_ca_file needs them",
			 path);
		return -EINVAL;
	}
	return pods_config_check(&c->pods, path, err, errlen);
}
