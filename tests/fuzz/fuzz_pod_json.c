// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: the streaming PodList decoder, fed the input whole and in chunks of sizes the
 * input picks, must come to the same verdict, pods, resourceVersion and continue token; the
 * input parsed as one JSON object goes through the pod decoder too. No crash, no leak.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "pods/kubedecode.h"

struct run {
	size_t n;
	unsigned long sum; /* over the pods' UIDs, names and containers */
};

static void pod(void *arg, const struct pod *p)
{
	struct run *r = arg;

	if (strlen(p->uid) != POD_UID_LEN || p->nc < 0 || p->nc > MAX_CONTAINERS)
		abort();
	r->n++;
	for (const char *s = p->uid; *s; s++)
		r->sum = r->sum * 31 + (unsigned char)*s;
	for (const char *s = p->name; *s; s++)
		r->sum = r->sum * 31 + (unsigned char)*s;
	for (int i = 0; i < p->nc; i++)
		r->sum += strlen(p->c[i].id) + strlen(p->c[i].name);
}

static int decode(const char *in, size_t size, size_t chunk, struct run *r, char *rv, char *cont)
{
	struct kube_list d;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	kube_list_init(&d, "node-1", pod, r);
	for (size_t off = 0; off < size && !ret; off += chunk)
		ret = kube_list_feed(&d, in + off, size - off < chunk ? size - off : chunk);
	if (!ret)
		ret = kube_list_finish(&d);
	if (!ret) {
		strcpy(rv, d.rv);
		strcpy(cont, d.cont);
	}
	if (r->n != d.pods)
		abort();
	kube_list_free(&d);
	return ret;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static char rv1[KUBE_RV_MAX], rv2[KUBE_RV_MAX];
	static char c1[KUBE_CONTINUE_MAX], c2[KUBE_CONTINUE_MAX];
	const char *in = (const char *)data;
	struct run a, b;
	struct json_tokener *tok;
	struct json_object *o;
	struct pod p;
	int ra, rb;

	ra = decode(in, size, size ? size : 1, &a, rv1, c1);
	rb = decode(in, size, size % 13 + 1, &b, rv2, c2);
	if (ra != rb || (!ra && (strcmp(rv1, rv2) || strcmp(c1, c2))))
		abort();
	/* The pods up to a failure are the same too: a decoder has no memory of chunk sizes. */
	if (a.n != b.n || a.sum != b.sum)
		abort();
	tok = json_tokener_new();
	o = tok ? json_tokener_parse_ex(tok, in, (int)size) : NULL;
	if (o && !kube_pod_decode(o, "", &p) && strlen(p.uid) != POD_UID_LEN)
		abort();
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
	return 0;
}
