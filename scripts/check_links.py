#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Every relative link in the given Markdown files must name an existing file and, for a
Markdown target, an existing heading (GitHub's anchors). Prints each broken link; exit 1."""
import os
import re
import sys


def text(path):
    """The file without fenced code blocks and inline code, where a link is not a link."""
    with open(path, encoding="utf-8") as f:
        t = re.sub(r"^```.*?^```", "", f.read(), flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", t)


def anchors(path):
    seen, out = {}, set()
    with open(path, encoding="utf-8") as f:
        t = re.sub(r"^```.*?^```", "", f.read(), flags=re.S | re.M)
    for h in re.findall(r"^#+\s+(.*?)\s*$", t, flags=re.M):
        a = re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


bad = 0
for md in sys.argv[1:]:
    for target in re.findall(r"\]\(([^)\s]+)\)", text(md)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        if not os.path.exists(path):
            print(f"{md}: {target}: no such file")
            bad += 1
        elif anchor and path.endswith(".md") and anchor not in anchors(path):
            print(f"{md}: {target}: no such heading")
            bad += 1
sys.exit(bad > 0)
