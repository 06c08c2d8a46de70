// SPDX-License-Identifier: GPL-2.0-only
/*
 * pbsample: a fixed protobuf exposition on stdout, rendered by the exposition library (linked)
 * for a reader that is not ours to check (tests/integration/protobuf.sh serves it to a real
 * Prometheus): t_seconds, classic buckets and native ones of schema 0 at indexes -10, -7, -3
 * and -2 (gaps of 2 and 3: one span, then a second); e_seconds, native with no observation;
 * c_total, a counter of 5.
 */
#include <stdio.h>

#include "metrics.h"

int main(void)
{
	static const double bounds[] = { 0.001, 0.01, 0.1 };
	static const uint64_t classic[] = { 10, 20, 30, 40 }, zero[4];
	/* Bucket i of schema 0 holds (2^(i-1), 2^i]: -10 is (1/2048, 1/1024]. */
	static const uint64_t native[] = { 10, 0, 0, 20, 0, 0, 0, 30, 40 };
	const struct native_hist nh = { 0, 1e-6, 0, -10, native, 9 };
	const struct native_hist empty = { 3, 1e-6, 0, 0, NULL, 0 };
	struct mbuf m = { 0 };
	struct expo e;

	expo_init(&e, &m, FORMAT_PROTOBUF);
	expo_family(&e, "t_seconds", METRIC_HISTOGRAM, "t");
	expo_histogram_native(&e, NULL, bounds, classic, 3, 12.5, &nh);
	expo_family(&e, "e_seconds", METRIC_HISTOGRAM, "e");
	expo_histogram_native(&e, NULL, bounds, zero, 3, 0, &empty);
	expo_family(&e, "c_total", METRIC_COUNTER, "c");
	expo_u64(&e, NULL, 5);
	expo_finish(&e);
	if (m.oom || fwrite(m.data, 1, m.len, stdout) != m.len || fflush(stdout))
		return 1;
	mbuf_free(&m);
	return 0;
}
