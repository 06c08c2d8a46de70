// SPDX-License-Identifier: GPL-2.0-only
/*
 * seccomp_deny [-l] CALL[,CALL...] COMMAND [ARGS...]: run COMMAND under a seccomp filter that
 * fails the named system calls with EPERM and allows every other, as a runtime's default
 * profile does with bpf() to a process without CAP_SYS_ADMIN. Capabilities are kept. -l has the
 * kernel log each denied call (SECCOMP_FILTER_FLAG_LOG), as the exporter's own filter does.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	char *save = NULL;
	int err = 0, log = argc > 1 && !strcmp(argv[1], "-l");

	argc -= log;
	argv += log;
	if (argc < 3) {
		fprintf(stderr, "usage: seccomp_deny [-l] CALL[,CALL...] COMMAND [ARGS...]\n");
		return 2;
	}
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || (log && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1)))
		return 1;
	for (char *name = strtok_r(argv[1], ",", &save); name && !err;
	     name = strtok_r(NULL, ",", &save)) {
		int nr = seccomp_syscall_resolve_name(name);

		if (nr == __NR_SCMP_ERROR) {
			fprintf(stderr, "seccomp_deny: unknown system call '%s'\n", name);
			return 2;
		}
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	if (!err)
		err = seccomp_load(ctx);
	seccomp_release(ctx);
	if (err) {
		fprintf(stderr, "seccomp_deny: %s\n", strerror(-err));
		return 1;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "seccomp_deny: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
