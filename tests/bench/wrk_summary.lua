-- SPDX-License-Identifier: GPL-2.0-only
-- wrk script for tests/bench/scrape.sh: after the run, one line
-- "RESULT p50_ms p99_ms requests_per_s errors bytes_per_request" (errors include non-2xx).
done = function(summary, latency, requests)
	local e = summary.errors
	local n = math.max(summary.requests, 1)
	io.write(string.format("RESULT %.3f %.3f %.1f %d %d\n", latency:percentile(50) / 1000,
		latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6),
		e.connect + e.read + e.write + e.status + e.timeout, summary.bytes / n))
end
