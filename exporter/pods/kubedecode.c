// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Kubernetes API client's decoders (kubedecode.h): pods, watch lines and events, streamed
 * PodLists, the back-off. No I/O and no lock: the unit tests and fuzzers drive them alone.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pods/kubedecode.h"

static const char *jstr(struct json_object *o, const char *a, const char *b)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, a, &x))
		return NULL;
	if (b && !json_object_object_get_ex(x, b, &x))
		return NULL;
	return json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

static bool space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The JSON value s[0..n) holds, nothing but whitespace around it; NULL when it is none. */
static struct json_object *parse_whole(const char *s, size_t n)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (n > INT_MAX || memchr(s, '\0', n) || !(tok = json_tokener_new_ex(64)))
		return NULL;
	o = json_tokener_parse_ex(tok, s, (int)n);
	for (size_t i = o ? json_tokener_get_parse_end(tok) : n; i < n; i++) {
		if (!space(s[i])) {
			json_object_put(o);
			o = NULL;
			break;
		}
	}
	json_tokener_free(tok);
	return o;
}

int kube_pod_decode(struct json_object *o, const char *node, struct pod *p)
{
	const char *uid = jstr(o, "metadata", "uid"), *name = jstr(o, "metadata", "name");
	const char *ns = jstr(o, "metadata", "namespace"), *on = jstr(o, "spec", "nodeName");
	struct json_object *status, *cs;

	memset(p, 0, sizeof(*p));
	if (!uid || !name || !ns || strlen(uid) != POD_UID_LEN)
		return -EBADMSG;
	if (node && *node && on && strcmp(on, node))
		return -ENOENT;
	strcpy(p->uid, uid);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	if (!json_object_object_get_ex(o, "status", &status) ||
	    !json_object_object_get_ex(status, "containerStatuses", &cs) ||
	    !json_object_is_type(cs, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(cs) && p->nc < MAX_CONTAINERS; i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		const char *id = jstr(c, "containerID", NULL), *cn = jstr(c, "name", NULL);
		const char *sep = id ? strstr(id, "://") : NULL; /* "containerd://<id>" */

		if (!sep || !cn)
			continue;
		snprintf(p->c[p->nc].id, sizeof(p->c[0].id), "%s", sep + 3);
		snprintf(p->c[p->nc].name, sizeof(p->c[0].name), "%s", cn);
		p->nc++;
	}
	return 0;
}

/* Append to a buffer growing by doubling up to max; 0, -EMSGSIZE past max, or -ENOMEM. */
static int append(char **buf, size_t *len, size_t *cap, size_t max, const char *s, size_t n)
{
	if (n > max - *len)
		return -EMSGSIZE;
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 4096;
		char *b;

		while (c < *len + n)
			c *= 2;
		c = c < max ? c : max;
		b = realloc(*buf, c);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	return 0;
}

int kube_lines_feed(struct kube_lines *l, const char *data, size_t n,
		    int (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t k = nl ? (size_t)(nl - data) : n;
		int rc = 0;

		/* Only the new bytes are searched: a line in many chunks costs its length once. */
		if (!nl || l->len) {
			rc = append(&l->buf, &l->len, &l->cap, KUBE_OBJECT_MAX, data, k);
			if (rc)
				return rc;
			if (!nl)
				return 0;
			if (l->len)
				rc = fn(arg, l->buf, l->len);
			l->len = 0;
		} else if (k) {
			rc = fn(arg, data, k); /* whole in this chunk: no copy */
		}
		if (rc)
			return rc;
		data += k + 1;
		n -= k + 1;
	}
	return 0;
}

void kube_lines_reset(struct kube_lines *l)
{
	l->len = 0;
	if (l->cap > (64u << 10)) {
		free(l->buf);
		l->buf = NULL;
		l->cap = 0;
	}
}

int kube_event_decode(const char *line, size_t len, const char *node, struct kube_event *ev)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	struct json_object *root = parse_whole(line, len), *obj, *code;
	const char *type = root ? jstr(root, "type", NULL) : NULL, *rv;
	int ret = -EBADMSG;
	size_t t;

	memset(ev, 0, sizeof(*ev));
	if (!type || !json_object_object_get_ex(root, "object", &obj) ||
	    !json_object_is_type(obj, json_type_object))
		goto out;
	for (t = 0; t < sizeof(types) / sizeof(types[0]) && strcmp(type, types[t]); t++)
		;
	if (t == sizeof(types) / sizeof(types[0]))
		goto out;
	ev->type = t;
	if (ev->type == KE_ERROR) {
		/* A Status object: its code says what (410: the resourceVersion is too old). */
		if (json_object_object_get_ex(obj, "code", &code))
			ev->code = json_object_get_int(code);
		ret = 0;
		goto out;
	}
	rv = jstr(obj, "metadata", "resourceVersion");
	if (rv && strlen(rv) >= sizeof(ev->rv))
		goto out;
	snprintf(ev->rv, sizeof(ev->rv), "%s", rv ? rv : "");
	if (ev->type != KE_BOOKMARK)
		ev->has_pod = !kube_pod_decode(obj, node, &ev->pod);
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

void kube_list_init(struct kube_list *d, const char *node,
		    void (*fn)(void *arg, const struct pod *p), void *arg)
{
	memset(d, 0, sizeof(*d));
	d->node = node;
	d->fn = fn;
	d->arg = arg;
}

void kube_list_free(struct kube_list *d)
{
	free(d->skel);
	free(d->item);
	d->skel = d->item = NULL;
	d->skel_cap = d->item_cap = 0;
}

static void list_item(struct kube_list *d, struct json_object *o)
{
	struct pod p;

	if (!kube_pod_decode(o, d->node, &p)) {
		d->fn(d->arg, &p);
		d->pods++;
	}
}

static void finish_item(struct kube_list *d)
{
	struct json_object *o = parse_whole(d->item, d->item_len);

	d->in_item = false;
	d->item_len = 0;
	if (!o) {
		d->bad = true;
		return;
	}
	list_item(d, o);
	json_object_put(o);
}

/* Bytes into the item being read, or else the skeleton. */
static void emit(struct kube_list *d, const char *s, size_t n)
{
	int err = d->in_item
			  ? append(&d->item, &d->item_len, &d->item_cap, KUBE_OBJECT_MAX, s, n)
			  : append(&d->skel, &d->skel_len, &d->skel_cap, KUBE_SKELETON_MAX, s, n);

	if (err) {
		d->bad = true;
		d->err = err;
	}
}

/*
 * A byte of the top-level object: into the item being read, or the skeleton. The elements of
 * the top-level "items" array go one by one to finish_item; commas between them are dropped,
 * so the skeleton keeps "items":[].
 */
static void list_byte(struct kube_list *d, char c)
{
	if (d->in_str) {
		if (d->esc)
			d->esc = false;
		else if (c == '\\')
			d->esc = true;
		else if (c == '"')
			d->in_str = d->in_key = false;
		else if (d->in_key && d->key_len < sizeof(d->key))
			d->key[d->key_len++] = c;
		if (d->in_key && c == '\\')
			d->key_len =
				sizeof(d->key); /* spelt with escapes: not the key we look for */
		goto out;
	}
	if (!d->started) {
		if (space(c))
			return;
		d->started = true;
		d->bad = c != '{';
	}
	if (d->in_items && d->depth == 2 && !d->in_item) {
		if (space(c) || c == ',')
			return;
		if (c == ']') {
			d->in_items = false;
			d->depth--;
			goto out;
		}
		d->in_item = true;
	} else if (d->in_item && d->depth == 2 && (c == ',' || c == ']')) {
		finish_item(d);
		if (c == ']') {
			d->in_items = false;
			d->depth--;
			goto out;
		}
		return;
	}
	switch (c) {
	case '"':
		d->in_str = true;
		if (d->depth == 1 && d->want_key) {
			d->in_key = true;
			d->key_len = 0;
		}
		break;
	case '[':
		if (d->depth == 1 && d->key_items) {
			d->in_items = true;
			d->key_items = false;
		}
		/* fall through */
	case '{':
		if (++d->depth > 1000)
			d->bad = true;
		d->want_key = d->depth == 1 && c == '{';
		break;
	case '}':
	case ']':
		d->bad |= --d->depth < 0;
		break;
	case ',':
		d->want_key = d->depth == 1;
		break;
	case ':':
		if (d->depth == 1 && d->want_key)
			d->key_items = d->key_len == 5 && !memcmp(d->key, "items", 5);
		d->want_key = false;
		break;
	}
out:
	emit(d, &c, 1);
}

int kube_list_feed(struct kube_list *d, const char *data, size_t n)
{
	for (size_t i = 0; i < n && !d->bad;) {
		size_t j = i;

		/* Most bytes are inside strings: copied by the run, not one by one. */
		if (d->in_str && !d->esc && !d->in_key) {
			while (j < n && data[j] != '"' && data[j] != '\\' && data[j])
				j++;
			if (j > i) {
				emit(d, data + i, j - i);
				i = j;
				continue;
			}
		}
		if (!(d->bad = data[i] == '\0'))
			list_byte(d, data[i]);
		i++;
	}
	return !d->bad ? 0 : d->err ? d->err : -EBADMSG;
}

int kube_list_finish(struct kube_list *d)
{
	struct json_object *root, *items;
	const char *rv, *cont;
	int ret = -EBADMSG;

	if (d->bad || !d->started || d->depth || d->in_str)
		return -EBADMSG;
	root = parse_whole(d->skel, d->skel_len);
	if (!root || !json_object_object_get_ex(root, "items", &items) ||
	    !(json_object_is_type(items, json_type_array) ||
	      json_object_is_type(items, json_type_null)))
		goto out;
	/* Items the streaming pass did not recognise (a key spelt with escapes) are here. */
	for (size_t i = 0; items && i < json_object_array_length(items); i++)
		list_item(d, json_object_array_get_idx(items, i));
	rv = jstr(root, "metadata", "resourceVersion");
	cont = jstr(root, "metadata", "continue");
	if ((rv && strlen(rv) >= sizeof(d->rv)) || (cont && strlen(cont) >= sizeof(d->cont)))
		goto out;
	snprintf(d->rv, sizeof(d->rv), "%s", rv ? rv : "");
	snprintf(d->cont, sizeof(d->cont), "%s", cont ? cont : "");
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

double kube_backoff_next(struct kube_backoff *b, double now, double u)
{
	double d;

	if (!b->delay || now - b->last > KUBE_BACKOFF_RESET)
		b->delay = KUBE_BACKOFF_INIT;
	d = b->delay * (1 + u);
	b->delay = b->delay * 2 < KUBE_BACKOFF_CAP ? b->delay * 2 : KUBE_BACKOFF_CAP;
	b->last = now;
	return d;
}
