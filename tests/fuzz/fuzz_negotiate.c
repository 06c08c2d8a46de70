// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer: Accept and Accept-Encoding parsing, with any bytes a client may send. */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	enum metric_format f;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0; /* headers reach us NUL-terminated */
	/* Refused (406) or not, the format is one of the three. */
	(void)negotiate_format(s, &f);
	if (f != FORMAT_PROMETHEUS && f != FORMAT_OPENMETRICS && f != FORMAT_PROTOBUF)
		abort();
	if (!format_content_type(f))
		abort();
	accepts_gzip(s);
	free(s);
	return 0;
}
