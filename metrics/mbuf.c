/* SPDX-License-Identifier: GPL-2.0-only */
/* The growable output buffer every writer of the library appends to. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define MBUF_MIN_CAP 1024

/* Room for n more bytes plus a NUL; on failure set oom so the partial output is never served. */
int mbuf_reserve(struct mbuf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return -ENOMEM;
	if (n >= SIZE_MAX - b->len) {
		b->oom = true;
		return -ENOMEM;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : MBUF_MIN_CAP;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return -ENOMEM;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

/* Keeps the allocation for the next scrape; oom is cleared so a transient failure can recover. */
void mbuf_reset(struct mbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data)
		b->data[0] = '\0';
}

void mbuf_free(struct mbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->oom = false;
}

void mbuf_write(struct mbuf *b, const void *p, size_t n)
{
	/* Called several times per series: skip the checks while the buffer has room. */
	if ((b->oom || n >= b->cap - b->len) && mbuf_reserve(b, n))
		return;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mbuf_puts(struct mbuf *b, const char *s)
{
	mbuf_write(b, s, strlen(s));
}

void mbuf_printf(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	size_t avail;
	int n;

	if (b->oom)
		return;
	avail = b->cap - b->len;
	va_start(ap, fmt);
	n = vsnprintf(b->data ? b->data + b->len : NULL, avail, fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* An encoding error leaves the output incomplete: report it like a failed write. */
		b->oom = true;
		goto out;
	}
	if ((size_t)n < avail) {
		b->len += n;
		return;
	}
	if (mbuf_reserve(b, n))
		goto out;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += n;
	return;
out:
	/* The first attempt may have overwritten the terminator with a truncated tail. */
	if (b->data)
		b->data[b->len] = '\0';
}
