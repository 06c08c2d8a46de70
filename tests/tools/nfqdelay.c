// SPDX-License-Identifier: GPL-2.0-only
/*
 * nfqdelay: hold every packet of an NFQUEUE for a fixed time, then accept it, in arrival
 * order: a constant one-way delay where the kernel has no netem.
 *
 *   nfqdelay QUEUE DELAY_MS
 *
 * Binds queue number QUEUE (0-65535) of the network namespace it runs in and gives each packet
 * its accept verdict DELAY_MS milliseconds (decimals allowed, e.g. 0.5) after it was queued.
 * Prints "ready" on stdout once bound; runs until killed. Packets it has not yet released are
 * dropped by the kernel when it exits (use --queue-bypass in the rule to let traffic through
 * while no nfqdelay runs). Steer packets to it with iptables' NFQUEUE target (through nft's
 * compat layer on kernels without nft's own queue expression), for example:
 *
 *   ip netns exec NS iptables  -A OUTPUT -p tcp --dport 5001 -j NFQUEUE --queue-num 7
 *   ip netns exec NS ip6tables -A OUTPUT -p tcp --dport 5001 -j NFQUEUE --queue-num 7
 *   ip netns exec NS nfqdelay 7 20 &
 *
 * Delaying one direction by D adds D to a round trip; delaying both adds 2 D. The delay is a
 * lower bound: each verdict also waits for this process to be scheduled (tens of microseconds
 * on an idle machine). Up to MAX_PENDING packets wait at once; more are accepted at once and
 * counted on stderr at exit rather than held (the kernel's queue holds QUEUE_MAXLEN).
 */
#define _GNU_SOURCE /* ppoll */
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_PENDING 65536
#define QUEUE_MAXLEN 8192

struct pending {
	uint32_t id;
	uint64_t due_ns;
};

/* A FIFO of packets waiting for their verdict: a constant delay keeps them in due order. */
struct delay {
	struct nfq_q_handle *qh;
	uint64_t delay_ns;
	struct pending ring[MAX_PENDING];
	size_t head, len;
	unsigned long released, unheld;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa,
		     void *data)
{
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	struct delay *d = data;
	uint32_t id;

	(void)msg;
	if (!ph)
		return 0;
	id = ntohl(ph->packet_id);
	if (d->len == MAX_PENDING) {
		d->unheld++;
		return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
	}
	d->ring[(d->head + d->len++) % MAX_PENDING] =
		(struct pending){ .id = id, .due_ns = now_ns() + d->delay_ns };
	return 0;
}

/* Accept every packet that is due; the nanoseconds until the next one is, or -1 if none. */
static int64_t release(struct delay *d)
{
	uint64_t now = now_ns();

	while (d->len) {
		struct pending *p = &d->ring[d->head];

		if (p->due_ns > now)
			return (int64_t)(p->due_ns - now);
		if (nfq_set_verdict(d->qh, p->id, NF_ACCEPT, 0, NULL) < 0)
			perror("nfqdelay: verdict");
		d->head = (d->head + 1) % MAX_PENDING;
		d->len--;
		d->released++;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static struct delay d;
	char buf[65536] __attribute__((aligned));
	struct nfq_handle *h;
	struct pollfd pfd;
	char *end;
	long queue;
	double ms;

	if (argc != 3) {
		fprintf(stderr, "usage: %s QUEUE DELAY_MS\n", argv[0]);
		return 2;
	}
	queue = strtol(argv[1], &end, 10);
	if (*end || queue < 0 || queue > 65535) {
		fprintf(stderr, "nfqdelay: bad queue number '%s'\n", argv[1]);
		return 2;
	}
	ms = strtod(argv[2], &end);
	if (*end || !(ms >= 0) || ms > 600000) {
		fprintf(stderr, "nfqdelay: bad delay '%s' (milliseconds, 0 to 600000)\n", argv[2]);
		return 2;
	}
	d.delay_ns = (uint64_t)(ms * 1e6);
	h = nfq_open();
	if (!h) {
		perror("nfqdelay: nfq_open");
		return 1;
	}
	d.qh = nfq_create_queue(h, (uint16_t)queue, on_packet, &d);
	if (!d.qh) {
		perror("nfqdelay: nfq_create_queue (is another process bound to it?)");
		nfq_close(h);
		return 1;
	}
	/* Verdicts need only the id: copy no payload. */
	if (nfq_set_mode(d.qh, NFQNL_COPY_META, 0) < 0 ||
	    nfq_set_queue_maxlen(d.qh, QUEUE_MAXLEN) < 0) {
		perror("nfqdelay: queue settings");
		nfq_destroy_queue(d.qh);
		nfq_close(h);
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("ready\n");
	fflush(stdout);
	pfd = (struct pollfd){ .fd = nfq_fd(h), .events = POLLIN };
	while (!stop) {
		int64_t wait = release(&d);
		struct timespec ts = { .tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000 };
		int n;

		n = ppoll(&pfd, 1, wait < 0 ? NULL : &ts, NULL);
		if (n < 0 && errno != EINTR) {
			perror("nfqdelay: poll");
			break;
		}
		if (n > 0) {
			ssize_t len = recv(pfd.fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (len > 0)
				nfq_handle_packet(h, buf, (int)len);
			else if (len < 0 && errno == ENOBUFS)
				fprintf(stderr, "nfqdelay: the kernel dropped queued packets "
						"(socket buffer full)\n");
		}
	}
	fprintf(stderr, "nfqdelay: %lu packets released after %.3f ms, %lu accepted at once\n",
		d.released, ms, d.unheld);
	nfq_destroy_queue(d.qh);
	nfq_close(h);
	return 0;
}
