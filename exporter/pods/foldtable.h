/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pod fold's tables (podfold.c): uthash tables keyed by label set. The key is an entry's
 * struct labels, hashed and compared whole (foldlabels.c), never joined into text. Out of
 * memory, an add fails rather than exiting.
 */
#ifndef NETSTACK_FOLDTABLE_H
#define NETSTACK_FOLDTABLE_H

#include <errno.h>

#include "pods/foldlabels.h"

#define HASH_FUNCTION(key, len, hashv) ((hashv) = (unsigned)labels_hash(key))
#define HASH_KEYCMP(a, b, len) labels_cmp(a, b)
#define HASH_NONFATAL_OOM 1 /* a failed add leaves the entry out, its hh.tbl NULL */
#include <uthash.h>

/* An entry of a table; the fold's entries start with one. */
struct node {
	UT_hash_handle hh;
	struct lset key;
};

/* Each entry n of a table, in insertion order; the loop may delete n (tmp is its next). */
#define table_for_each(head, n, tmp)                                                               \
	for ((n) = (head); (n) && ((tmp) = (n)->hh.next, 1); (n) = (tmp))

/* The entry of key, or NULL. */
static inline void *table_find(struct node *head, const struct labels *key)
{
	struct node *n;

	HASH_FIND(hh, head, key, sizeof(*key), n);
	return n;
}

/* Add nd, keyed by its key (never changed while it is in the table); 0 or -ENOMEM. */
static inline int table_add(struct node **head, struct node *nd)
{
	HASH_ADD_KEYPTR(hh, *head, &nd->key.l, sizeof(nd->key.l), nd);
	return nd->hh.tbl ? 0 : -ENOMEM;
}

/*
 * Delete nd from its table. nd is the head exactly when it has no predecessor: uthash keeps that,
 * and saying so spares the static analyser a path where a freed entry is still the head.
 */
static inline void table_del(struct node **head, struct node *nd)
{
	if ((*head == nd) != !nd->hh.prev)
		__builtin_unreachable();
	HASH_DELETE(hh, *head, nd);
}

/* Empty a table, freeing its entries with fn. */
static inline void table_free(struct node **head, void (*fn)(void *))
{
	struct node *n, *tmp;

	table_for_each(*head, n, tmp) {
		table_del(head, n);
		fn(n);
	}
}

#endif
