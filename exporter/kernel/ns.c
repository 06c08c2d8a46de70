// SPDX-License-Identifier: GPL-2.0-only
/* Where processes sit: the node's network namespaces and the cgroup2 hierarchy's mount. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/ns.h"

bool netns_list_has(const struct netns_list *l, ino_t ino)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].ino == ino)
			return true;
	return false;
}

static int netns_add(struct netns_list *l, const char *path)
{
	struct stat st;

	/* Gone meanwhile, or not ours to read: the caller tells whether it mattered. */
	if (stat(path, &st) || st.st_dev != l->nsfs)
		return 0;
	if (netns_list_has(l, st.st_ino))
		return 0;
	if (strlen(path) >= sizeof(l->v[0].path))
		return -ENAMETOOLONG;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct netns_ref *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].ino = st.st_ino;
	strcpy(l->v[l->n++].path, path);
	return 0;
}

int netns_list_build(struct netns_list *l)
{
	const char *const dirs[] = { "/run/netns", "/proc" };
	char path[sizeof(l->v[0].path)];
	struct stat st;
	int err;

	memset(l, 0, sizeof(*l));
	if (stat("/proc/self/ns/net", &st))
		return -errno;
	l->nsfs = st.st_dev;
	l->self = st.st_ino;
	err = netns_add(l, "/proc/self/ns/net");
	for (size_t d = 0; d < 2 && !err; d++) {
		DIR *dir = opendir(dirs[d]);
		struct dirent *de;

		while (dir && !err && (de = readdir(dir))) {
			if (de->d_name[0] == '.')
				continue;
			if (d == 1 && (de->d_name[0] < '0' || de->d_name[0] > '9'))
				continue;
			snprintf(path, sizeof(path), d ? "/proc/%s/ns/net" : "/run/netns/%s",
				 de->d_name);
			err = netns_add(l, path);
		}
		if (dir)
			closedir(dir);
	}
	return err;
}

void netns_list_free(struct netns_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Undo the \ooo escapes of /proc/self/mountinfo paths in place. */
static void unescape_octal(char *s)
{
	char *out = s;

	for (; *s; s++, out++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out = *s;
		}
	}
	*out = '\0';
}

int cgroup2_root(char *path, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], root[PATH_MAX], mnt[PATH_MAX], fstype[64];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		/* id parent dev root mountpoint options [optional...] - fstype source ... */
		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    sscanf(sep, " - %63s", fstype) != 1)
			continue;
		if (strcmp(fstype, "cgroup2") || strcmp(root, "/"))
			continue;
		unescape_octal(mnt);
		if (strlen(mnt) < len) {
			strcpy(path, mnt);
			ret = 0;
		}
		break;
	}
	fclose(f);
	return ret;
}
