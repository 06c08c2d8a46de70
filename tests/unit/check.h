/* SPDX-License-Identifier: GPL-2.0-only */
/* Minimal TAP-style unit test helpers: each TEST prints "ok - name" or "not ok - name". */
#ifndef NETSTACK_CHECK_H
#define NETSTACK_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failed_total;
static int check_case_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			check_case_failed = 1;                                                     \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_)) {                                                \
			fprintf(stderr, "  %s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,         \
				a_ ? a_ : "(null)", b_ ? b_ : "(null)");                           \
			check_case_failed = 1;                                                     \
		}                                                                                  \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		check_case_failed = 0;                                                             \
		fn();                                                                              \
		printf("%s - %s\n", check_case_failed ? "not ok" : "ok", #fn);                     \
		check_failed_total += check_case_failed;                                           \
	} while (0)

#define CHECK_EXIT() return check_failed_total ? 1 : 0

#endif
