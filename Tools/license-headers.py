#!/usr/bin/env python3
# RingIO — the Apache 2.0 lines of every Swift file's header block.
#
#   Tools/license-headers.py           add them where they are missing
#   Tools/license-headers.py --check   list the files without them; exit 1 if any (CI)
#
# A header block is the file's first lines between two rules (after `// swift-tools-version`
# in a Package.swift); the lines go at its end, after the file's own description:
#
#   //===----------------------------------------------------------------------===//
#   // RingIO — <what the file is>
#   //
#   // Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
#   // see LICENSE. SPDX-License-Identifier: Apache-2.0
#   //===----------------------------------------------------------------------===//
#
# A file without a header block is reported; write its one-line description in a block first.
import os
import subprocess
import sys

RULE = "//===----------------------------------------------------------------------===//"
LICENSE_LINES = [
    "//",
    "// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;",
    "// see LICENSE. SPDX-License-Identifier: Apache-2.0",
]


def main() -> int:
    check = "--check" in sys.argv[1:]
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.swift"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    missing = []
    for path in sorted(set(listed)):
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as file:
            lines = file.read().split("\n")
        start = 1 if lines[0].startswith("// swift-tools-version") else 0
        end = lines.index(RULE, start + 1) if lines[start] == RULE and RULE in lines[start + 1:] else -1
        if end > 0 and any("SPDX-License-Identifier: Apache-2.0" in line for line in lines[start:end]):
            continue
        if check or end < 0 or end == start + 1:
            missing.append(path if end > start + 1 else path + " (no header block with a description)")
            continue
        lines[end:end] = LICENSE_LINES
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(lines))
    for path in missing:
        print(f"no license header: {path}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
