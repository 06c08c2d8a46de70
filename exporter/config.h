/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_CONFIG_H
#define NETSTACK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "events.h"
#include "log.h"

struct config {
	char listen_address[128]; /* [web] listen_address, "host:port", "[v6]:port" or ":port" */
	char metrics_path[64];	  /* [web] metrics_path */
	unsigned max_connections; /* [web] max_connections */
	unsigned timeout_seconds; /* [web] connection_timeout */
	unsigned max_per_ip;	  /* [web] max_connections_per_ip */
	unsigned max_request;	  /* [web] max_request_bytes: request line and headers */
	bool drop_caps;		  /* [security] drop_capabilities */
	char user[64];		  /* [security] user: switch to it after start-up */
	char node[128];		  /* [labels] node: a node="..." label on every series */
	enum log_level log_level; /* [log] level */
	struct sampling_config sampling; /* [sampling] */
};

/* Built-in defaults, also resets every collector's options and enabled flag. */
void config_defaults(struct config *c);
/* Parse an INI file over the current values. 0, or -1 with "file:line: message" in err. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);

#define LISTEN_ADDRESS_FORM "expected host:port, [ipv6]:port or :port"

/* "host:port", "[v6addr]:port" or ":port" (every address, IPv6 and IPv4); 0 or -1. */
int parse_listen_address(const char *addr, struct sockaddr_storage *ss, bool *any);

/* Shared value parsers; 0 or -1 with a message naming the expected form in err. */
int parse_bool(const char *s, bool *out, char *err, size_t errlen);
int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out, char *err, size_t errlen);

/* An optional label of a collector and its bit in the collector's label mask. */
struct label_option {
	const char *name;
	unsigned bit;
};

/*
 * A collector's `labels` list, names separated by commas or blanks: every name in required
 * (NULL-terminated) must appear, and each of the n_optional names that appears sets its bit
 * in *mask. 0, or -1 with err set and *mask untouched.
 */
int parse_label_list(const char *s, const char *const *required,
		     const struct label_option *optional, size_t n_optional, unsigned *mask,
		     char *err, size_t errlen);

#endif
