// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer: the INI loader, every collector's options included, must never crash or leak. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static char path[] = "/tmp/fuzz_config.XXXXXX";
	static int fd = -1;
	struct config c;
	char err[512];

	if (fd < 0) {
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		unlink(path); /* reached through /proc/self/fd below */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	config_defaults(&c);
	if (config_load(&c, path, err, sizeof(err)) && !err[0])
		abort(); /* an error must always say what it is */
	return 0;
}
