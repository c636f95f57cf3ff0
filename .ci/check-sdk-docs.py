#!/usr/bin/env python3
"""Fails when a public symbol declared in Sources/StockroomClient has no documentation.

Reads the symbol graphs that `swift package generate-documentation --target StockroomClient`
extracted (.build/<triple>/extracted-symbols/*/StockroomClient/*.symbols.json, public symbols
only) and lists every symbol whose declaration is in the SDK's sources and that carries no doc
comment of its own or of the protocol requirement it implements. Symbols the SDK only inherits
(an AsyncSequence's algorithms, declared in other packages) are not its to document.

    python3 .ci/check-sdk-docs.py      (after generate-documentation; exit 1 when one is missing)
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "Sources", "StockroomClient") + os.sep


def main():
    graphs = glob.glob(os.path.join(ROOT, ".build", "*", "extracted-symbols", "*", "StockroomClient", "StockroomClient*.symbols.json"))
    if not graphs:
        print("check-sdk-docs: no symbol graph of StockroomClient; run generate-documentation first", file=sys.stderr)
        return 2
    newest = max(os.path.getmtime(path) for path in graphs)
    graphs = [path for path in graphs if newest - os.path.getmtime(path) < 600]
    missing, checked = [], 0
    for path in graphs:
        with open(path) as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            uri = symbol.get("location", {}).get("uri", "")
            file = uri.removeprefix("file://")
            if not file.startswith(SOURCES):
                continue
            checked += 1
            if not symbol.get("docComment", {}).get("lines"):
                line = symbol["location"].get("position", {}).get("line", 0) + 1
                missing.append(f"{os.path.relpath(file, ROOT)}:{line}: {'.'.join(symbol['pathComponents'])}")
    for entry in sorted(missing):
        print(f"undocumented: {entry}")
    print(f"check-sdk-docs: {checked} public symbols declared in Sources/StockroomClient, {len(missing)} undocumented")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
