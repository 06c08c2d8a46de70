// SPDX-License-Identifier: GPL-2.0-only
/*
 * Make TCP resets as fast as possible: rstflood ADDR PORT SECONDS. Connects to ADDR:PORT, where
 * nothing may listen, over and over: each connect is one SYN answered by a RST without a
 * socket (NO_SOCKET), which the client receives. Prints the number of refused connects.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai;
	unsigned long long refused = 0;
	double end;

	if (argc != 4) {
		fprintf(stderr, "usage: rstflood ADDR PORT SECONDS\n");
		return 2;
	}
	if (getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		fprintf(stderr, "rstflood: bad address %s port %s\n", argv[1], argv[2]);
		return 2;
	}
	end = now() + atof(argv[3]);
	while (now() < end) {
		for (int i = 0; i < 64; i++) {
			int fd = socket(ai->ai_family, SOCK_STREAM, 0);

			if (fd < 0) {
				perror("rstflood: socket");
				return 1;
			}
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno == ECONNREFUSED)
				refused++;
			close(fd);
		}
	}
	freeaddrinfo(ai);
	printf("%llu\n", refused);
	return 0;
}
