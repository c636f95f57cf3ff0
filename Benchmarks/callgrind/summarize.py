#!/usr/bin/env python3
"""Reads callgrind dump files and prints, per file, its trigger, instructions (Ir), allocations and
whether the presence service's tick ran in it.

    python3 summarize.py [--per N] FILE...

Allocations are the calls the program made to malloc, calloc, realloc, posix_memalign,
aligned_alloc and memalign (callgrind records every call arc; callgrind does not replace the
allocator, so these are glibc's own). `--per N` divides both by N (a dump of N runs). The tick (`AppDatabase.applyPresence`, the write of
the devices a second's requests saw) is told by a call to it in the dump.
Output: one tab-separated line per file: trigger, Ir, allocations, tick (1 or 0).
Standard library only.
"""
import argparse
import re
import sys

ALLOCATORS = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"}
# AppDatabase.applyPresence, as Swift mangles it.
TICK = "AppDatabaseV13applyPresence"


def summarize(path):
    """(trigger, Ir, allocation calls, whether the presence tick ran) of one callgrind output file."""
    names = {}  # compressed id -> name, for fn= and cfn= (one table in callgrind's format)
    trigger = ""
    total = None
    allocations = 0
    current_callee = None
    tick = False
    expect_calls_line = False
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if expect_calls_line:
                # The line after `calls=` holds the call's inclusive cost; it is not a call of its own.
                expect_calls_line = False
                continue
            if line.startswith("desc: Trigger:"):
                trigger = line.split(":", 2)[2].strip()
            elif line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
            elif line.startswith("fn=") or line.startswith("cfn="):
                key, _, value = line.rstrip("\n").partition("=")
                match = re.match(r"\((\d+)\)(?: (.*))?$", value)
                if match:
                    name = match.group(2)
                    if name is not None:
                        names[match.group(1)] = name
                    name = names.get(match.group(1), "")
                else:
                    name = value
                if key == "cfn":
                    current_callee = re.sub(r"'\d+$", "", name)
                tick = tick or TICK in name
            elif line.startswith("calls="):
                if current_callee in ALLOCATORS:
                    allocations += int(line[6:].split()[0])
                expect_calls_line = True
    return trigger, total, allocations, tick


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per", type=int, default=1, help="divide by this many runs")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    for path in args.files:
        trigger, total, allocations, tick = summarize(path)
        if total is None:
            print(f"{path}: no totals line", file=sys.stderr)
            return 2
        print(f"{trigger}\t{total / args.per:.0f}\t{allocations / args.per:.1f}\t{int(tick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
