// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection fairness and password checks off the HTTP thread (see httpguard.h).
 *
 * libmicrohttpd's own limits alone lock the scraper out: past MHD_OPTION_CONNECTION_LIMIT it
 * stops accepting, and a hundred addresses under the per-address limit fill the daemon with
 * idle or trickling connections while the scraper's connection waits in the accept queue.
 * So the daemon's limit is set a little above max_connections, every connection is accepted,
 * and once more than max_connections are open one is closed (shutdown(2): libmicrohttpd sees
 * the end of the stream and cleans it up): one of the address holding the most, idle before
 * busy, the longest idle first. An address then loses a connection only while none holds
 * more, and a scraper's single connection stays until more addresses than max_connections
 * take part.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "http/httpguard.h"
#include "base/log.h"

/* Slots probed for an address: the table has 4x the room ever needed at once. */
#define PEER_PROBES 16

struct gpeer {
	unsigned char key[17]; /* key[0]: 0 unused, 4 (IPv4 /32) or 6 (IPv6 /64) */
	unsigned conns;	       /* open connections, evicted ones not counted */
	unsigned pending;      /* password checks queued or not yet collected */
	double tokens, stamp;  /* failure budget, and when it was last brought up to date */
};

struct gconn {
	struct gconn *prev, *next; /* in the guard's list while counted */
	struct gpeer *peer;
	struct guard *g;
	int fd;
	bool busy;   /* inside a request */
	bool parked; /* suspended for a password check */
	bool listed;
	double since; /* accepted, or its last request ended */
};

/*
 * One worker for every daemon (bcrypt never takes more than one core) and the counts of what
 * the guards refused, across daemons and reloads.
 */
struct guard_pool {
	pthread_mutex_t jobs_lock;
	pthread_cond_t jobs_cv, done_cv;
	/*
	 * Checks for addresses without recent failures queue ahead of the others (first come
	 * first within each): a guesser's next try never delays someone's first login.
	 * *clean_tail is where the next such check goes.
	 */
	struct guard_job *jobs_head, **jobs_tail, **clean_tail;
	bool worker_started, quit;
	pthread_t worker;
	struct guard_stats stats;	/* atomics: HTTP threads add, the scrape reads */
	struct crypt_data worker_crypt; /* 32 KiB: not on a thread's stack */
};

struct guard {
	struct guard_pool *pool;
	unsigned max, live;  /* connections allowed and counted */
	unsigned open, peak; /* connections not closed yet (evicted included), most since trim */
	unsigned n_peers;    /* a power of two */
	uint64_t seed;
	struct gconn *head, *tail;
	/* Under the pool's jobs_lock: */
	unsigned outstanding; /* jobs queued or running, their connection not resumed yet */
	bool stopping;
	struct gpeer peers[];
};

struct guard_job {
	struct guard_job *next;
	struct guard *g;
	struct gconn *c;
	struct MHD_Connection *conn;
	char *pass;
	char hash[72];
	bool user_known, ok;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

unsigned guard_mhd_limit(unsigned max_conns)
{
	/* libmicrohttpd accepts up to 10 a round, then closes the ones shut down. */
	return max_conns + 32;
}

struct guard_pool *guard_pool_new(void)
{
	struct guard_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->jobs_lock, NULL);
	pthread_cond_init(&p->jobs_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	p->jobs_tail = p->clean_tail = &p->jobs_head;
	return p;
}

struct guard *guard_new(struct guard_pool *pool, unsigned max_conns)
{
	unsigned n = 64;
	struct guard *g;

	while (n < 4 * guard_mhd_limit(max_conns))
		n *= 2;
	g = calloc(1, sizeof(*g) + n * sizeof(g->peers[0]));
	if (!g)
		return NULL;
	g->pool = pool;
	g->max = max_conns;
	g->n_peers = n;
	if (getrandom(&g->seed, sizeof(g->seed), 0) != sizeof(g->seed))
		g->seed = (uint64_t)now() * 0x9e3779b97f4a7c15ull;
	return g;
}

/* An address's key: IPv4 (also IPv4-mapped IPv6) whole, IPv6 by its /64 (one host's share). */
static bool peer_key(const struct sockaddr *sa, unsigned char key[17])
{
	memset(key, 0, 17);
	if (sa && sa->sa_family == AF_INET) {
		key[0] = 4;
		memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = 4;
			memcpy(key + 1, a->s6_addr + 12, 4);
		} else {
			key[0] = 6;
			memcpy(key + 1, a->s6_addr, 8);
		}
		return true;
	}
	return false;
}

/* Keyed with a random seed, so clients cannot pick addresses that crowd one probe window. */
static uint64_t peer_hash(const struct guard *g, const unsigned char key[17])
{
	uint64_t h = g->seed;

	for (int i = 0; i < 17; i++) {
		h ^= key[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The address's entry, taking a free or the stalest unused one; NULL when all are in use. */
static struct gpeer *peer_get(struct guard *g, const unsigned char key[17], double t)
{
	uint64_t h = peer_hash(g, key);
	struct gpeer *spare = NULL;

	for (unsigned i = 0; i < PEER_PROBES; i++) {
		struct gpeer *p = &g->peers[(h + i) & (g->n_peers - 1)];

		if (!memcmp(p->key, key, 17))
			return p;
		if (!p->conns && !p->pending && (!spare || p->stamp < spare->stamp))
			spare = p;
	}
	if (spare) {
		memcpy(spare->key, key, 17);
		spare->tokens = GUARD_AUTH_BURST;
		spare->stamp = t;
	}
	return spare;
}

/* Bring the failure budget up to date. */
static void refill(struct gpeer *p, double t)
{
	p->tokens += (t - p->stamp) / GUARD_AUTH_REFILL;
	if (p->tokens > GUARD_AUTH_BURST)
		p->tokens = GUARD_AUTH_BURST;
	p->stamp = t;
}

static void unlist(struct guard *g, struct gconn *c)
{
	if (!c->listed)
		return;
	*(c->prev ? &c->prev->next : &g->head) = c->next;
	*(c->next ? &c->next->prev : &g->tail) = c->prev;
	c->prev = c->next = NULL;
	c->listed = false;
	g->live--;
	c->peer->conns--;
}

static enum guard_auth refused(uint64_t *counter, enum guard_auth why)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
	return why;
}

void guard_stats(struct guard_pool *p, struct guard_stats *s)
{
	s->evicted = __atomic_load_n(&p->stats.evicted, __ATOMIC_RELAXED);
	s->limited = __atomic_load_n(&p->stats.limited, __ATOMIC_RELAXED);
	s->busy = __atomic_load_n(&p->stats.busy, __ATOMIC_RELAXED);
}

/* Ranks eviction candidates: more connections from its address, idle, idle for longer. */
static bool worse(const struct gconn *a, const struct gconn *b)
{
	if (!b)
		return true;
	if (a->peer->conns != b->peer->conns)
		return a->peer->conns > b->peer->conns;
	if (a->busy != b->busy)
		return !a->busy;
	return a->since < b->since;
}

/* Close one connection to make room (the new one itself when nothing else can go). */
static void evict(struct guard *g)
{
	struct gconn *victim = NULL;

	for (struct gconn *c = g->head; c; c = c->next)
		if (!c->parked && worse(c, victim))
			victim = c;
	if (!victim)
		return;
	log_debug("http: %u connections open, closing one of an address that holds %u", g->live,
		  victim->peer->conns);
	if (!__atomic_fetch_add(&g->pool->stats.evicted, 1, __ATOMIC_RELAXED))
		log_warn("http: over max_connections; closing connections of the addresses that "
			 "hold the most (netstack_http_connections_evicted_total counts them)");
	shutdown(victim->fd, SHUT_RDWR);
	unlist(g, victim);
}

void guard_connection(struct guard *g, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode code)
{
	struct gconn *c = *socket_context;
	const union MHD_ConnectionInfo *fd, *addr;
	unsigned char key[17];
	double t = now();

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c) {
			g = c->g;
			unlist(g, c);
			free(c);
			*socket_context = NULL;
			/*
			 * A flood is over (a scraper's keep-alive may stay): give the heap their pools
			 * took back to the system (glibc keeps a thread's arena), once per flood.
			 */
			if (--g->open <= g->peak / 16 && g->peak >= 64) {
				malloc_trim(0);
				g->peak = g->open;
			}
		}
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	c = calloc(1, sizeof(*c));
	if (!c || !fd) {
		/* Not counted: the daemon's own limit still bounds these. */
		free(c);
		return;
	}
	c->g = g;
	if (++g->open > g->peak)
		g->peak = g->open;
	c->fd = fd->connect_fd;
	c->since = t;
	*socket_context = c;
	if (!peer_key(addr ? addr->client_addr : NULL, key) || !(c->peer = peer_get(g, key, t))) {
		shutdown(c->fd,
			 SHUT_RDWR); /* no room to account for it: a full table is overload */
		return;
	}
	c->peer->conns++;
	refill(c->peer, t);
	c->prev = g->tail;
	*(g->tail ? &g->tail->next : &g->head) = c;
	g->tail = c;
	c->listed = true;
	if (++g->live > g->max)
		evict(g);
}

static struct gconn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void guard_request_begin(struct MHD_Connection *conn)
{
	struct gconn *c = conn_of(conn);

	if (c)
		c->busy = true;
}

void guard_request_end(struct MHD_Connection *conn)
{
	struct gconn *c = conn_of(conn);

	if (c) {
		c->busy = false;
		c->since = now();
	}
}

/* ---- password checks ---- */

bool same_string(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return !diff;
}

static void *worker(void *arg)
{
	struct guard_pool *p = arg;

	pthread_mutex_lock(&p->jobs_lock);
	for (;;) {
		struct guard_job *j;
		struct MHD_Connection *conn;
		struct guard *g;

		while (!p->jobs_head && !p->quit)
			pthread_cond_wait(&p->jobs_cv, &p->jobs_lock);
		if (!p->jobs_head)
			break;
		j = p->jobs_head;
		p->jobs_head = j->next;
		if (p->jobs_tail == &j->next)
			p->jobs_tail = &p->jobs_head;
		if (p->clean_tail == &j->next)
			p->clean_tail = &p->jobs_head;
		g = j->g;
		conn = j->conn;
		pthread_mutex_unlock(&p->jobs_lock);
		/* A daemon being stopped gets its connections back at once (and answers 401). */
		if (!__atomic_load_n(&g->stopping, __ATOMIC_ACQUIRE)) {
			const char *out = crypt_r(j->pass, j->hash, &p->worker_crypt);

			j->ok = j->user_known && out && same_string(out, j->hash);
		}
		/* From here the HTTP thread owns j again. */
		MHD_resume_connection(conn);
		pthread_mutex_lock(&p->jobs_lock);
		g->outstanding--;
		pthread_cond_broadcast(&p->done_cv);
	}
	pthread_mutex_unlock(&p->jobs_lock);
	return NULL;
}

static void job_free(struct guard_job *j)
{
	explicit_bzero(j->pass, strlen(j->pass));
	free(j->pass);
	explicit_bzero(j, sizeof(*j));
	free(j);
}

/* The outcome is in: account for it against the address. */
static bool job_collect(struct guard_job *j)
{
	struct gconn *c = j->c;
	bool ok = j->ok;

	c->parked = false;
	if (c->peer) {
		c->peer->pending--;
		refill(c->peer, now());
		if (!ok)
			c->peer->tokens -= 1;
	}
	job_free(j);
	return ok;
}

void guard_job_drop(struct guard_job *job)
{
	if (job)
		job_collect(job);
}

/* Under jobs_lock. 0, or -errno (logged: its caller answers 503). */
static int start_worker(struct guard_pool *p)
{
	int err;

	if (p->worker_started)
		return 0;
	err = pthread_create(&p->worker, NULL, worker, p);
	if (err) {
		log_error("http: cannot start the password check thread");
		return -err;
	}
	p->worker_started = true;
	return 0;
}

enum guard_auth guard_auth(struct guard *g, struct MHD_Connection *conn, struct guard_job **job,
			   const char *pass, const char *hash, bool user_known,
			   unsigned *retry_after)
{
	struct gconn *c = conn_of(conn);
	struct guard_pool *p = g->pool;
	struct guard_job *j;
	double t = now();
	bool clean;

	if (*job) {
		bool ok = job_collect(*job);

		*job = NULL;
		return ok ? GUARD_AUTH_OK : GUARD_AUTH_FAIL;
	}
	*retry_after = 1;
	if (!c || !c->peer)
		return refused(&p->stats.busy, GUARD_AUTH_BUSY);
	refill(c->peer, t);
	/* One check at a time per address, and only while its failures are within budget. */
	if (c->peer->pending || c->peer->tokens < 1) {
		if (!c->peer->pending)
			*retry_after = (unsigned)((1 - c->peer->tokens) * GUARD_AUTH_REFILL) + 1;
		return refused(&p->stats.limited, GUARD_AUTH_LIMITED);
	}
	j = calloc(1, sizeof(*j));
	if (!j || !(j->pass = strdup(pass)) || strlen(hash) >= sizeof(j->hash)) {
		free(j);
		return refused(&p->stats.busy, GUARD_AUTH_BUSY);
	}
	strcpy(j->hash, hash);
	j->g = g;
	j->c = c;
	j->conn = conn;
	j->user_known = user_known;
	clean = c->peer->tokens >= GUARD_AUTH_BURST;
	pthread_mutex_lock(&p->jobs_lock);
	if (g->stopping || g->outstanding >= GUARD_AUTH_QUEUE * (clean ? 2 : 1) ||
	    start_worker(p)) {
		pthread_mutex_unlock(&p->jobs_lock);
		job_free(j);
		return refused(&p->stats.busy, GUARD_AUTH_BUSY);
	}
	g->outstanding++;
	c->peer->pending++;
	c->parked = true;
	*job = j;
	/* Suspended before the worker can resume it: both under the lock the worker needs. */
	MHD_suspend_connection(conn);
	if (clean) {
		j->next = *p->clean_tail;
		*p->clean_tail = j;
		if (p->jobs_tail == p->clean_tail)
			p->jobs_tail = &j->next;
		p->clean_tail = &j->next;
	} else {
		*p->jobs_tail = j;
		p->jobs_tail = &j->next;
	}
	pthread_cond_signal(&p->jobs_cv);
	pthread_mutex_unlock(&p->jobs_lock);
	return GUARD_AUTH_PENDING;
}

void guard_quiesce(struct guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->pool->jobs_lock);
	__atomic_store_n(&g->stopping, true, __ATOMIC_RELEASE);
	while (g->outstanding)
		pthread_cond_wait(&g->pool->done_cv, &g->pool->jobs_lock);
	pthread_mutex_unlock(&g->pool->jobs_lock);
}

void guard_free(struct guard *g)
{
	free(g);
}

void guard_pool_free(struct guard_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->jobs_lock);
	p->quit = true;
	pthread_cond_signal(&p->jobs_cv);
	pthread_mutex_unlock(&p->jobs_lock);
	if (p->worker_started)
		pthread_join(p->worker, NULL);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->jobs_cv);
	pthread_mutex_destroy(&p->jobs_lock);
	explicit_bzero(&p->worker_crypt, sizeof(p->worker_crypt));
	free(p);
}
