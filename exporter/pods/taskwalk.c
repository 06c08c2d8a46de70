// SPDX-License-Identifier: GPL-2.0-only
/* The kernel's walk of the node's processes (bpf/tasks.bpf.c), read by the pod resolver. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernel/bpfobj.h"
#include "pods/taskwalk.h"
#include "tasks.skel.h"

#define BATCH 64 /* pairs per batch lookup: far more than a hash bucket ever holds */

struct tasks {
	struct tasks_bpf *skel;
	struct bpf_link *link; /* of walk_tasks or walk_tasks_chunked */
	int map;
	struct tasks_key keys[BATCH];
	struct tasks_val vals[BATCH];
};

struct tasks *tasks_open(bool chunked)
{
	struct tasks *t = calloc(1, sizeof(*t));
	struct bpf_program *p;
	uint32_t zero = 0;
	int err, fd;

	if (!t)
		return NULL;
	t->skel = tasks_bpf__open();
	if (!t->skel) {
		err = errno;
		goto fail;
	}
	/* Only the walk this kernel can run: bpf() refuses a program calling a helper it lacks. */
	p = chunked ? t->skel->progs.walk_tasks_chunked : t->skel->progs.walk_tasks;
	bpf_program__set_autoload(t->skel->progs.walk_tasks, !chunked);
	bpf_program__set_autoload(t->skel->progs.walk_tasks_chunked, chunked);
	err = -tasks_bpf__load(t->skel);
	if (err)
		goto fail;
	skeleton_release(t->skel->skeleton);
	fd = bpf_program__fd(p);
	if (chunked && bpf_map_update_elem(bpf_map__fd(t->skel->maps.walk_next), &zero, &fd, 0)) {
		err = errno;
		goto fail;
	}
	t->link = bpf_program__attach_iter(p, NULL);
	if (!t->link) {
		err = errno;
		goto fail;
	}
	t->map = bpf_map__fd(t->skel->maps.tasks);
	return t;
fail:
	tasks_close(t);
	errno = err;
	return NULL;
}

void tasks_close(struct tasks *t)
{
	if (!t)
		return;
	bpf_link__destroy(t->link);
	tasks_bpf__destroy(t->skel);
	free(t);
}

/* Everything the walk put in the map, to fn if set; the map is empty after. */
static void drain(struct tasks *t, tasks_fn *fn, void *arg)
{
	uint32_t cursor, count;
	bool first = true;
	int err;

	do {
		count = BATCH;
		err = bpf_map_lookup_and_delete_batch(t->map, first ? NULL : &cursor, &cursor,
						      t->keys, t->vals, &count, NULL);
		first = false;
		for (uint32_t i = 0; fn && (!err || err == -ENOENT) && i < count; i++)
			fn(&t->keys[i], &t->vals[i], arg);
	} while (!err);
	/* Should a batch fail, one by one: a pair left over would outlive its processes. */
	while (err != -ENOENT && !bpf_map_get_next_key(t->map, NULL, &t->keys[0]))
		if (!bpf_map_lookup_and_delete_elem(t->map, &t->keys[0], &t->vals[0]) && fn)
			fn(&t->keys[0], &t->vals[0], arg);
}

int tasks_walk(struct tasks *t, tasks_fn *fn, void *arg, struct tasks_summary *sum)
{
	int fd = bpf_iter_create(bpf_link__fd(t->link)), err;
	ssize_t n;

	if (fd < 0)
		return -errno;
	/* One record, which the first task's run writes after its walk filled the map. */
	n = read(fd, sum, sizeof(*sum));
	err = n < 0 ? -errno : n != sizeof(*sum) ? -EIO : 0;
	close(fd);
	drain(t, err ? NULL : fn, arg);
	return err;
}
