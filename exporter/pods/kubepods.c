// SPDX-License-Identifier: GPL-2.0-only
/* Pod UID and container ID from kubepods cgroup paths: pure string work, unit tested. */
#define _GNU_SOURCE /* memrchr */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pods/kubepods.h"

/* 32 hex digits in 8-4-4-4-12 groups, separated by '-' or (systemd) '_'; dashed copy to out. */
static int parse_uid(const char *s, size_t n, char *out)
{
	if (n != POD_UID_LEN)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		bool sep = i == 8 || i == 13 || i == 18 || i == 23;

		if (sep ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char)s[i])) {
			out[0] = '\0';
			return -EINVAL;
		}
		out[i] = sep ? '-' : (char)tolower((unsigned char)s[i]);
	}
	out[n] = '\0';
	return 0;
}

/* A container ID: 12 to 64 hex digits. */
static int parse_cid(const char *s, size_t n, char *out)
{
	if (n < 12 || n > CONTAINER_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static bool has_suffix(const char *s, size_t n, const char *suf, size_t *stem)
{
	size_t m = strlen(suf);

	if (n < m || memcmp(s + n - m, suf, m))
		return false;
	*stem = n - m;
	return true;
}

/* Pod cgroup component: "pod<uid>" (cgroupfs) or "kubepods[-qos]-pod<uid>.slice" (systemd). */
static int parse_pod_component(const char *s, size_t n, char *uid)
{
	size_t stem;
	const char *p;

	if (n > 3 && !memcmp(s, "pod", 3))
		return parse_uid(s + 3, n - 3, uid);
	if (!has_suffix(s, n, ".slice", &stem) || stem < POD_UID_LEN + 4)
		return -EINVAL;
	p = s + stem - POD_UID_LEN - 4;
	if (memcmp(p, "-pod", 4))
		return -EINVAL;
	return parse_uid(p + 4, POD_UID_LEN, uid);
}

/*
 * Container component: "<id>", "crio-<id>", "docker-<id>", "cri-containerd-<id>" (cgroupfs),
 * the same with ".scope" (systemd), or containerd's "prefix:name" form without a slash. The
 * conmon monitor of CRI-O ("crio-conmon-<id>") is not a container.
 */
static void parse_container_component(const char *s, size_t n, char *cid)
{
	static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-",
						"containerd-", "cri-o-" };
	size_t stem;

	cid[0] = '\0';
	if (has_suffix(s, n, ".scope", &stem))
		n = stem;
	if (n > 12 && !memcmp(s, "crio-conmon-", 12))
		return;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t m = strlen(prefixes[i]);

		if (n > m && !memcmp(s, prefixes[i], m)) {
			s += m;
			n -= m;
			break;
		}
	}
	if (parse_cid(s, n, cid))
		cid[0] = '\0';
}

int kubepods_parse(const char *path, struct kube_ids *out)
{
	const char *p = path, *end;
	bool in_kubepods = false, found = false;

	memset(out, 0, sizeof(*out));
	for (; *p; p = *end ? end + 1 : end) {
		size_t n;
		const char *colon;

		end = strchr(p, '/');
		if (!end)
			end = p + strlen(p);
		n = end - p;
		if (!n)
			continue;
		if (found) {
			parse_container_component(p, n, out->container_id);
			return 0;
		}
		if (n >= 8 && !memcmp(p, "kubepods", 8)) {
			in_kubepods = true;
			/* Not "continue": systemd pod slices start with "kubepods" too. */
		}
		if (!in_kubepods)
			continue;
		/* containerd's systemd form: "kubepods-...-pod<uid>.slice:cri-containerd:<id>". */
		colon = memchr(p, ':', n);
		if (colon) {
			const char *last = memrchr(p, ':', n);

			if (parse_pod_component(p, colon - p, out->pod_uid))
				return -ENOENT;
			parse_container_component(last + 1, end - last - 1, out->container_id);
			return 0;
		}
		if (!parse_pod_component(p, n, out->pod_uid))
			found = true;
	}
	return found ? 0 : -ENOENT;
}
