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
#include "webconfig.h"
#include "pods/podsconf.h"

#define CONFIG_MAX_BYTES (1 << 20)

struct config {
	struct web_config web;	   /* [web] */
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

#endif
