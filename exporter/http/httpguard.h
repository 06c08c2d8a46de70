/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_HTTPGUARD_H
#define NETSTACK_HTTPGUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#include "scrape.h"

/*
 * What keeps one HTTP daemon usable while others abuse it: a fair share of connections per
 * client address (when the daemon is full, a new connection closes one of the address that
 * holds the most), and basic-auth checks (bcrypt) on a worker thread instead of the HTTP
 * thread, with failures rate-limited per address. One guard per daemon; everything but the
 * worker runs on that daemon's thread, in its callbacks.
 */
struct guard;
/*
 * What every guard shares: the one password check worker (bcrypt never takes more than one
 * core) and the counts of what they refused, across daemons and reloads. Free it after every
 * guard made with it.
 */
struct guard_pool;
/* NULL with errno set (out of memory). */
struct guard_pool *guard_pool_new(void);
void guard_pool_free(struct guard_pool *p);

/* Equal strings, in a time that depends on their lengths only. */
bool same_string(const char *a, const char *b);

/* Failed checks one address may make at once, then one every GUARD_AUTH_REFILL seconds. */
#define GUARD_AUTH_BURST 5
#define GUARD_AUTH_REFILL 2
/*
 * Checks waiting for the worker per daemon from addresses with recent failures; more get 503.
 * As many again are kept for addresses without: guessers cannot fill the queue for a login.
 */
#define GUARD_AUTH_QUEUE 16

/*
 * A guard for a daemon that serves max_conns connections (MHD gets max_conns + headroom); NULL
 * with errno set (out of memory).
 */
struct guard *guard_new(struct guard_pool *pool, unsigned max_conns);
/* MHD's connection limit for it: room to accept while evicted connections are closing. */
unsigned guard_mhd_limit(unsigned max_conns);
/*
 * Before MHD_stop_daemon: no new checks start, those queued finish (failed) and their
 * connections are resumed, as libmicrohttpd requires.
 */
void guard_quiesce(struct guard *g);
/* After MHD_stop_daemon (every connection closed). */
void guard_free(struct guard *g);

/* What the guards refused since start (every daemon, reloads included), for the scrape. */
void guard_stats(struct guard_pool *p, struct guard_stats *s);

/* From MHD_OPTION_NOTIFY_CONNECTION. */
void guard_connection(struct guard *g, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode code);
/* A request begins (its headers are in) and ends (MHD_OPTION_NOTIFY_COMPLETED). */
void guard_request_begin(struct MHD_Connection *conn);
void guard_request_end(struct MHD_Connection *conn);

/* Outcome of a password check. */
enum guard_auth {
	GUARD_AUTH_PENDING, /* the connection is suspended until the worker is done */
	GUARD_AUTH_OK,
	GUARD_AUTH_FAIL,    /* 401 */
	GUARD_AUTH_LIMITED, /* 429, Retry-After: *retry_after */
	GUARD_AUTH_BUSY,    /* 503, Retry-After: *retry_after */
};

/*
 * Check pass against hash (user known) off the HTTP thread. The first call queues the check,
 * suspends conn and returns PENDING (*job set); the handler is called again once it is done,
 * and the call with the same *job returns its outcome and frees it. Unless the address is over
 * its failure budget or the queue is full: LIMITED or BUSY at once, nothing queued.
 */
struct guard_job;
enum guard_auth guard_auth(struct guard *g, struct MHD_Connection *conn, struct guard_job **job,
			   const char *pass, const char *hash, bool user_known,
			   unsigned *retry_after);
/* For MHD_OPTION_NOTIFY_COMPLETED: a job whose request ended before it was collected. */
void guard_job_drop(struct guard_job *job);

#endif
