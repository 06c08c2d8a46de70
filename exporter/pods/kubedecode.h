/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the Kubernetes API client reads, decoded: pods, watch lines, watch events, PodLists as
 * they stream in, and the reflector's back-off. Pure (no I/O, no lock) and bounded in memory
 * (one object at a time): the fuzzers and unit tests link kubedecode.c alone.
 */
#ifndef NETSTACK_KUBEDECODE_H
#define NETSTACK_KUBEDECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "pods/kubepods.h"

#define MAX_CONTAINERS 16
#define KUBE_RV_MAX 128		      /* resourceVersion; longer ones are refused */
#define KUBE_CONTINUE_MAX 4096	      /* continue token of a list page */
#define KUBE_OBJECT_MAX (4u << 20)    /* one watch event or list item (etcd's limit is 1.5 MiB) */
#define KUBE_SKELETON_MAX (64u << 10) /* a PodList without its items */

/* What the resolver keeps of a pod. */
struct pod {
	char uid[POD_UID_LEN + 1];
	char ns[64], name[254];
	double deleted; /* monotonic seconds, 0: alive */
	unsigned gen;	/* the list (or the watch after it) that last reported the pod */
	int nc;
	struct {
		char id[CONTAINER_ID_MAX + 1];
		char name[64];
	} c[MAX_CONTAINERS];
};

struct json_object;
/*
 * A Pod object into p; 0, -EBADMSG when it lacks uid, name or namespace, or -ENOENT when (node
 * non-empty) it is scheduled on another node.
 */
int kube_pod_decode(struct json_object *o, const char *node, struct pod *p);

/* Splits a byte stream into lines, whatever the chunks; linear in the bytes fed. */
struct kube_lines {
	char *buf; /* the unfinished line */
	size_t len, cap;
};
/*
 * Calls fn for each complete line of data (without its '\n'; empty lines skipped; the bytes
 * may include NUL); fn returns 0 to go on, > 0 to stop. 0; -EMSGSIZE when a line grows past
 * KUBE_OBJECT_MAX, -ENOMEM; or what fn returned when not 0 (the rest of data is not looked at).
 */
int kube_lines_feed(struct kube_lines *l, const char *data, size_t n,
		    int (*fn)(void *arg, const char *line, size_t len), void *arg);
void kube_lines_reset(struct kube_lines *l); /* drops the unfinished line (and a big buffer) */

enum kube_event_type { KE_ADDED, KE_MODIFIED, KE_DELETED, KE_BOOKMARK, KE_ERROR };
struct kube_event {
	enum kube_event_type type;
	int code;	      /* ERROR: the Status object's code */
	char rv[KUBE_RV_MAX]; /* the object's resourceVersion; "" when it has none */
	bool has_pod;	      /* ADDED, MODIFIED, DELETED of a pod (of node) */
	struct pod pod;
};
/* One watch line ({"type":...,"object":{...}}); 0, or -EBADMSG when it is no event. */
int kube_event_decode(const char *line, size_t len, const char *node, struct kube_event *ev);

/*
 * A PodList decoded as it streams in: each element of "items" is parsed alone and handed to
 * fn, the rest of the object (metadata: resourceVersion, continue) is kept and parsed at the
 * end. Memory: one item plus the skeleton, whatever the list's length.
 */
struct kube_list {
	void (*fn)(void *arg, const struct pod *p);
	void *arg;
	const char *node;
	char *skel, *item;
	size_t skel_len, skel_cap, item_len, item_cap;
	int depth;
	bool started, in_str, esc, in_items, in_item, want_key, in_key, key_items, bad;
	int err; /* with bad: -EMSGSIZE or -ENOMEM from a buffer; 0: the bytes themselves */
	char key[8];
	size_t key_len;
	size_t pods; /* handed to fn */
	char rv[KUBE_RV_MAX], cont[KUBE_CONTINUE_MAX];
};
void kube_list_init(struct kube_list *d, const char *node,
		    void (*fn)(void *arg, const struct pod *p), void *arg);
/*
 * 0; once the bytes cannot be a PodList within the limits (then nothing more is read):
 * -EBADMSG, or -EMSGSIZE (a part over its limit), -ENOMEM.
 */
int kube_list_feed(struct kube_list *d, const char *data, size_t n);
/* After the last byte: 0 when the whole was a PodList (rv and cont set), else -EBADMSG. */
int kube_list_finish(struct kube_list *d);
void kube_list_free(struct kube_list *d);

/* client-go's reflector back-off: 0.8 s doubling to 30 s, each delay times 1 + U[0,1). */
#define KUBE_BACKOFF_INIT 0.8
#define KUBE_BACKOFF_CAP 30.0
#define KUBE_BACKOFF_RESET 120.0 /* no back-off for this long: start again from INIT */
struct kube_backoff {
	double delay; /* the next delay before jitter; 0: INIT */
	double last;  /* when the last delay was handed out */
};
/* The next delay in seconds, at time now, with u in [0, 1) for the jitter. */
double kube_backoff_next(struct kube_backoff *b, double now, double u);

#endif
