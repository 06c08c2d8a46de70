// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bulk TCP traffic for tests and benchmarks.
 *   tcpbulk sink ADDR PORT            accept connections, read and discard, until killed
 *   tcpbulk send ADDR PORT SECONDS    send as fast as possible for SECONDS, print bytes sent
 * ADDR is numeric IPv4 or IPv6.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static struct addrinfo *resolve(const char *addr, const char *port, int passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | (passive ? AI_PASSIVE : 0) };
	struct addrinfo *ai;

	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "tcpbulk: bad address %s port %s\n", addr, port);
		exit(2);
	}
	return ai;
}

static int sink(const char *addr, const char *port)
{
	struct addrinfo *ai = resolve(addr, port, 1);
	int one = 1, fd = socket(ai->ai_family, SOCK_STREAM, 0);

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		perror("tcpbulk: listen");
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
			while (read(c, buf, sizeof(buf)) > 0)
				;
			_exit(0);
		}
		close(c);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int send_for(const char *addr, const char *port, double seconds)
{
	struct addrinfo *ai = resolve(addr, port, 0);
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	unsigned long long sent = 0;
	double end = now() + seconds;

	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		perror("tcpbulk: connect");
		return 1;
	}
	freeaddrinfo(ai);
	while (now() < end) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n < 0 && errno != EINTR) {
			perror("tcpbulk: write");
			return 1;
		}
		sent += n > 0 ? n : 0;
	}
	/* Wait until the peer has everything, so retransmissions are over when we exit. */
	shutdown(fd, SHUT_WR);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	printf("%llu\n", sent);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "sink"))
		return sink(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "send"))
		return send_for(argv[2], argv[3], atof(argv[4]));
	fprintf(stderr, "usage: tcpbulk sink ADDR PORT | tcpbulk send ADDR PORT SECONDS\n");
	return 2;
}
