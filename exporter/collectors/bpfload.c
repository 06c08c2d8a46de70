// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>

#include "collectors/bpfload.h"
#include "kernel/kernel.h"
#include "base/log.h"
#include "kernel/pin.h"
#include "kernel/confine.h"

int collector_load(const struct collector_env *env, const struct bpf_object_skeleton *s,
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

int collector_attach(const struct collector_env *env, const struct bpf_object_skeleton *s,
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
