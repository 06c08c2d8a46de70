// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: a watch stream, cut into chunks of sizes the input picks, through the line
 * splitter: every line it reports must be exactly the next line of the input (no '\n', none
 * lost or merged, empty ones skipped), what is left over the unfinished last line; each line
 * then goes through the event and pod decoders, which must never crash or leak.
 */
#define _GNU_SOURCE /* memrchr */
#include <stdlib.h>
#include <string.h>

#include "pods/kubedecode.h"

struct expect {
	const char *in, *end; /* the input, and where the next line starts */
	unsigned events;
};

static int line(void *arg, const char *s, size_t len)
{
	struct expect *x = arg;
	struct kube_event ev;
	const char *nl;

	while (x->in < x->end && *x->in == '\n')
		x->in++;
	nl = memchr(x->in, '\n', x->end - x->in);
	if (!len || !nl || (size_t)(nl - x->in) != len || memcmp(x->in, s, len))
		abort(); /* not the input's next line */
	x->in = nl + 1;
	if (!kube_event_decode(s, len, "node-1", &ev)) {
		if (ev.type > KE_ERROR || strlen(ev.rv) >= sizeof(ev.rv))
			abort();
		if (ev.has_pod && (strlen(ev.pod.uid) != POD_UID_LEN || ev.pod.nc > MAX_CONTAINERS))
			abort();
		x->events++;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct kube_lines l = { 0 };
	struct expect x;
	const char *in, *last;
	size_t chunk, tail;

	if (size < 1)
		return 0;
	chunk = data[0] % 16 + 1;
	in = (const char *)data + 1;
	size--;
	x.in = in;
	x.end = in + size;
	x.events = 0;
	for (size_t off = 0, i = 0; off < size; off += chunk, i++) {
		chunk = (chunk * 7 + i) % 23 + 1; /* irregular, from the input's first byte */
		if (kube_lines_feed(&l, in + off, size - off < chunk ? size - off : chunk, line,
				    &x))
			abort(); /* lines here are far below the limit */
	}
	/* What is left: the bytes after the last '\n'. */
	last = memrchr(in, '\n', size);
	tail = last ? (size_t)(in + size - last - 1) : size;
	if (l.len != tail || (tail && memcmp(l.buf, in + size - tail, tail)))
		abort();
	kube_lines_reset(&l);
	free(l.buf);
	return 0;
}
