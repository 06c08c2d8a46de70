/* SPDX-License-Identifier: GPL-2.0-only */
/* Gzip of a rendered body. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "metrics.h"

/*
 * Level 1: exposition text is so repetitive that the fastest level already gets most of the
 * ratio (about 6x against 8x for the default level, at a third of the CPU), and the exporter
 * should cost as little CPU as possible on the host it observes.
 */
#define GZIP_LEVEL 1

int gzip_buffer(const void *in, size_t n, struct mbuf *out)
{
	const unsigned char *src = in;
	z_stream zs;
	int rc, err = -ENOMEM;

	mbuf_reset(out);
	memset(&zs, 0, sizeof(zs));
	rc = deflateInit2(&zs, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	/* Sized so one pass normally suffices; the loop still copes if it does not. */
	if (mbuf_reserve(out, deflateBound(&zs, n)))
		goto fail;
	do {
		size_t avail;
		int flush;

		/* avail_in is 32-bit: feed larger inputs in slices. */
		if (!zs.avail_in && n) {
			size_t chunk = n > UINT_MAX ? UINT_MAX : n;

			zs.next_in = (Bytef *)src;
			zs.avail_in = chunk;
			src += chunk;
			n -= chunk;
		}
		flush = n ? Z_NO_FLUSH : Z_FINISH;
		/* Keep one byte spare for the NUL mbuf maintains. */
		if (out->cap - out->len <= 1 && mbuf_reserve(out, out->cap))
			goto fail;
		avail = out->cap - out->len - 1;
		if (avail > UINT_MAX)
			avail = UINT_MAX;
		zs.next_out = (Bytef *)out->data + out->len;
		zs.avail_out = avail;
		rc = deflate(&zs, flush);
		out->len += avail - zs.avail_out;
		/* Z_BUF_ERROR with output space left means no progress is possible. */
		if (rc == Z_STREAM_ERROR || (rc == Z_BUF_ERROR && zs.avail_out)) {
			err = -EIO;
			goto fail;
		}
	} while (rc != Z_STREAM_END);
	deflateEnd(&zs);
	out->data[out->len] = '\0';
	return 0;
fail:
	deflateEnd(&zs);
	if (out->data)
		out->data[out->len] = '\0';
	return err;
}
