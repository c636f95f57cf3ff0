#!/usr/bin/env python3
"""The async frame size of every async function of a binary, largest first.

A task allocates an async function's whole frame (its "initial context") when the function is
called, from the task's allocator: slabs of about 1 KiB, a malloc each when a frame does not fit the
slab before, freed when the task ends. A frame holds every value any path of the function keeps,
so a large one costs every call. Swift writes each size into the function's async function pointer
(the symbol ending in `Tu`: a relative offset, then the size, 32 bits each); this reads them.

  python3 Benchmarks/layout/async_frames.py BIN [REGEX] [--top N]

BIN: a binary with its symbol table (e.g. the shipped build, deploy/release-build.sh); REGEX:
only functions whose mangled name matches (e.g. '15StockroomServer|14StockroomStore'); --top N:
the N largest (default 40). Needs readelf, nm and the toolchain's `swift demangle`.
"""
import argparse, re, struct, subprocess

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("pattern", nargs="?")
parser.add_argument("--top", type=int, default=40)
args = parser.parse_args()
pattern = re.compile(args.pattern) if args.pattern else None

sections = []  # (virtual address, file offset, size) of each section with bytes in the file
for line in subprocess.run(["readelf", "-SW", args.binary], capture_output=True, text=True, check=True).stdout.splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+\S+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
    if m and m.group(1) != "NOBITS":
        sections.append((int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)))
with open(args.binary, "rb") as file:
    data = file.read()

frames = []
for line in subprocess.run(["nm", args.binary], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) != 3 or not parts[2].endswith("Tu") or (pattern and not pattern.search(parts[2])):
        continue
    address = int(parts[0], 16)
    for start, offset, size in sections:
        if start <= address < start + size:
            frames.append((struct.unpack_from("<iI", data, offset + address - start)[1], parts[2]))
            break
frames.sort(key=lambda frame: -frame[0])
frames = frames[: args.top]
names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(name for _, name in frames),
                       capture_output=True, text=True, check=True).stdout.splitlines()
for (size, _), name in zip(frames, names):
    print(f"{size:7} {name.removeprefix('async function pointer to ')}")
