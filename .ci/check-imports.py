#!/usr/bin/env python3
"""Fails when a target imports a module it does not declare as a dependency of its own.

SwiftPM's `--explicit-target-dependency-import-check` accepts a module that arrives through any
declared dependency's dependencies (Hummingbird brings ServiceLifecycle); this check asks for the
direct declaration: each module a target's sources import is the target itself, a target or
product it names in Package.swift, or a module of the toolchain.
Usage: .ci/check-imports.py   (from the package root; runs `swift package dump-package`)
"""
import json
import os
import re
import subprocess
import sys

TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin",
             "Dispatch", "Synchronization", "Observation", "Testing", "XCTest", "os", "_Concurrency", "Swift",
             "SQLite3"}  # SQLite3: Apple platforms' SDK module (GRDBSQLite elsewhere)
IMPORT = re.compile(r"^\s*(?:@[\w()]+\s+)*(?:public\s+|internal\s+|package\s+|private\s+|fileprivate\s+)?"
                    r"import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)", re.M)

package = json.loads(subprocess.run(["swift", "package", "dump-package"], check=True,
                                    capture_output=True, text=True).stdout)
failures = []
for target in package["targets"]:
    name = target["name"]
    if target["type"] == "test":
        path = target.get("path") or f"Tests/{name}"
    else:
        path = target.get("path") or f"Sources/{name}"
    declared = {name}
    for dependency in target["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                declared.add(dependency[kind][0])
    for root, _, files in os.walk(path):
        for file in sorted(files):
            if not file.endswith(".swift"):
                continue
            source = os.path.join(root, file)
            with open(source, encoding="utf-8") as handle:
                for module in IMPORT.findall(handle.read()):
                    if module not in declared and module not in TOOLCHAIN:
                        failures.append(f"{source}: target {name} imports {module}, not among its dependencies")
for failure in failures:
    print(failure, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"imports: every module imported by {len(package['targets'])} targets is declared")
