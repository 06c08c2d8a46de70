/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_CONFIG_H
#define NETSTACK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "collectors/collector.h"
#include "sampling/events.h"
#include "base/log.h"
#include "base/parse.h"
#include "pods/pods.h"

#define MAX_WEB_USERS 16
/*
 * Highest bcrypt cost accepted: every wrong password runs 2^cost rounds on the password check
 * thread, four times cost 10's (the usual choice; its time: docs/security.md).
 */
#define MAX_BCRYPT_COST 12
#define CONFIG_MAX_BYTES (1 << 20)

/* [web] basic_auth_user = NAME:BCRYPT_HASH */
struct web_user {
	char name[64];
	char hash[72]; /* bcrypt hashes are 60 characters */
};

struct config {
	char listen_address[128]; /* [web] listen_address, "host:port", "[v6]:port" or ":port" */
	char metrics_path[64];	  /* [web] metrics_path */
	unsigned max_connections; /* [web] max_connections */
	unsigned timeout_seconds; /* [web] connection_timeout */
	unsigned max_per_ip;	  /* [web] max_connections_per_ip */
	unsigned max_request;	  /* [web] max_request_bytes: request line and headers */
	char tls_cert_file[256];  /* [web] tls_cert_file: PEM; TLS when set (with the key) */
	char tls_key_file[256];	  /* [web] tls_key_file: PEM */
	char tls_client_ca_file[256];	      /* [web] tls_client_ca_file: PEM; mTLS when set */
	char tls_min_version[8];	      /* [web] tls_min_version: TLS10 .. TLS13 */
	struct web_user users[MAX_WEB_USERS]; /* [web] basic_auth_user, repeated */
	unsigned n_users;
	bool drop_caps;		   /* [security] drop_capabilities */
	char user[64];		   /* [security] user: switch to it after start-up */
	bool seccomp;		   /* [security] seccomp: the exporter's own filter */
	char node[128];		   /* [labels] node: a node="..." label on every series */
	char pin_path[200];	   /* [bpf] pin_path: pin maps and links there; empty: don't */
	unsigned pin_wait_seconds; /* [bpf] pin_wait_seconds: for another exporter's pin_path */
	enum log_level log_level;  /* [log] level */
	struct collector_opts collectors[MAX_COLLECTORS]; /* [collector.NAME], registry order */
	struct sampling_config sampling;		  /* [sampling] */
	struct pods_config pods; /* [pods] and the collectors' pod_labels */
};

/* Built-in defaults, every collector's options and enabled flag included. */
void config_defaults(struct config *c);
/* Parse an INI file over the current values. 0, or -errno with "file:line: message" in err. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);
/* The file's text (at most CONFIG_MAX_BYTES, malloc'd, NUL-terminated), or NULL with err and errno set. */
char *config_read(const char *path, size_t *len, char *err, size_t errlen);
/* config_load on text read earlier; path only names it in errors. */
int config_load_text(struct config *c, const char *path, const char *text, size_t len, char *err,
		     size_t errlen);

#define LISTEN_ADDRESS_FORM "expected host:port, [ipv6]:port or :port"

/* "host:port", "[v6addr]:port" or ":port" (every address, IPv6 and IPv4); 0 or -EINVAL. */
int parse_listen_address(const char *addr, struct sockaddr_storage *ss, bool *any);

#endif
