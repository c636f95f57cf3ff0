#!/usr/bin/env python3
"""Fails when a relative link in a tracked Markdown file names nothing.

For every Markdown file `git ls-files '*.md'` lists (none under .build*), each relative link
`[text](path)`, `[text](path#anchor)`, `![alt](path)` or `[ref]: path` must name a file or
directory of the repository, and a `#anchor` into a Markdown file must be one of its headings'
anchors as GitHub makes them (lowercase; punctuation dropped but `-` and `_`; spaces to `-`; a
repeated heading gets `-1`, `-2`...). Absolute URLs (any `scheme:`, such as http:, https:,
mailto:) are skipped, and so are links in fenced code blocks and in inline code.
Prints each broken link as `file:line: link -> reason` and exits 1 if there is one.
Usage: .ci/check-links.py   (from anywhere in the repository; standard library only)
"""
import os
import re
import subprocess
import sys
import unicodedata
from urllib.parse import unquote

ROOT = subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True,
                      text=True).stdout.strip()
os.chdir(ROOT)

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target); the text may hold one level of brackets; an optional title.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def lines_outside_code(text):
    """(line number, line) of each line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and line.strip() == match.group(1):
            fence = None


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LMN"
                   or unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        with open(path, encoding="utf-8") as file:
            text = file.read()
        found, seen = set(), {}
        for _, line in lines_outside_code(text):
            match = HEADING.match(line)
            if match:
                base = slug(match.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
            found.update(HTML_ANCHOR.findall(line))
        anchor_cache[path] = found
    return anchor_cache[path]


def main():
    listed = subprocess.run(["git", "ls-files", "-z", "*.md"], check=True, capture_output=True,
                            text=True).stdout.split("\0")
    files = [f for f in listed if f and not any(part.startswith(".build") for part in f.split("/"))]
    broken, checked = [], 0
    for source in files:
        with open(source, encoding="utf-8") as file:
            text = file.read()
        for number, line in lines_outside_code(text):
            line = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)  # no link in inline code
            targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
            reference = REFERENCE.match(line)
            if reference:
                targets.append(reference.group(1))
            for target in targets:
                target = target.strip("<>")
                if not target or SCHEME.match(target):
                    continue
                checked += 1
                reason = check(source, target)
                if reason:
                    broken.append(f"{source}:{number}: {target} -> {reason}")
    for line in broken:
        print(line)
    if broken:
        print(f"check-links: {len(broken)} broken of {checked} relative links in {len(files)} Markdown files",
              file=sys.stderr)
        return 1
    print(f"check-links: {checked} relative links in {len(files)} Markdown files, all resolve")
    return 0


def check(source, target):
    path, _, anchor = target.partition("#")
    path = unquote(path.split("?", 1)[0])
    if not path:
        resolved = source
    elif path.startswith("/"):
        resolved = os.path.normpath(path.lstrip("/"))
    else:
        resolved = os.path.normpath(os.path.join(os.path.dirname(source), path))
    if resolved == ".." or resolved.startswith("../") or os.path.isabs(resolved):
        return "outside the repository"
    if not os.path.exists(resolved):
        return f"no such file or directory ({resolved})"
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        if unquote(anchor) not in anchors(resolved):
            return f"no heading with anchor #{anchor} in {resolved}"
    return None


if __name__ == "__main__":
    sys.exit(main())
