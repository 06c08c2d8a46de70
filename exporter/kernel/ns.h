/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_NS_H
#define NETSTACK_NS_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* One network namespace and a path that opens it. */
struct netns_ref {
	ino_t ino;
	char path[NAME_MAX + 16]; /* /proc/PID/ns/net or /run/netns/NAME */
};

struct netns_list {
	struct netns_ref *v;
	size_t n, cap;
	dev_t nsfs; /* where namespace files live: anything else under /run/netns is skipped */
	ino_t self;
};

/*
 * Every network namespace with a process in it or a name under /run/netns, ours first; those
 * gone meanwhile or not ours to read are left out. 0 or -errno; l is freed with netns_list_free
 * either way.
 */
int netns_list_build(struct netns_list *l);
/* Whether the list holds the namespace with inode ino. */
bool netns_list_has(const struct netns_list *l, ino_t ino);
void netns_list_free(struct netns_list *l);

/* The first mount of the cgroup2 hierarchy's root ("/sys/fs/cgroup" on most systems): 0 or -errno. */
int cgroup2_root(char *path, size_t len);

#endif
