// SPDX-License-Identifier: GPL-2.0-only
/*
 * A TCP connect/close loop, as fast as the kernel allows (tests/integration/prometheus_load.sh).
 *   tcpchurn server ADDR PORT               accept and close at once, until killed; prints
 *                                           "listening"
 *   tcpchurn client ADDR PORT SECONDS PROCS PROCS processes each connect, wait for the server's
 *                                           FIN, close, again, for SECONDS; prints the number
 *                                           of connections made
 * ADDR is numeric IPv4 or IPv6. The server closes first, so TIME_WAIT is on its side and the
 * client's ephemeral ports are free again at once (a SYN reopens a TIME_WAIT connection).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct addrinfo *resolve(const char *addr, const char *port, int passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | (passive ? AI_PASSIVE : 0) };
	struct addrinfo *ai;

	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "tcpchurn: bad address %s port %s\n", addr, port);
		exit(2);
	}
	return ai;
}

static int server(const char *addr, const char *port)
{
	struct addrinfo *ai = resolve(addr, port, 1);
	int one = 1, fd = socket(ai->ai_family, SOCK_STREAM, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 4096)) {
		perror("tcpchurn: listen");
		return 1;
	}
	freeaddrinfo(ai);
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		int c = accept(fd, NULL, NULL);

		if (c >= 0)
			close(c);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One process's loop; returns the connections made, or -1 on an error other than a reset. */
static long churn(const struct addrinfo *ai, double end)
{
	long made = 0;
	char b;

	while (now() < end) {
		int fd = socket(ai->ai_family, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			perror("tcpchurn: connect");
			return -1;
		}
		/* The server's FIN (0) or, when its backlog overflowed, a reset. */
		if (read(fd, &b, 1) < 0 && errno != ECONNRESET) {
			perror("tcpchurn: read");
			return -1;
		}
		close(fd);
		made++;
	}
	return made;
}

static int client(const char *addr, const char *port, double seconds, int procs)
{
	struct addrinfo *ai = resolve(addr, port, 0);
	long *made = mmap(NULL, procs * sizeof(*made), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double end = now() + seconds;
	long total = 0;
	int rc = 0, st;
	pid_t parent = getpid();

	if (made == MAP_FAILED) {
		perror("tcpchurn: mmap");
		return 1;
	}
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("tcpchurn: fork");
			return 1;
		}
		if (pid == 0) {
			/* Killing the client (the test's clean-up) stops its loops too. */
			if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
				_exit(1);
			made[i] = churn(ai, end);
			_exit(made[i] < 0);
		}
	}
	while (wait(&st) > 0)
		rc |= !WIFEXITED(st) || WEXITSTATUS(st);
	for (int i = 0; i < procs; i++)
		total += made[i] > 0 ? made[i] : 0;
	printf("%ld\n", total);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "client") && atoi(argv[5]) > 0)
		return client(argv[2], argv[3], atof(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: tcpchurn server ADDR PORT | "
			"tcpchurn client ADDR PORT SECONDS PROCS\n");
	return 2;
}
