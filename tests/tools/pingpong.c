// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP request/response (ping-pong) traffic for benchmarks: one transaction at a time on one
 * connection, so a transaction's wall time is the round trip through both stacks.
 *   pingpong server ADDR PORT               accept connections, echo what each sends back,
 *                                           until killed; prints "listening"
 *   pingpong client ADDR PORT SECONDS [SIZE]
 *                                           one connection (TCP_NODELAY): send SIZE bytes
 *                                           (64), read them back, again for SECONDS; prints
 *                                           "TRANSACTIONS ELAPSED_NS" (the loop's own time)
 * ADDR is numeric IPv4 or IPv6. A C loop: an interpreter's own time per transaction would be
 * most of the transaction.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static struct addrinfo *resolve(const char *addr, const char *port, int passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | (passive ? AI_PASSIVE : 0) };
	struct addrinfo *ai;

	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "pingpong: bad address %s port %s\n", addr, port);
		exit(2);
	}
	return ai;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Echo each read back whole; EOF or an error ends the connection. */
static void echo(int c)
{
	for (;;) {
		ssize_t n = read(c, buf, sizeof(buf)), off = 0;

		if (n <= 0)
			return;
		while (off < n) {
			ssize_t w = write(c, buf + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return;
			off += w;
		}
	}
}

static int server(const char *addr, const char *port)
{
	struct addrinfo *ai = resolve(addr, port, 1);
	int one = 1, fd = socket(ai->ai_family, SOCK_STREAM, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		perror("pingpong: listen");
		return 1;
	}
	freeaddrinfo(ai);
	signal(SIGCHLD, SIG_IGN); /* children reap themselves */
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		int c = accept(fd, NULL, NULL);

		if (c < 0)
			continue;
		if (fork() == 0) {
			close(fd);
			nodelay(c);
			echo(c);
			_exit(0);
		}
		close(c);
	}
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int client(const char *addr, const char *port, double seconds, size_t size)
{
	struct addrinfo *ai = resolve(addr, port, 0);
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	unsigned long long done = 0;
	long long start, end, t;

	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		perror("pingpong: connect");
		return 1;
	}
	freeaddrinfo(ai);
	nodelay(fd);
	memset(buf, 'x', size);
	start = now_ns();
	end = start + (long long)(seconds * 1e9);
	do {
		size_t got = 0;

		if (write(fd, buf, size) != (ssize_t)size) {
			perror("pingpong: write");
			return 1;
		}
		while (got < size) {
			ssize_t n = read(fd, buf + got, size - got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				fprintf(stderr, "pingpong: the server closed the connection\n");
				return 1;
			}
			got += n;
		}
		done++;
		t = now_ns();
	} while (t < end);
	printf("%llu %lld\n", done, t - start);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "client")) {
		long size = argc == 6 ? atol(argv[5]) : 64;

		if (size < 1 || size > (long)sizeof(buf)) {
			fprintf(stderr, "pingpong: SIZE must be 1 to %zu\n", sizeof(buf));
			return 2;
		}
		return client(argv[2], argv[3], atof(argv[4]), size);
	}
	fprintf(stderr, "usage: pingpong server ADDR PORT | "
			"pingpong client ADDR PORT SECONDS [SIZE]\n");
	return 2;
}
