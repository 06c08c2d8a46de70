// SPDX-License-Identifier: GPL-2.0-only
/* Least privilege after the BPF programs are attached: raw capset/prctl, no libcap needed. */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "kernel/privs.h"

uint64_t privs_runtime_caps(void)
{
	return 1ull << CAP_BPF | 1ull << CAP_PERFMON | 1ull << CAP_NET_ADMIN | 1ull << CAP_SYSLOG;
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int n = CAP_LAST_CAP;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = CAP_LAST_CAP;
		fclose(f);
	}
	return n < 63 ? n : 63;
}

static int get_caps(struct __user_cap_header_struct *h, struct __user_cap_data_struct d[2])
{
	h->version = _LINUX_CAPABILITY_VERSION_3;
	h->pid = 0;
	return syscall(SYS_capget, h, d) ? -errno : 0;
}

bool privs_held(uint64_t caps)
{
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[2];

	return !get_caps(&h, d) &&
	       (((uint64_t)d[1].effective << 32 | d[0].effective) & caps) == caps;
}

static int set_caps(uint64_t keep)
{
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[2];

	if (get_caps(&h, d))
		return -errno;
	/* Only what we hold can be kept. */
	keep &= (uint64_t)d[1].permitted << 32 | d[0].permitted;
	for (int i = 0; i < 2; i++) {
		d[i].effective = d[i].permitted = (uint32_t)(keep >> (32 * i));
		d[i].inheritable = 0;
	}
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

int privs_drop(uint64_t keep, const char *user)
{
	struct passwd *pw = NULL;

	if (user && *user) {
		pw = getpwnam(user);
		if (!pw) {
			log_error("security: no such user '%s'", user);
			return -ENOENT;
		}
	}
	/*
	 * Bounding set first: dropping from it needs CAP_SETPCAP, which goes next. Without it
	 * (started unprivileged) no_new_privs below keeps exec from using the bounding set.
	 */
	for (int cap = 0; cap <= last_cap() && privs_held(1ull << CAP_SETPCAP); cap++)
		if (!(keep >> cap & 1) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			goto fail;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (pw) {
		/* Keep permitted capabilities across setuid; effective ones come back below. */
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups(0, NULL) ||
		    setgid(pw->pw_gid) || setuid(pw->pw_uid))
			goto fail;
	}
	if (set_caps(keep) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		goto fail;
	log_info("security: kept capabilities 0x%llx%s%s, no_new_privs set",
		 (unsigned long long)keep, pw ? ", running as " : "", pw ? user : "");
	return 0;
fail:
	return log_errno("security: cannot drop privileges");
}
