// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hostile HTTP client for the exporter's hardening tests. Every mode is bounded in count and
 * in time, and prints one "key=value ..." line per phase for the scripts to check.
 *
 *   httpabuse [-b SRC [-B COUNT]] MODE ADDR PORT ARGS...
 *   idle ADDR PORT N SECONDS       open N connections, send nothing, hold them SECONDS; prints
 *                                  "ready ..." once connected, "done ..." at the end; a
 *                                  connection the server times out is replaced by a new one
 *   slowloris ADDR PORT N SECONDS INTERVAL_MS
 *                                  N connections each send a request one byte every INTERVAL_MS
 *                                  (an endless header) for SECONDS, then end it and read the
 *                                  status of the answer
 *   disconnect ADDR PORT N         N requests for /metrics, each connection dropped abruptly:
 *                                  FIN at once, RST at once, RST after the first response byte,
 *                                  RST after the first byte of 20 pipelined responses
 *   pipeline ADDR PORT N           N requests (GET, HEAD, 404, OpenMetrics...) in one write;
 *                                  checks every answer and its order, exit 1 on a mismatch
 *   raw ADDR PORT [TIMEOUT_MS]     send stdin as-is, print the response (headers and body) or
 *                                  "NONE closed|reset|timeout" when there was none
 *   auth ADDR PORT N SECONDS USER:PASS
 *                                  N clients at once, each asking for /metrics with these basic
 *                                  auth credentials on a new connection as soon as its last
 *                                  answer came, for SECONDS; prints the count of each status
 *
 * -b SRC binds every client socket to SRC; -B COUNT spreads connection i over COUNT consecutive
 * IPv4 addresses from SRC (SRC + i % COUNT), to get past a per-address connection limit.
 * -r (idle, slowloris): replace every connection the server closes at once, not only the ones
 * it timed out, as an attacker who keeps its share would.
 * A connection the server closes less than QUICK_CLOSE seconds after it was established counts
 * as refused (a limit), later as timed out.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 100000
#define MAX_SECONDS 600
#define QUICK_CLOSE 0.5
#define RAW_MAX_INPUT (4 << 20)
#define RESP_KEEP 64

static struct sockaddr_storage dst, src;
static socklen_t dst_len, src_len;
static unsigned src_count;
static bool reopen_all;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "httpabuse: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int parse_addr(const char *addr, const char *port, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;

	if (getaddrinfo(addr, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static long parse_num(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max) {
		fprintf(stderr, "httpabuse: %s must be %ld..%ld, got '%s'\n", what, min, max, s);
		exit(2);
	}
	return v;
}

/* Enough descriptors for n connections (root may raise the hard limit too). */
static void raise_nofile(unsigned long n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	if (rl.rlim_cur >= n)
		return;
	rl.rlim_cur = n;
	if (rl.rlim_max < n)
		rl.rlim_max = n;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		fprintf(stderr, "httpabuse: only %lu descriptors allowed\n",
			(unsigned long)rl.rlim_cur);
	}
}

/* A socket for connection number i, connecting (non-blocking) or connected; -1 on error. */
static int open_conn(unsigned i, bool nonblock)
{
	int one = 1, fd;

	fd = socket(dst.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (src_count) {
		struct sockaddr_storage s = src;

		if (s.ss_family == AF_INET) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&s;

			sin->sin_addr.s_addr = htonl(ntohl(sin->sin_addr.s_addr) + i % src_count);
		}
		/* The port is picked at connect() from the whole 4-tuple: no early exhaustion. */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&s, src_len))
			goto fail;
	}
	if (connect(fd, (struct sockaddr *)&dst, dst_len) && errno != EINPROGRESS)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Blocking socket with send and receive timeouts. */
static int open_blocking(unsigned i, double timeout)
{
	struct timeval tv = { .tv_sec = (time_t)timeout,
			      .tv_usec = (suseconds_t)((timeout - (time_t)timeout) * 1e6) };
	int fd = open_conn(i, false);

	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static void close_rst(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* Double a buffer, zeroing the new half; exits when memory runs out. */
static char *grow(char *p, size_t *cap)
{
	char *q = realloc(p, *cap * 2);

	if (!q)
		die("realloc");
	memset(q + *cap, 0, *cap);
	*cap *= 2;
	return q;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

/* ---- many connections at once: idle and slowloris ---- */

enum conn_state { CONNECTING, OPEN, FINISHING, FAILED, CLOSED };

struct conn {
	int fd;
	enum conn_state state;
	double t_open, t_closed;
	unsigned long long sent; /* slowloris: bytes of the endless request sent */
	char resp[RESP_KEEP];	 /* start of what the server sent */
	size_t rlen;
};

struct swarm {
	struct conn *c;
	unsigned n;
	int ep;
	unsigned failed, open, max_open, refused, timed_out, answered, reopened;
	double max_hold;
	bool reopen;	/* replace connections the server timed out */
	unsigned *todo; /* slots to reopen, filled by conn_closed() */
	unsigned n_todo;
};

static void conn_closed(struct swarm *s, struct conn *c)
{
	double held;

	c->t_closed = now();
	held = c->t_closed - c->t_open;
	if (c->rlen)
		s->answered++;
	else if (held < QUICK_CLOSE)
		s->refused++;
	else
		s->timed_out++;
	if (s->reopen && !c->rlen && (held >= QUICK_CLOSE || reopen_all))
		s->todo[s->n_todo++] = c - s->c;
	if (!c->rlen && held > s->max_hold)
		s->max_hold = held;
	s->open--;
	c->state = CLOSED;
	close(c->fd);
	c->fd = -1;
}

/* Read what the server sent; notice when it closes. */
static void conn_read(struct swarm *s, struct conn *c)
{
	char buf[4096];

	for (;;) {
		ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r > 0) {
			size_t keep = sizeof(c->resp) - 1 - c->rlen;

			if ((size_t)r < keep)
				keep = r;
			memcpy(c->resp + c->rlen, buf, keep);
			c->rlen += keep;
			c->resp[c->rlen] = 0;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		conn_closed(s, c);
		return;
	}
}

/* Handle readiness events for up to timeout_ms; returns the number handled. */
static int swarm_pump(struct swarm *s, int timeout_ms)
{
	struct epoll_event ev[1024];
	int n = epoll_wait(s->ep, ev, 1024, timeout_ms);

	for (int i = 0; i < n; i++) {
		struct conn *c = &s->c[ev[i].data.u32];
		int err = 0;
		socklen_t len = sizeof(err);

		if (c->state == CONNECTING) {
			struct epoll_event mod = { .events = EPOLLIN | EPOLLRDHUP,
						   .data.u32 = ev[i].data.u32 };

			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err ||
			    (ev[i].events & (EPOLLERR | EPOLLHUP))) {
				c->state = FAILED;
				s->failed++;
				close(c->fd);
				c->fd = -1;
				continue;
			}
			c->state = OPEN;
			c->t_open = now();
			if (++s->open > s->max_open)
				s->max_open = s->open;
			epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &mod);
			/* It may have been accepted and closed at once: look now. */
		}
		if (c->state == OPEN || c->state == FINISHING)
			conn_read(s, c);
	}
	return n < 0 ? 0 : n;
}

static void swarm_add(struct swarm *s, unsigned i)
{
	struct conn *c = &s->c[i];
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.u32 = i };

	memset(c, 0, sizeof(*c));
	c->fd = open_conn(i, true);
	if (c->fd < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, c->fd, &ev)) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		c->state = FAILED;
		s->failed++;
	}
}

/* Pump events until deadline, or until none arrive for quiet seconds. */
static void swarm_settle(struct swarm *s, double deadline, double quiet)
{
	double last = now();

	while (now() < deadline && now() - last < quiet) {
		if (swarm_pump(s, 20))
			last = now();
		/* After the events: a new socket may reuse a number still in this batch. */
		for (; s->n_todo; s->reopened++)
			swarm_add(s, s->todo[--s->n_todo]);
	}
}

static unsigned swarm_count(struct swarm *s, enum conn_state st)
{
	unsigned k = 0;

	for (unsigned i = 0; i < s->n; i++)
		k += s->c[i].state == st;
	return k;
}

/* Open n connections; pumps events as it goes so refusals are seen early. */
static void swarm_open(struct swarm *s, unsigned n, double deadline)
{
	s->c = calloc(n, sizeof(*s->c));
	s->todo = calloc(n, sizeof(*s->todo));
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!s->c || !s->todo || s->ep < 0)
		die("swarm");
	raise_nofile(n + 64);
	for (unsigned i = 0; i < n && now() < deadline; i++) {
		s->n = i + 1;
		swarm_add(s, i);
		if (i % 64 == 63)
			swarm_pump(s, 0);
	}
	/*
	 * Connects the server's full backlog dropped retry for seconds: do not wait for them.
	 * Nor for ever, when -r replaces what the server closes as fast as it closes them.
	 */
	swarm_settle(s, now() + 3 < deadline ? now() + 3 : deadline, 0.3);
}

static void swarm_close(struct swarm *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->c[i].fd >= 0)
			close(s->c[i].fd);
	close(s->ep);
	free(s->c);
	free(s->todo);
}

static void swarm_print(struct swarm *s, const char *phase, double t0)
{
	printf("%s conns=%u failed=%u pending=%u open=%u max_open=%u refused=%u timed_out=%u "
	       "answered=%u reopened=%u max_hold=%.2f elapsed=%.2f\n",
	       phase, s->n, s->failed, swarm_count(s, CONNECTING), s->open, s->max_open, s->refused,
	       s->timed_out, s->answered, s->reopened, s->max_hold, now() - t0);
	fflush(stdout);
}

static int idle(unsigned n, double seconds)
{
	struct swarm s = { 0 };
	double t0 = now();

	s.reopen = reopen_all; /* while opening too: only -r replaces refused ones */
	swarm_open(&s, n, t0 + seconds);
	swarm_print(&s, "ready", t0);
	s.reopen = true;
	swarm_settle(&s, t0 + seconds, seconds);
	swarm_print(&s, "done", t0);
	swarm_close(&s);
	return 0;
}

static const char slow_head[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				"User-Agent: httpabuse-slowloris\r\n";
static const char slow_line[] = "X-Slow: aaaaaaaaaaa\r\n";

/* Byte k of the endless request: the head, then the same header line forever. */
static char slow_byte(unsigned long long k)
{
	if (k < sizeof(slow_head) - 1)
		return slow_head[k];
	return slow_line[(k - (sizeof(slow_head) - 1)) % (sizeof(slow_line) - 1)];
}

static int slowloris(unsigned n, double seconds, unsigned interval_ms)
{
	struct swarm s = { 0 };
	double t0 = now(), end = t0 + seconds, next = t0;
	unsigned long long bytes = 0;
	unsigned ok = 0, finished = 0;

	s.reopen = reopen_all;
	swarm_open(&s, n, end);
	swarm_print(&s, "ready", t0);
	while (now() < end) {
		if (now() >= next) {
			for (unsigned i = 0; i < s.n; i++) {
				struct conn *c = &s.c[i];
				char b = slow_byte(c->sent);

				if (c->state != OPEN)
					continue;
				if (send(c->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
					c->sent++;
					bytes++;
				} else if (errno != EAGAIN) {
					conn_closed(&s, c);
				}
			}
			next += interval_ms / 1000.0;
		}
		swarm_pump(&s, 10);
		for (; s.n_todo; s.reopened++)
			swarm_add(&s, s.todo[--s.n_todo]);
	}
	/* End the current header line and the header, then read the status of the answer. */
	for (unsigned i = 0; i < s.n; i++) {
		struct conn *c = &s.c[i];
		char rest[sizeof(slow_head) + 2];
		size_t k = 0, hl = sizeof(slow_head) - 1, ll = sizeof(slow_line) - 1;

		if (c->state != OPEN)
			continue;
		if (c->sent < hl) {
			k = hl - c->sent;
			memcpy(rest, slow_head + c->sent, k);
		} else if ((c->sent - hl) % ll) {
			k = ll - (c->sent - hl) % ll;
			memcpy(rest, slow_line + ll - k, k);
		}
		rest[k] = '\r';
		rest[k + 1] = '\n';
		finished++;
		if (send(c->fd, rest, k + 2, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)(k + 2))
			c->state = FINISHING;
		else
			conn_closed(&s, c);
	}
	end = now() + 3;
	while (now() < end && swarm_count(&s, FINISHING)) {
		swarm_pump(&s, 20);
		for (unsigned i = 0; i < s.n; i++) {
			struct conn *c = &s.c[i];

			if (c->state == FINISHING && strchr(c->resp, '\n')) {
				ok += !strncmp(c->resp + 8, " 200 ", 5);
				conn_closed(&s, c);
			}
		}
	}
	swarm_print(&s, "done", t0);
	printf("slowloris finished=%u status_200=%u bytes_sent=%llu\n", finished, ok, bytes);
	swarm_close(&s);
	return 0;
}

/* ---- abrupt disconnects ---- */

static const char metrics_req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				  "Accept-Encoding: gzip\r\n\r\n";

static int disconnect(unsigned n)
{
	unsigned kinds[4] = { 0 }, refused = 0, errors = 0, done = 0;
	double deadline = now() + 60;
	char burst[sizeof(metrics_req) * 20], b;

	for (int i = 0; i < 20; i++)
		memcpy(burst + i * (sizeof(metrics_req) - 1), metrics_req, sizeof(metrics_req) - 1);
	for (unsigned i = 0; i < n && now() < deadline; i++, done++) {
		unsigned kind = i % 4;
		int fd = open_blocking(i, 2);

		if (fd < 0) {
			errors++;
			continue;
		}
		if (kind == 3 ? send_all(fd, burst, 20 * (sizeof(metrics_req) - 1))
			      : send_all(fd, metrics_req, sizeof(metrics_req) - 1)) {
			errors++;
			close(fd);
			continue;
		}
		kinds[kind]++;
		switch (kind) {
		case 0: /* FIN at once (RST if the answer already came) */
			close(fd);
			break;
		case 1: /* RST at once */
			close_rst(fd);
			break;
		default: /* RST once the answer has started */
			if (recv(fd, &b, 1, 0) != 1)
				refused++;
			close_rst(fd);
			break;
		}
	}
	printf("done requests=%u fin=%u rst=%u rst_after_first_byte=%u rst_mid_pipeline=%u "
	       "refused=%u errors=%u\n",
	       done, kinds[0], kinds[1], kinds[2], kinds[3], refused, errors);
	return 0;
}

/* ---- pipelining ---- */

struct pipe_req {
	const char *req;
	bool head;
	const char *status;   /* status line prefix */
	const char *type;     /* Content-Type prefix, or NULL */
	const char *body_has; /* substring of the body, or NULL */
};

#define OM_ACCEPT "Accept: application/openmetrics-text;version=1.0.0\r\n"
static const struct pipe_req pipe_reqs[] = {
	{ "GET /metrics HTTP/1.1\r\n", false, "HTTP/1.1 200 ", "text/plain; version=0.0.4",
	  "\nnetstack_exporter_build_info{" },
	{ "GET /healthz HTTP/1.1\r\n", false, "HTTP/1.1 200 ", "text/plain", "ok\n" },
	{ "HEAD /metrics HTTP/1.1\r\n", true, "HTTP/1.1 200 ", "text/plain; version=0.0.4", NULL },
	{ "GET /nope HTTP/1.1\r\n", false, "HTTP/1.1 404 ", NULL, NULL },
	{ "GET /metrics HTTP/1.1\r\n" OM_ACCEPT, false, "HTTP/1.1 200 ",
	  "application/openmetrics-text", "\n# EOF\n" },
	{ "GET / HTTP/1.1\r\n", false, "HTTP/1.1 200 ", "text/html", "netstack_exporter" },
};
#define N_PIPE_REQS (sizeof(pipe_reqs) / sizeof(pipe_reqs[0]))

/* Value of header name in the header block [h, end), or NULL. */
static const char *find_header(const char *h, const char *end, const char *name, size_t *len)
{
	size_t nl = strlen(name);

	while (h < end) {
		const char *eol = memmem(h, end - h, "\r\n", 2);

		if (!eol)
			eol = end;
		if ((size_t)(eol - h) > nl && h[nl] == ':' && !strncasecmp(h, name, nl)) {
			h += nl + 1;
			while (*h == ' ')
				h++;
			*len = eol - h;
			return h;
		}
		h = eol + 2;
	}
	return NULL;
}

/* Check response k at p (len bytes left); returns its length, 0 if incomplete, -1 if wrong. */
static long check_response(const char *p, size_t len, unsigned k, char *why, size_t whylen)
{
	const struct pipe_req *r = &pipe_reqs[k % N_PIPE_REQS];
	const char *hend = memmem(p, len, "\r\n\r\n", 4), *v;
	size_t vlen, hlen;
	long body;

	if (!hend)
		return 0;
	hlen = hend + 4 - p;
	if (strncmp(p, r->status, strlen(r->status))) {
		snprintf(why, whylen, "status '%.20s', want '%s'", p, r->status);
		return -1;
	}
	v = find_header(p, hend, "Content-Length", &vlen);
	if (!v) {
		snprintf(why, whylen, "no Content-Length");
		return -1;
	}
	body = strtol(v, NULL, 10);
	if (r->type) {
		const char *t = find_header(p, hend, "Content-Type", &vlen);

		if (!t || strncmp(t, r->type, strlen(r->type))) {
			snprintf(why, whylen, "Content-Type '%.*s', want '%s'", t ? (int)vlen : 0,
				 t ? t : "", r->type);
			return -1;
		}
	}
	if (r->head)
		return hlen;
	if (hlen + body > len)
		return 0;
	if (r->body_has && !memmem(p + hlen, body, r->body_has, strlen(r->body_has))) {
		snprintf(why, whylen, "body lacks '%s'", r->body_has);
		return -1;
	}
	return hlen + body;
}

static int pipeline(unsigned n)
{
	size_t out_len = 0, out_off = 0, in_len = 0, in_cap = 1 << 20, pos = 0;
	char *out = malloc((size_t)n * 256), *in = calloc(1, in_cap), why[160] = "";
	double deadline = now() + 20;
	unsigned got = 0;
	bool eof = false, bad = false;
	int fd;

	if (!out || !in)
		die("malloc");
	for (unsigned i = 0; i < n; i++)
		out_len += sprintf(out + out_len, "%sHost: 127.0.0.1\r\n%s\r\n",
				   pipe_reqs[i % N_PIPE_REQS].req,
				   i == n - 1 ? "Connection: close\r\n" : "");
	fd = open_conn(0, true);
	if (fd < 0)
		die("connect");
	/* One write when the socket takes it all; keep reading meanwhile so nothing deadlocks. */
	while (!eof && now() < deadline) {
		struct pollfd p = { .fd = fd,
				    .events = POLLIN | (out_off < out_len ? POLLOUT : 0) };
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((p.revents & POLLOUT) && out_off < out_len) {
			r = send(fd, out + out_off, out_len - out_off, MSG_NOSIGNAL);
			if (r > 0)
				out_off += r;
			else if (errno != EAGAIN && errno != EINPROGRESS)
				break;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			if (in_len == in_cap)
				in = grow(in, &in_cap);
			r = recv(fd, in + in_len, in_cap - in_len, MSG_DONTWAIT);
			if (r > 0)
				in_len += r;
			else if (r == 0 || errno != EAGAIN)
				eof = true;
		}
	}
	close(fd);
	while (got < n && !bad) {
		long l = check_response(in + pos, in_len - pos, got, why, sizeof(why));

		if (l <= 0) {
			bad = l < 0;
			break;
		}
		pos += l;
		got++;
	}
	printf("done requests=%u sent_bytes=%zu/%zu responses_in_order=%u trailing_bytes=%zu "
	       "closed=%s%s%s\n",
	       n, out_off, out_len, got, in_len - pos, eof ? "yes" : "no", bad ? " first_bad=" : "",
	       bad ? why : "");
	if (bad)
		printf("bad response %u: %s\n", got, why);
	free(out);
	free(in);
	return got == n && pos == in_len && eof ? 0 : 1;
}

/* ---- raw ---- */

static int raw(double timeout)
{
	size_t in_len = 0, out_len = 0, off = 0, cap = 1 << 16;
	char *in = malloc(RAW_MAX_INPUT), *out = calloc(1, cap);
	const char *why = "timeout";
	double deadline;
	bool head;
	ssize_t r;
	int fd;

	if (!in || !out)
		die("malloc");
	while (in_len < RAW_MAX_INPUT && (r = read(0, in + in_len, RAW_MAX_INPUT - in_len)) > 0)
		in_len += r;
	head = in_len >= 5 && !memcmp(in, "HEAD ", 5);
	fd = open_conn(0, true);
	if (fd < 0)
		die("connect");
	deadline = now() + timeout;
	while (now() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (off < in_len ? POLLOUT : 0) };
		const char *hend;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((p.revents & POLLOUT) && off < in_len) {
			r = send(fd, in + off, in_len - off, MSG_NOSIGNAL);
			if (r > 0)
				off += r;
			else if (errno != EAGAIN && errno != EINPROGRESS)
				off = in_len; /* the server stopped reading: see what it said */
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (out_len == cap)
			out = grow(out, &cap);
		r = recv(fd, out + out_len, cap - out_len, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN)) {
			why = r ? "reset" : "closed";
			break;
		}
		if (r > 0)
			out_len += r;
		/* Stop after one complete response instead of waiting for the keep-alive. */
		hend = memmem(out, out_len, "\r\n\r\n", 4);
		if (hend) {
			size_t hlen = hend + 4 - out, vlen;
			const char *v = find_header(out, hend, "Content-Length", &vlen);

			if (head || (v && hlen + strtoul(v, NULL, 10) <= out_len))
				break;
		}
	}
	close(fd);
	if (!out_len)
		printf("NONE %s\n", why);
	else
		fwrite(out, 1, out_len, stdout);
	free(in);
	free(out);
	return 0;
}

/* ---- wrong (or right) passwords from many clients ---- */

struct auth_client {
	pthread_t t;
	unsigned i;
	double end;
	const char *req;
	unsigned requests, errors, by_status[6]; /* 200, 401, 429, 503, other, none */
	double max_latency;
};

static void *auth_client(void *arg)
{
	struct auth_client *a = arg;

	while (now() < a->end) {
		double t = now();
		char buf[256];
		ssize_t r;
		int fd = open_blocking(a->i, 5), k;

		a->requests++;
		if (fd < 0 || send_all(fd, a->req, strlen(a->req))) {
			a->errors++;
			if (fd >= 0)
				close(fd);
			usleep(10000);
			continue;
		}
		r = recv(fd, buf, sizeof(buf) - 1, MSG_WAITALL);
		close(fd);
		buf[r > 0 ? r : 0] = 0;
		k = r < 12			    ? 5
		    : !strncmp(buf + 8, " 200 ", 5) ? 0
		    : !strncmp(buf + 8, " 401 ", 5) ? 1
		    : !strncmp(buf + 8, " 429 ", 5) ? 2
		    : !strncmp(buf + 8, " 503 ", 5) ? 3
						    : 4;
		a->by_status[k]++;
		if (now() - t > a->max_latency)
			a->max_latency = now() - t;
	}
	return NULL;
}

static void base64(const char *in, char *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(in), o = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;

		v |= i + 1 < n ? (unsigned char)in[i + 1] << 8 : 0;
		v |= i + 2 < n ? (unsigned char)in[i + 2] : 0;
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = 0;
}

static int auth(unsigned n, double seconds, const char *cred)
{
	struct auth_client *a = calloc(n, sizeof(*a));
	unsigned sum[6] = { 0 }, requests = 0, errors = 0;
	char b64[512], req[768];
	double max_latency = 0, end = now() + seconds;

	if (!a || strlen(cred) > 300)
		die("auth");
	base64(cred, b64);
	/* Connection: close, so the answer ends with the connection (MSG_WAITALL returns). */
	snprintf(req, sizeof(req),
		 "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic %s\r\n"
		 "Connection: close\r\n\r\n",
		 b64);
	for (unsigned i = 0; i < n; i++) {
		a[i] = (struct auth_client){ .i = i, .end = end, .req = req };
		if (pthread_create(&a[i].t, NULL, auth_client, &a[i]))
			die("pthread_create");
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(a[i].t, NULL);
		requests += a[i].requests;
		errors += a[i].errors;
		for (int k = 0; k < 6; k++)
			sum[k] += a[i].by_status[k];
		if (a[i].max_latency > max_latency)
			max_latency = a[i].max_latency;
	}
	printf("done requests=%u errors=%u status_200=%u status_401=%u status_429=%u "
	       "status_503=%u status_other=%u no_answer=%u max_latency=%.3f\n",
	       requests, errors, sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], max_latency);
	free(a);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: httpabuse [-r] [-b SRC [-B COUNT]] MODE ADDR PORT ARGS...\n"
			"  idle ADDR PORT N SECONDS\n"
			"  slowloris ADDR PORT N SECONDS INTERVAL_MS\n"
			"  disconnect ADDR PORT N\n"
			"  pipeline ADDR PORT N\n"
			"  raw ADDR PORT [TIMEOUT_MS]\n"
			"  auth ADDR PORT N SECONDS USER:PASS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *src_addr = NULL, *mode;
	int opt;

	while ((opt = getopt(argc, argv, "+b:B:r")) != -1) {
		if (opt == 'r')
			reopen_all = true;
		else if (opt == 'b')
			src_addr = optarg;
		else if (opt == 'B')
			src_count = parse_num(optarg, 1, 65536, "-B COUNT");
		else
			usage();
	}
	argc -= optind;
	argv += optind;
	if (argc < 3)
		usage();
	mode = argv[0];
	if (parse_addr(argv[1], argv[2], &dst, &dst_len)) {
		fprintf(stderr, "httpabuse: bad address %s port %s\n", argv[1], argv[2]);
		return 2;
	}
	if (src_addr) {
		if (parse_addr(src_addr, "0", &src, &src_len) || src.ss_family != dst.ss_family) {
			fprintf(stderr, "httpabuse: bad source address %s\n", src_addr);
			return 2;
		}
		if (!src_count)
			src_count = 1;
	}
	if (!strcmp(mode, "idle") && argc == 5)
		return idle(parse_num(argv[3], 1, MAX_CONNS, "N"),
			    parse_num(argv[4], 1, MAX_SECONDS, "SECONDS"));
	if (!strcmp(mode, "slowloris") && argc == 6)
		return slowloris(parse_num(argv[3], 1, MAX_CONNS, "N"),
				 parse_num(argv[4], 1, MAX_SECONDS, "SECONDS"),
				 parse_num(argv[5], 1, 60000, "INTERVAL_MS"));
	if (!strcmp(mode, "disconnect") && argc == 4)
		return disconnect(parse_num(argv[3], 1, MAX_CONNS, "N"));
	if (!strcmp(mode, "pipeline") && argc == 4)
		return pipeline(parse_num(argv[3], 1, 10000, "N"));
	if (!strcmp(mode, "raw") && (argc == 3 || argc == 4))
		return raw(argc == 4 ? parse_num(argv[3], 1, 60000, "TIMEOUT_MS") / 1000.0 : 3);
	if (!strcmp(mode, "auth") && argc == 6)
		return auth(parse_num(argv[3], 1, 1000, "N"),
			    parse_num(argv[4], 1, MAX_SECONDS, "SECONDS"), argv[5]);
	usage();
	return 2;
}
