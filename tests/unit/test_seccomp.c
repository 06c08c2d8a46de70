// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the exporter's own seccomp filter (exporter/kernel/confine.c), each in a forked child
 * that installs it: calls on the list work (a reload's rmdir and memfd_create too), calls off
 * it fail with EPERM (each succeeds unconfined), a thread started before the filter is confined
 * too, another ABI kills the process, and the hint for a denied bpf() names seccomp and the docs.
 */
#define _GNU_SOURCE
#include "check.h"
#include "kernel/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Sanitizer builds allow ptrace (the leak check at exit). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED
#define ALL_WORK 3
#else
#define ALL_WORK 7
#endif

/* Runs fn in a child; its exit status, or 128 + the signal that ended it. */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Off the list, each of these succeeds unconfined (root or not): 0 when all are denied. */
static int denied_calls(void)
{
	int bad = 0;

	errno = 0;
	bad |= (chdir("/") != -1 || errno != EPERM) << 0;
	errno = 0;
	bad |= (unshare(0) != -1 || errno != EPERM) << 1;
#ifndef SANITIZED
	errno = 0;
	bad |= (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != -1 || errno != EPERM) << 2;
#endif
	return bad;
}

static int allowed_then_denied(void)
{
	char buf[16];
	int fd;

	if (confine_self())
		return 100;
	if (confine_mode() != 2)
		return 101;
	/* On the list: files, identity, and bpf() (an unknown command: EINVAL, not EPERM). */
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0 || close(fd) || getpid() <= 0)
		return 102;
	errno = 0;
	if (syscall(SYS_bpf, -1, NULL, 0) != -1 || errno == EPERM)
		return 103;
	/*
	 * A reload removing a pin directory (ENOENT, or EROFS on a read-only root, never EPERM),
	 * libbpf 1.4+ opening an object (its placeholders).
	 */
	errno = 0;
	if (rmdir("/nonexistent-netstack-test") != -1 || errno == EPERM)
		return 104;
	fd = memfd_create("placeholder", MFD_CLOEXEC);
	if (fd < 0 || close(fd))
		return 105;
	return denied_calls();
}

static void test_allowed_and_denied(void)
{
	CHECK(in_child(denied_calls) == ALL_WORK); /* unconfined, every one works */
	CHECK(in_child(allowed_then_denied) == 0);
}

/* A thread that already runs when the filter goes on is confined as well (TSYNC). */
static int pipe_fds[2], thread_result = -1;

static void *late_thread(void *arg)
{
	char c;

	(void)arg;
	if (read(pipe_fds[0], &c, 1) == 1)
		thread_result = denied_calls();
	return NULL;
}

static int thread_confined(void)
{
	pthread_t t;

	if (pipe(pipe_fds) || pthread_create(&t, NULL, late_thread, NULL))
		return 100;
	if (confine_self() || write(pipe_fds[1], "x", 1) != 1 || pthread_join(t, NULL))
		return 101;
	return thread_result;
}

static void test_thread_started_before(void)
{
	CHECK(in_child(thread_confined) == 0);
}

#if defined(__x86_64__)
/* getpid through the x32 ABI: ENOSYS on a kernel without x32, the process killed confined. */
static int x32_call(void)
{
	return syscall(__X32_SYSCALL_BIT | __NR_getpid) == -1 ? 1 : 0;
}

static int x32_confined(void)
{
	if (confine_self())
		return 100;
	return x32_call();
}

static void test_other_abi_kills(void)
{
	CHECK(in_child(x32_call) < 128);
	CHECK(in_child(x32_confined) == 128 + SIGSYS);
}
#endif

/* As root (capabilities held), an EPERM under a filter is blamed on seccomp, not on them. */
static int hint_confined(void)
{
	char buf[300];
	const char *h;

	if (getuid() != 0)
		return 0;
	if (confine_self())
		return 100;
	h = confine_denied_hint(-EPERM, buf, sizeof(buf));
	if (!strstr(h, "seccomp") || !strstr(h, "docs/deploy.md#seccomp") ||
	    !strstr(h, "securityContext.seccompProfile") || strstr(h, "capability"))
		return 101;
	return *confine_denied_hint(-EINVAL, buf, sizeof(buf)) ? 102 : 0;
}

static void test_denied_hint(void)
{
	CHECK(in_child(hint_confined) == 0);
}

int main(void)
{
	RUN(test_allowed_and_denied);
	RUN(test_thread_started_before);
#if defined(__x86_64__)
	RUN(test_other_abi_kills);
#endif
	RUN(test_denied_hint);
	CHECK_EXIT();
}
