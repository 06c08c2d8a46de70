// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: cgroup paths (as the kernel's process walk reports them) through the kubepods
 * parser. What it accepts must be a dashed lower-case pod UID and an empty or 12..64 hex-digit
 * container ID.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pods/kubepods.h"

static void valid(const struct kube_ids *ids)
{
	size_t n = strlen(ids->container_id);

	if (strlen(ids->pod_uid) != POD_UID_LEN || (n && (n < 12 || n > CONTAINER_ID_MAX)))
		abort();
	for (int i = 0; i < POD_UID_LEN; i++) {
		char c = ids->pod_uid[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? c != '-' : !(isdigit((unsigned char)c) || (c >= 'a' && c <= 'f')))
			abort();
	}
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)ids->container_id[i]))
			abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static char text[1 << 16]; /* a path, as the resolver gets it: a string */
	struct kube_ids ids;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (!kubepods_parse(text, &ids))
		valid(&ids);
	return 0;
}
