#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Several cases of tests/tools/tcpreset.py in one process, one after another.

Usage: tcpresets.py CASE:FAMILY...   (inside the namespace under test, as tcpreset.py)

Inside a guest under TCG every python3 start costs seconds: the kernel matrix's guests run
the cases here, each exactly as tcpreset.py CASE FAMILY would (its own main(), its sockets
closed before the next case starts). Says on stderr which case failed; exits 1 if any did.
"""
import gc
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import tcpreset  # noqa: E402


def main():
    rc = 0
    for spec in sys.argv[1:]:
        case, fam = spec.split(":")
        sys.argv = ["tcpreset.py", case, fam]
        try:
            tcpreset.main()
        except SystemExit as e:
            if e.code not in (None, 0):
                print(f"tcpreset.py {case} {fam}: {e.code}", file=sys.stderr)
                rc = 1
        # What a process's exit would do: the case's sockets closed now, not at some later
        # collection while the next case runs.
        gc.collect()
    return rc


if __name__ == "__main__":
    sys.exit(main())
