/* SPDX-License-Identifier: GPL-2.0-only */
/* Value parsers every configuration section shares (parse.c, a leaf module). */
#ifndef NETSTACK_PARSE_H
#define NETSTACK_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Shared value parsers; 0 or -EINVAL with a message naming the expected form in err. */
int parse_bool(const char *s, bool *out, char *err, size_t errlen);
int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out, char *err, size_t errlen);

/* An optional label of a collector and its bit in the collector's label mask. */
struct label_option {
	const char *name;
	unsigned bit;
};

/*
 * A collector's `labels` list, names separated by commas or blanks: every name in required
 * (NULL-terminated) must appear, and each of the n_optional names that appears sets its bit
 * in *mask. 0, or -EINVAL with err set and *mask untouched.
 */
int parse_label_list(const char *s, const char *const *required,
		     const struct label_option *optional, size_t n_optional, unsigned *mask,
		     char *err, size_t errlen);

#define LISTEN_ADDRESS_FORM "expected host:port, [ipv6]:port or :port"

/* "host:port", "[v6addr]:port" or ":port" (every address, IPv6 and IPv4); 0 or -EINVAL. */
int parse_listen_address(const char *addr, struct sockaddr_storage *ss, bool *any);

#endif
