// SPDX-License-Identifier: GPL-2.0-only
/*
 * Send UDP datagrams as fast as possible: udpflood ADDR[,ADDR2] PORT COUNT [SECONDS].
 * COUNT 0 means until SECONDS pass. With ADDR2 (same family, e.g. ::1,::ffff:127.0.0.1 for
 * IPv6 and IPv4 from one socket) the datagrams alternate between the two. Prints the number of
 * datagrams the kernel accepted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST }, *ai[2];
	struct mmsghdr msgs[BATCH];
	struct iovec iov;
	char payload[16] = "netstack-flood";
	unsigned long long count, sent = 0;
	double seconds, end;
	int fd;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: udpflood ADDR PORT COUNT [SECONDS]\n");
		return 2;
	}
	count = strtoull(argv[3], NULL, 10);
	seconds = argc == 5 ? atof(argv[4]) : 0;
	char *second = strchr(argv[1], ',');

	if (second)
		*second++ = '\0';
	if (getaddrinfo(argv[1], argv[2], &hints, &ai[0]) ||
	    getaddrinfo(second ? second : argv[1], argv[2], &hints, &ai[1]) ||
	    ai[0]->ai_family != ai[1]->ai_family) {
		fprintf(stderr, "udpflood: bad address %s%s%s port %s\n", argv[1],
			second ? "," : "", second ? second : "", argv[2]);
		return 2;
	}
	fd = socket(ai[0]->ai_family, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udpflood: socket");
		return 1;
	}
	iov.iov_base = payload;
	iov.iov_len = sizeof(payload);
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_name = ai[i % 2]->ai_addr;
		msgs[i].msg_hdr.msg_namelen = ai[i % 2]->ai_addrlen;
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	end = seconds > 0 ? now() + seconds : 0;
	while ((!count || sent < count) && (!end || now() < end)) {
		unsigned n = BATCH;
		int r;

		if (count && count - sent < n)
			n = count - sent;
		r = sendmmsg(fd, msgs, n, 0);
		if (r < 0) {
			/* Unreachable errors from earlier datagrams: keep sending. */
			if (errno == ECONNREFUSED || errno == ENOBUFS || errno == EAGAIN)
				continue;
			perror("udpflood: sendmmsg");
			return 1;
		}
		sent += r;
	}
	printf("%llu\n", sent);
	freeaddrinfo(ai[0]);
	freeaddrinfo(ai[1]);
	close(fd);
	return 0;
}
