// SPDX-License-Identifier: GPL-2.0-only
/* The stdout writer (see stdout.h): rate limit, buffer, flush. */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "metrics.h"
#include "sampling/decode.h"
#include "sampling/stdout.h"

/* JSON lines waiting for stdout: more is lost (counted), not buffered, when nobody reads. */
#define STDOUT_PENDING_MAX ((size_t)256 * 1024)

struct stdout_writer {
	unsigned per_second;
	struct mbuf line; /* JSON lines not yet written */
	double tat;	  /* the rate limit's theoretical arrival time */
	/* Events the buffer did not take; atomic: scrapes add them to netstack_events_lost_total. */
	uint64_t lost[EV_NR_TYPES];
	bool logged_rate, logged_write, logged_slow;
};

struct stdout_writer *stdout_writer_new(unsigned per_second)
{
	struct stdout_writer *w = calloc(1, sizeof(*w));

	if (w)
		w->per_second = per_second;
	return w;
}

void stdout_writer_free(struct stdout_writer *w)
{
	if (!w)
		return;
	mbuf_free(&w->line);
	free(w);
}

void stdout_writer_set_rate(struct stdout_writer *w, unsigned per_second)
{
	w->per_second = per_second;
}

uint64_t stdout_writer_lost(const struct stdout_writer *w, enum event_type type)
{
	return __atomic_load_n(&w->lost[type], __ATOMIC_RELAXED);
}

/*
 * What stdout takes without blocking, in whole lines of at most PIPE_BUF bytes: a pipe with room
 * (POLLOUT) takes such a write at once and whole, never interleaved with the log on stderr. The
 * rest waits for the next flush. No lock held: a reader that stalls stalls nobody, neither
 * scrapes nor a reload waiting for the consumer thread.
 */
void stdout_writer_flush(struct stdout_writer *w)
{
	struct mbuf *m = &w->line;
	size_t off = 0;

	while (off < m->len) {
		struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };
		size_t n = m->len - off < PIPE_BUF ? m->len - off : PIPE_BUF;
		const char *nl = memrchr(m->data + off, '\n', n);
		ssize_t wr;

		if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
			break;
		wr = write(STDOUT_FILENO, m->data + off,
			   nl ? (size_t)(nl + 1 - (m->data + off)) : n);
		if (wr < 0 && errno == EINTR)
			continue;
		if (wr < 0) {
			log_once(w->logged_write, LOG_WARN,
				 "sampling: cannot write events to stdout: %s", strerror(errno));
			break;
		}
		off += (size_t)wr;
	}
	if (m->oom) {
		mbuf_reset(m);
	} else if (off) {
		memmove(m->data, m->data + off, m->len - off + 1); /* with its NUL */
		m->len -= off;
	}
}

/*
 * At most stdout_max_per_second lines (GCRA with a one-second burst), the rest counted; a long
 * backlog is written as it comes.
 */
void stdout_writer_add(struct stdout_writer *w, const struct event_rec *r)
{
	double interval = 1.0 / w->per_second;

	if (w->tat < r->time)
		w->tat = r->time;
	if (w->tat - r->time > 1.0) {
		log_once(w->logged_rate, LOG_WARN,
			 "sampling: more than stdout_max_per_second=%u events; the rest are not "
			 "logged to stdout",
			 w->per_second);
	} else if (w->line.len >= STDOUT_PENDING_MAX) {
		w->tat += interval;
		__atomic_fetch_add(&w->lost[r->ev.type], 1, __ATOMIC_RELAXED);
		log_once(w->logged_slow, LOG_WARN,
			 "sampling: stdout does not take the events as fast as they come; those "
			 "it cannot take are counted in netstack_events_lost_total");
	} else {
		w->tat += interval;
		event_json(&w->line, r);
		mbuf_puts(&w->line, "\n");
	}
	if (w->line.len >= STDOUT_PENDING_MAX / 4)
		stdout_writer_flush(w);
}
