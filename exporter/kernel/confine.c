// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exporter's own seccomp filter (libseccomp), installed once start-up is over. The runtime
 * runs it Unconfined because the runtimes' default profiles disagree on bpf() (docs/security.md).
 */
#include <errno.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "kernel/privs.h"
#include "kernel/confine.h"

/*
 * What the exporter calls once started: serving HTTP and TLS, scrapes (bpf() on the maps), a
 * reload restarting collectors (BTF, bpf(), the cgroup, setns() for RTT's existing sockets,
 * pins), the pod source (libcurl, GnuTLS, the resolver), the events consumer,
 * logging, signals and exit. Names a libseccomp or an architecture does not know are skipped:
 * aarch64 has no open(), x86_64 no renameat().
 */
/* Grouped by purpose, as the comments say. */
/* clang-format off */
static const char *const allowed[] = {
	/* memory */
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
	/* files, pins, /proc and /sys */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "open", "openat", "close",
	"fstat", "stat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "lseek", "fcntl",
	"ioctl", "getdents64", "readlink", "readlinkat", "access", "faccessat", "faccessat2",
	"unlink", "unlinkat", "mkdir", "mkdirat", "rename", "renameat", "renameat2", "dup", "dup2",
	"dup3", "pipe2", "fsync", "fdatasync", "ftruncate",
	/*
	 * A collector a reload turns off has its pin directory removed: x86_64 glibc's rmdir()
	 * is rmdir(2) (aarch64 has only unlinkat, above).
	 */
	"rmdir",
	/*
	 * libbpf 1.4 and later (Debian 13: 1.5.0) open a BPF object with a placeholder file
	 * descriptor for each map and program, an empty memfd, replaced (dup3) once loaded.
	 */
	"memfd_create",
	/* network: HTTP, TLS, the API server, DNS, netlink for interface names */
	"socket", "socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname",
	"getpeername", "setsockopt", "getsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg",
	"sendmmsg", "recvmmsg", "shutdown",
	/* waiting */
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd2", "nanosleep", "clock_nanosleep",
	"futex", "sched_yield",
	/* threads (HTTP, consumer, resolver, reload) and exit */
	"clone", "clone3", "set_robust_list", "rseq", "set_tid_address", "exit", "exit_group",
	"sched_getaffinity", "prctl",
	/* time, identity, limits, randomness */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "getrandom", "getpid", "gettid",
	"getuid", "geteuid", "getgid", "getegid", "uname", "sysinfo", "getrusage", "getrlimit",
	"prlimit64", "capget",
	/* signals */
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigtimedwait", "sigaltstack",
	"tgkill", "restart_syscall",
	/*
	 * BPF: scrapes, reloads, RTT's existing sockets. No perf_event_open(): every program
	 * attaches through bpf() (tp_btf, sockops, iter), and the systemd unit denies it too.
	 */
	"bpf", "setns",
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* sanitizer builds only: the leak check at exit stops the threads under ptrace */
	"ptrace", "wait4", "waitid", "getppid", "kill", "sched_setaffinity", "process_vm_readv",
	"getdents",
#endif
};
/* clang-format on */

int confine_self(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int err = ctx ? 0 : -ENOMEM;
	size_t n = 0;

	/*
	 * EPERM rather than a kill: a call off the list fails where it is made, the exporter
	 * keeps serving, and the kernel logs it (CTL_LOG). Another ABI is never the exporter's.
	 */
	if (!err)
		err = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (!err)
		err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (!err)
		err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
	for (size_t i = 0; !err && i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		int nr = seccomp_syscall_resolve_name(allowed[i]);

		if (nr < 0) /* unknown, or a pseudo number: not a call on this architecture */
			continue;
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		n += !err;
	}
	if (!err)
		err = seccomp_load(ctx);
	seccomp_release(ctx);
	if (err) {
		log_error(
			"security: cannot install the seccomp filter: %s (set [security] seccomp = "
			"false to run without it)",
			strerror(-err));
		return err;
	}
	log_info("security: seccomp filter installed on every thread (%zu system calls allowed)",
		 n);
	return 0;
}

int confine_mode(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	int mode = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	if (f)
		fclose(f);
	return mode;
}

const char *confine_denied_hint(int err, char *buf, size_t len)
{
	bool caps = privs_held(1ull << CAP_BPF | 1ull << CAP_PERFMON) ||
		    privs_held(1ull << CAP_SYS_ADMIN);

	if (err != -EPERM || !caps)
		return "";
	if (confine_mode() == 2)
		snprintf(buf, len,
			 "; not for want of privileges: a seccomp filter denies the call; run the "
			 "container with securityContext.seccompProfile type Unconfined (the "
			 "exporter confines itself), see docs/deploy.md#seccomp");
	else
		snprintf(buf, len,
			 "; not for want of privileges, and no seccomp filter is set: an LSM "
			 "(SELinux, AppArmor, Lockdown) denies the call, see "
			 "docs/deploy.md#seccomp");
	return buf;
}
