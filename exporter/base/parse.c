// SPDX-License-Identifier: GPL-2.0-only
/* Value parsers every configuration section shares: a leaf, it uses nothing of the exporter. */
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"

int parse_bool(const char *s, bool *out, char *err, size_t errlen)
{
	if (!strcmp(s, "true")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "false")) {
		*out = false;
		return 0;
	}
	snprintf(err, errlen, "expected true or false, got '%s'", s);
	return -EINVAL;
}

int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out, char *err, size_t errlen)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v < min || v > max) {
		snprintf(err, errlen, "expected a whole number from %u to %u, got '%s'", min, max,
			 s);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* "a, b, c" into buf, or "a, b and c" with with_and. */
static void join_names(char *buf, size_t len, const char *const *names, size_t n, bool with_and)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		const char *sep = !i ? "" : (with_and && i + 1 == n) ? " and " : ", ";

		used += snprintf(buf + used, len - used, "%s%s", sep, names[i]);
	}
}

int parse_label_list(const char *s, const char *const *required,
		     const struct label_option *optional, size_t n_optional, unsigned *mask,
		     char *err, size_t errlen)
{
	char buf[256], names[256], *save, *tok;
	const char *known[32];
	size_t n_req = 0, n_known = 0;
	unsigned m = 0;
	uint64_t seen = 0; /* one bit per required name */

	while (required[n_req])
		n_req++;
	if (strlen(s) >= sizeof(buf)) {
		snprintf(err, errlen, "list too long");
		return -EINVAL;
	}
	strcpy(buf, s);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		unsigned bit = 0;
		size_t i;

		for (i = 0; i < n_req && strcmp(tok, required[i]); i++)
			;
		if (i < n_req) {
			seen |= 1ull << i;
			continue;
		}
		for (i = 0; i < n_optional; i++)
			if (!strcmp(tok, optional[i].name))
				bit = optional[i].bit;
		if (!bit) {
			for (i = 0; i < n_req && n_known < 32; i++)
				known[n_known++] = required[i];
			for (i = 0; i < n_optional && n_known < 32; i++)
				known[n_known++] = optional[i].name;
			join_names(names, sizeof(names), known, n_known, false);
			snprintf(err, errlen, "unknown label '%s' (known: %s)", tok, names);
			return -EINVAL;
		}
		m |= bit;
	}
	if (seen != (1ull << n_req) - 1) {
		join_names(names, sizeof(names), required, n_req, true);
		snprintf(err, errlen, "labels must include %s", names);
		return -EINVAL;
	}
	*mask = m;
	return 0;
}

int parse_listen_address(const char *addr, struct sockaddr_storage *ss, bool *any)
{
	char host[128];
	const char *colon = strrchr(addr, ':');
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
	size_t hl;
	char *end;

	if (!colon || !colon[1] || strtoul(colon + 1, &end, 10) > 65535 || *end)
		return -EINVAL;
	hl = colon - addr;
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = 0;
	*any = !hl;
	if (getaddrinfo(hl ? host : "::", colon + 1, &hints, &res))
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}
