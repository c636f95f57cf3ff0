#!/usr/bin/env python3
"""Fails when a target imports a module it does not declare as a dependency of its own.

SwiftPM's `--explicit-target-dependency-import-check` accepts a module that arrives through any
declared dependency's dependencies (Hummingbird brings ServiceLifecycle); this check asks for the
direct declaration: each module a target's sources import is the target itself, a target or
product it names in Package.swift, or a module of the toolchain.

It also fails on an import a file does not use, for the modules whose names it can list: the
package's own targets (their top-level declarations, and what their extensions add to other
modules' types or its protocols; with `@testable`, any member too) and Synchronization. A file uses a module when its code (comments aside) names
one of them. An import needed for another reason (an initializer a module
adds to another's type) says so on its line: `import StockroomWire  // needed: <why>`.
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

DECLARATION = re.compile(
    r"^(?:@[\w]+(?:\([^)]*\))?\s+)*(?:(?:public|package|open|internal|final|indirect|static|nonisolated|mutating|"
    r"override|convenience|required|lazy|@\w+)\s+)*(struct|class|enum|protocol|actor|typealias|func|var|let|macro)\s+`?(\w+)")
EXTENSION = re.compile(r"^(?:public\s+|package\s+)?extension\s+([\w.]+)")
MEMBER = re.compile(
    r"^    (?:@[\w]+(?:\([^)]*\))?\s+)*(?:public|package|open)\s+(?:(?:static|nonisolated|mutating|final|override|@\w+)\s+)*"
    r"(?:func|var|let)\s+`?(\w+)")
# Any member, whatever its visibility: what `@testable import` makes nameable.
ANY_MEMBER = re.compile(r"^    (?:[\w@()]+\s+)*?(?:func|var|let|case)\s+`?(\w+)")
# Members every type may have: naming one says nothing about the module that added it.
COMMON_MEMBERS = {"init", "encode", "decode", "description", "debugDescription", "hash", "write", "rawValue"}
KNOWN_NAMES = {"Synchronization": {"Mutex", "Atomic", "AtomicLazyReference", "WordPair", "AtomicRepresentable",
                                   "AtomicOptionalRepresentable"}}


def strip_comments(text):
    """The code of a Swift file, without comments (their text can name anything). String literals
    stay: their interpolations are code."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"(?m)^\s*//[^\n]*|\s//[^\n]*$", "", text)


def module_names(path):
    """What importing the target at `path` makes nameable: its top-level declarations, and the
    public members its extensions add to types it does not declare or to its protocols."""
    declared, protocols = set(), set()
    extended, members = [], []
    for root, _, files in os.walk(path):
        for file in files:
            if not file.endswith(".swift"):
                continue
            current = None
            with open(os.path.join(root, file), encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith(("private ", "fileprivate ")):
                        continue
                    if (match := DECLARATION.match(line)):
                        declared.add(match.group(2))
                        if match.group(1) == "protocol":
                            protocols.add(match.group(2))
                        current = None
                    elif (match := EXTENSION.match(line)):
                        current = match.group(1).split(".")[0]
                    elif current and (match := MEMBER.match(line)):
                        extended.append((current, match.group(1)))
                    elif line.startswith("}"):
                        current = None
                    if (match := ANY_MEMBER.match(line)):
                        members.append((current, match.group(1)))
    # Members added to another module's types, or to this module's protocols (which other modules' types adopt).
    added = {member for type_name, member in extended
             if (type_name not in declared or type_name in protocols) and member not in COMMON_MEMBERS}
    return declared | added, declared | {member for _, member in members}


failures = []
paths = {t["name"]: t.get("path") or f"Sources/{t['name']}" for t in package["targets"] if t["type"] != "test"}
names, testable_names = {}, {}
for module, path in paths.items():
    if os.path.isdir(path):
        public, testable = module_names(path)
        if public:
            names[module], testable_names[module] = public, testable
names.update(KNOWN_NAMES)
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
                text = handle.read()
            tokens = None
            for line in text.splitlines():
                match = IMPORT.match(line)
                if not match:
                    continue
                module = match.group(1)
                if module not in declared and module not in TOOLCHAIN:
                    failures.append(f"{source}: target {name} imports {module}, not among its dependencies")
                if module in names and "// needed:" not in line and "@_exported" not in line:
                    if tokens is None:
                        tokens = set(re.findall(r"\w+", IMPORT.sub("", strip_comments(text))))
                    if not tokens & (testable_names if "@testable" in line else names)[module]:
                        failures.append(f"{source}: imports {module} and names nothing of it")
for failure in failures:
    print(failure, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"imports: every module imported by {len(package['targets'])} targets is declared")
