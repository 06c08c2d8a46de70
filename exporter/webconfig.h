/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The [web] section as a value (config.c parses it into struct config): all that the HTTP front
 * end is configured with, so http/ needs nothing else of the configuration.
 */
#ifndef NETSTACK_WEBCONFIG_H
#define NETSTACK_WEBCONFIG_H

#include <stdbool.h>
#include <sys/socket.h>

#define MAX_WEB_USERS 16
/*
 * Highest bcrypt cost accepted: every wrong password runs 2^cost rounds on the password check
 * thread, four times cost 10's (the usual choice; its time: docs/security.md).
 */
#define MAX_BCRYPT_COST 12

/* [web] basic_auth_user = NAME:BCRYPT_HASH */
struct web_user {
	char name[64];
	char hash[72]; /* bcrypt hashes are 60 characters */
};

struct web_config {
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
};

#endif
