#!/usr/bin/env python3
"""What the SDK needs of an Apple platform, checked on Linux.

The SDK is StockroomClient and the modules it re-exports, StockroomCore and StockroomWire. Two checks:

1. Imports. Every `import` of their sources names a module an Apple platform has or the package
   provides (IMPORTS); a Linux-only module (Glibc, FoundationNetworking...) only inside `#if`.
2. Foundation. The script lists every Foundation name the sources use (an identifier that
   Foundation declares and the standard library does not, read from the toolchain's symbol
   graphs of Foundation, FoundationEssentials and FoundationInternationalization) and checks it
   against .ci/sdk-foundation.txt, which gives each one with the iOS and macOS releases that
   introduced it. A name used but not listed, listed but no longer used, or introduced after
   iOS 17 or macOS 14 fails the check: a new Foundation API is looked up and written down before
   it ships.

    python3 .ci/check-sdk-platforms.py        (exit 1 on a failure; --list prints the names used)
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["StockroomClient", "StockroomCore", "StockroomWire"]
IMPORTS = {
    "Foundation", "Observation", "StockroomCore", "StockroomWire", "GRDB", "AsyncHTTPClient", "WSClient", "HTTPTypes", "Logging",
    "NIOCore", "NIOHTTP1", "NIOFoundationCompat", "NIOConcurrencyHelpers",
}
LINUX_ONLY = {"Glibc", "Musl", "FoundationNetworking", "FoundationXML", "Android", "Bionic", "WinSDK", "ucrt"}
FLOOR = {"iOS": (17, 0), "macOS": (14, 0)}
LIST = os.path.join(ROOT, ".ci", "sdk-foundation.txt")


def sources():
    for module in MODULES:
        yield from sorted(glob.glob(os.path.join(ROOT, "Sources", module, "**", "*.swift"), recursive=True))


def code_only(text):
    """The text without comments and string literals (identifiers in them are not uses)."""
    text = re.sub(r'#?"""[\s\S]*?"""#?', '""', text)
    text = re.sub(r"/\*[\s\S]*?\*/", " ", text)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'#?"(?:\\.|[^"\\\n])*"#?', '""', text)


def check_imports(failures):
    for path in sources():
        depth = 0
        for number, line in enumerate(open(path), 1):
            stripped = line.strip()
            if stripped.startswith("#if"):
                depth += 1
            elif stripped.startswith("#endif"):
                depth -= 1
            match = re.match(r"(?:@_exported\s+)?import\s+(?:struct\s+|class\s+|enum\s+|func\s+)?([A-Za-z_][A-Za-z0-9_]*)", stripped)
            if not match:
                continue
            module = match.group(1)
            where = f"{os.path.relpath(path, ROOT)}:{number}"
            if module in LINUX_ONLY and depth == 0:
                failures.append(f"{where}: import {module} outside #if (Linux only)")
            elif module not in IMPORTS and module not in LINUX_ONLY:
                failures.append(f"{where}: import {module}, not among the modules the SDK may use on Apple platforms")


def names(graphs):
    found = set()
    for path in graphs:
        with open(path) as handle:
            for symbol in json.load(handle)["symbols"]:
                for component in symbol["pathComponents"]:
                    found.add(component.split("(")[0])
    return found


def foundation_names():
    binaries = os.path.dirname(os.path.realpath(subprocess.check_output(["which", "swift"], text=True).strip()))
    library = os.path.join(os.path.dirname(binaries), "lib", "swift", "linux")
    extract = os.path.join(binaries, "swift-symbolgraph-extract")
    with tempfile.TemporaryDirectory() as folder:
        for module in ["Foundation", "FoundationEssentials", "FoundationInternationalization", "Swift", "_Concurrency"]:
            subprocess.run([extract, "-module-name", module, "-target", "x86_64-unknown-linux-gnu", "-sdk", "/", "-I", library,
                            "-output-dir", folder, "-minimum-access-level", "public"], check=True, capture_output=True)
        foundation = names(glob.glob(os.path.join(folder, "Foundation*.symbols.json")))
        standard = names(glob.glob(os.path.join(folder, "Swift*.symbols.json")) + glob.glob(os.path.join(folder, "_Concurrency*.symbols.json")))
    return foundation - standard


# Swift's keywords, and names the SDK takes from other modules it imports (GRDB's Configuration;
# WSCore's `messages(maxSize:)` and NIOWebSocket's `WebSocketErrorCode.unknown`), which Foundation
# happens to declare too.
NOT_FOUNDATION = {
    "self", "Self", "true", "false", "in", "throw", "try", "protocol", "init", "deinit", "subscript", "super", "nil",
    "Configuration", "messages", "unknown",
}


def declared_names(texts):
    """Names the SDK's own sources declare (types, members, cases, labels): a use of one is the SDK's."""
    declared = set()
    for text in texts:
        declared.update(re.findall(r"\b(?:func|var|let|struct|enum|class|actor|typealias|protocol|associatedtype)\s+`?([A-Za-z_]\w*)", text))
        for cases in re.findall(r"\bcase\s+([A-Za-z_][^\n=:{]*)", text):
            declared.update(re.findall(r"(?:^|,)\s*`?([A-Za-z_]\w*)", cases))
        declared.update(re.findall(r"[(,]\s*([a-z]\w*)\s+[a-z_]\w*\s*:", text))  # argument labels
        declared.update(re.findall(r"[(,]\s*([a-z]\w*)\s*:", text))
        declared.update(re.findall(r"[(,]\s*_\s+([a-z]\w*)\s*:", text))
    return declared


def used_names(foundation):
    texts = {}
    for path in sources():
        with open(path) as handle:
            texts[path] = code_only(handle.read())
    own = declared_names(texts.values())
    used = {}
    for path, text in texts.items():
        for identifier in set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text)):
            if identifier in foundation and identifier not in own and identifier not in NOT_FOUNDATION:
                used.setdefault(identifier, []).append(os.path.relpath(path, ROOT))
    return used


def version(text):
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0))


def main():
    failures = []
    check_imports(failures)
    used = used_names(foundation_names())
    if "--list" in sys.argv:
        for name in sorted(used):
            print(f"{name}\t{', '.join(sorted(set(used[name]))[:3])}")
        return 0
    listed = {}
    for number, line in enumerate(open(LIST), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 3 or not fields[1].startswith("iOS") or not fields[2].startswith("macOS"):
            failures.append(f".ci/sdk-foundation.txt:{number}: expected 'name iOS<version> macOS<version>'")
            continue
        listed[fields[0]] = {"iOS": version(fields[1][3:]), "macOS": version(fields[2][5:])}
    for name in sorted(set(used) - set(listed)):
        failures.append(f"{name} (in {', '.join(sorted(set(used[name]))[:2])}) is Foundation and not in .ci/sdk-foundation.txt: "
                        "look up its availability and add it")
    for name in sorted(set(listed) - set(used)):
        failures.append(f"{name} is in .ci/sdk-foundation.txt but the SDK no longer uses it: remove it")
    for name, since in sorted(listed.items()):
        for platform, floor in FLOOR.items():
            if since[platform] > floor:
                failures.append(f"{name} needs {platform} {since[platform][0]}.{since[platform][1]}, above the SDK's {platform} {floor[0]}")
    for failure in failures:
        print(f"check-sdk-platforms: {failure}")
    print(f"check-sdk-platforms: {len(used)} Foundation names used by {', '.join(MODULES)}; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
