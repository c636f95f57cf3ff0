-- get.lua: plain GET load (targets (a) and (b) of run.sh).
--
-- The URL comes from the command line; run.sh adds `-H "Authorization: Bearer ..."` for
-- stockroom. There is deliberately no response() callback here: it would make wrk build a
-- Lua table per response, which costs wrk CPU on this 2-core machine and caps the baseline.
-- Status errors are still caught: wrk counts every response with status > 399 in
-- summary.errors.status, and a 3xx cannot happen on these routes.
--
-- done() prints one machine-readable line that run.sh parses:
--   RESULT requests=N duration_s=S rps=R errors=E socket_errors=K

function done(summary, latency, requests)
   local e = summary.errors
   local socket = e.connect + e.read + e.write + e.timeout
   local seconds = summary.duration / 1e6
   io.write(string.format(
      "RESULT requests=%d duration_s=%.3f rps=%.1f errors=%d socket_errors=%d p50_ms=%.2f p99_ms=%.2f\n",
      summary.requests, seconds, summary.requests / seconds, e.status + socket, socket,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
