"""feedbench.py's measures: the clock, the log line, the server's memory, threads, descriptors and CPU
time from /proc, the client's own CPU time and event-loop lag, and percentiles."""

import asyncio
import math
import os
import resource
import sys
import time

now_ns = time.perf_counter_ns
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[feedbench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

# --------------------------------------------------------------------------- server probes

def read_status(pid):
    """VmRSS, VmHWM, RssAnon (KiB) and Threads of the server, from /proc/PID/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
            elif key == "Threads":
                out[key] = int(value)
    try:
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        out["fds"] = -1
    return out


def server_cpu_s(pid):
    """utime + stime of the server, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of stat); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def client_cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def server_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


class LoopLag:
    """Measures how late the client's event loop wakes up (its own contribution to latency)."""

    def __init__(self, period=0.005):
        self.period = period
        self.lags = []
        self.task = None

    async def _run(self):
        while True:
            t = time.perf_counter()
            await asyncio.sleep(self.period)
            self.lags.append(time.perf_counter() - t - self.period)

    def start(self):
        self.lags = []
        self.task = asyncio.ensure_future(self._run())

    def stop(self):
        self.task.cancel()
        lags = sorted(self.lags) or [0.0]
        return {"p50_ms": pct(lags, 50) * 1e3, "p99_ms": pct(lags, 99) * 1e3, "max_ms": lags[-1] * 1e3}


def pct(sorted_values, p):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, math.ceil(p / 100 * len(sorted_values)) - 1)
    return sorted_values[k]


def distribution(values_ns):
    v = sorted(values_ns)
    ms = lambda x: round(x / 1e6, 3)  # noqa: E731
    return {"n": len(v), "p50_ms": ms(pct(v, 50)), "p99_ms": ms(pct(v, 99)), "max_ms": ms(v[-1]) if v else None,
            "min_ms": ms(v[0]) if v else None}
