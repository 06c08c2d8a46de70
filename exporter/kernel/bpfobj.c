// SPDX-License-Identifier: GPL-2.0-only
/* What any BPF object of ours needs beside libbpf: the collectors' and the pod walk's. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/bpfobj.h"

void skeleton_release(const struct bpf_object_skeleton *s)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)s->data + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)s->data + s->data_sz) & ~(page - 1);

	/* Only pages wholly inside the object: the binary's other data stays. */
	if (end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
}

void autoload_only(struct bpf_object *obj, struct bpf_program *const *keep, size_t n)
{
	struct bpf_program *p;
	size_t i;

	bpf_object__for_each_program(p, obj) {
		for (i = 0; i < n && keep[i] != p; i++)
			;
		bpf_program__set_autoload(p, i < n);
	}
}
