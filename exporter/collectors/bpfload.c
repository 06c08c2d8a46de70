// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collectors/bpfload.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "kernel/pin.h"
#include "kernel/confine.h"

void skeleton_release(const struct bpf_object_skeleton *s)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)s->data + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)s->data + s->data_sz) & ~(page - 1);

	/* Only pages wholly inside the object: the binary's other data stays. */
	if (end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
}

void bpf_autoload_only(struct bpf_object *obj, struct bpf_program *const *keep, size_t n)
{
	struct bpf_program *p;
	size_t i;

	bpf_object__for_each_program(p, obj) {
		for (i = 0; i < n && keep[i] != p; i++)
			;
		bpf_program__set_autoload(p, i < n);
	}
}

int bpf_load(const struct collector_env *env, const struct bpf_object_skeleton *s,
	     const char *collector, const char *perm_hint, bool quiet)
{
	const char *hint;
	char buf[300];
	int err;

	if (pin_prepare(env->pin_root, s, collector))
		return -EINVAL; /* logged */
	err = bpf_object__load_skeleton((struct bpf_object_skeleton *)s);
	if (!err) {
		skeleton_release(s);
		return 0;
	}
	if (quiet)
		return err;
	hint = bpf_memlock_hint(env->kernel, err, buf, sizeof(buf));
	if (!*hint)
		hint = confine_denied_hint(err, buf, sizeof(buf));
	if (!*hint && perm_hint && (err == -EPERM || err == -EACCES))
		hint = perm_hint;
	log_error("%s: cannot load BPF programs: %s%s", collector, strerror(-err), hint);
	return err;
}

int bpf_attach(const struct collector_env *env, const struct bpf_object_skeleton *s,
	       const char *collector, const char *target, enum event_type type)
{
	int err = target ? bpf_object__attach_skeleton((struct bpf_object_skeleton *)s) : 0;
	char buf[300];

	if (err) {
		log_error("%s: cannot attach to %s: %s%s", collector, target, strerror(-err),
			  confine_denied_hint(err, buf, sizeof(buf)));
		return err;
	}
	if (pin_commit(env->pin_root, s, collector))
		return -EINVAL; /* logged */
	events_loaded(env->events, *s->obj, type);
	return 0;
}
