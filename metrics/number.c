/* SPDX-License-Identifier: GPL-2.0-only */
/* Numbers as the exposition formats spell them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "metrics_internal.h"

/*
 * Render like Go's strconv.FormatFloat(v, 'g', -1, 64): the shortest digits that round-trip,
 * exponent form only below 1e-4 or from 1e+6. Matching Go keeps our "le" values identical to
 * client_golang's, and OpenMetrics' canonical numbers are defined as that plus ".0" for
 * integral values. Assumes the "C" numeric locale (the exporter never calls setlocale).
 */
void fmt_double(char *buf, double v, bool canonical)
{
	int digits, exp10;

	if (isnan(v)) {
		strcpy(buf, "NaN");
		return;
	}
	if (isinf(v)) {
		strcpy(buf, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (digits = 1; digits < 17; digits++) {
		snprintf(buf, NUM_MAX, "%.*e", digits - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, NUM_MAX, "%.*e", digits - 1, v);
	exp10 = atoi(strchr(buf, 'e') + 1);
	if (exp10 >= -4 && exp10 < 6) {
		int decimals = digits - 1 - exp10;

		snprintf(buf, NUM_MAX, "%.*f", decimals > 0 ? decimals : 0, v);
	}
	if (canonical && !strpbrk(buf, ".e"))
		strcat(buf, ".0");
}

const char *u64_str(char buf[static 21], uint64_t v)
{
	char *p = buf + 20;

	*p = '\0';
	do
		*--p = '0' + v % 10;
	while (v /= 10);
	return p;
}
