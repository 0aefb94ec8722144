#!/usr/bin/env python3
# RingIO — every reference in the repository leads to something in the repository.
#
#   Tools/check-doc-references.py           check; exit 1 and list the offending lines if any
#   Tools/check-doc-references.py --rules   also print the rule numbers the articles define
#
# Checks, in the files git knows under the paths in SCOPE (this script excepted):
#
# 1. Rule numbers. R1–R81 and R-S1–R-S6 (dispatch's I/O and data rules) and D1–D8 (RingIO's
#    deliberate differences) are defined by the headings of three DocC articles:
#      Sources/RingIO/RingIO.docc/DispatchIOContract.md       "### R20" … "### R81", "### R-S2" …
#      Sources/ByteRopes/ByteRopes.docc/DispatchDataContract.md  "### R1" … "### R19", "### R-S1" …
#      Sources/RingIO/RingIO.docc/ComingFromDispatch.md       "### D1 <title>" … "### D8 <title>"
#    Every R1–R81 must be defined exactly once, and every D that is cited must be defined. A
#    citation of a number no article defines fails. The ByteRopes module cannot link into
#    RingIO's catalog, so its Swift sources (Sources/ByteRopes*) may cite only the data
#    article's rules.
# 2. Documents, rules and issues that are not in the repository: the design and style
#    documents, the reference notes, "issue 15", "issues 3–5", "the issue's …", paths into the
#    machine the project was written on.
# 3. File names, in prose (Markdown and other text files) and in comments (`//`, `#` lines of
#    code): a path that starts at one of the repository's top-level folders must exist; a bare
#    name of a Markdown, Swift, Python or shell file (`DispatchIOContract.md`) must be the name
#    of a file in the repository. EXTERNAL_FILES lists other projects' files, cited on purpose.
import os
import re
import subprocess
import sys

SCOPE = [
    "Sources", "Tests", "Examples", "Benchmarks", "Tools", "Fuzz", ".ci",
    "README.md", "CHANGELOG.md", "Package.swift",
]
SELF = "Tools/check-doc-references.py"

ARTICLES = {
    "io": "Sources/RingIO/RingIO.docc/DispatchIOContract.md",
    "data": "Sources/ByteRopes/ByteRopes.docc/DispatchDataContract.md",
    "differences": "Sources/RingIO/RingIO.docc/ComingFromDispatch.md",
}
RULE_HEADING = re.compile(r"^### (R-S\d+|R\d+|D\d+)(?:\s|$)")
CITATION = re.compile(r"(?<![\w/.-])(R-S\d+|R\d{1,2}|D\d{1,2})(?![\w])")

FORBIDDEN = [
    (re.compile(r"\bDESIGN(\.md)?\b"), "the design document is not in the repository"),
    (re.compile(r"\bSTYLE(\.md)?\b"), "the style guide is not in the repository"),
    (re.compile(r"gcd-design-notes|dispatch-io-contract|\bGCD notes\b|\bdesign notes\b"),
     "the reference notes are not in the repository"),
    (re.compile(r"\bshared/|\bshared (DESIGN|STYLE)|/work/"), "a path outside the repository"),
    (re.compile(r"(?<![\w/])[Ii]ssues?\s+#?\d"), "an issue number: say what it refers to instead"),
    (re.compile(r"\b[Tt]he (\w+ )?issues?'s?\b(?! (is|was|that|with|of|here))"),
     "an issue of the project's tracker: say what it refers to instead"),
]

FILE_TOKEN = re.compile(
    r"(?<![\w/.<*-])((?:[\w.+-]+/)*[\w+-]+(?:\.[\w+-]+)*\.(?:md|swift|py|sh|c|h|json|modulemap|dict|yml|yaml))\b"
)
# Bare names (no folder of ours) are checked for these extensions only: a `.h` or `.json` name
# alone is usually a system header or a value in code.
BARE_NAME_EXTENSIONS = (".md", ".swift", ".py", ".sh")
CODE_EXTENSIONS = (".swift", ".c", ".h", ".py", ".sh", ".modulemap")
COMMENT = re.compile(r"(//|^\s*#(?!include|define|if|endif|else|pragma|undef|error)|^\s*\*)")
# Other projects' files, cited on purpose (what a piece of code follows or was compared with).
EXTERNAL_FILES = {
    "CNIOLinux.h", "liburing.h", "liburing_nio.h", "io_uring.h", "features.h", "Benchmarks.swift",
    "SyscallAbstractionLayer.swift", "IORingTests.swift", "DequeTests.swift",
}


def git_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *SCOPE],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")
    return sorted({path for path in listed if path and os.path.isfile(path) and path != SELF})


def defined_rules(problems: list[str]) -> dict[str, set[str]]:
    defined: dict[str, set[str]] = {}
    for key, path in ARTICLES.items():
        numbers: set[str] = set()
        with open(path, encoding="utf-8") as file:
            for number, line in enumerate(file, 1):
                match = RULE_HEADING.match(line)
                if match is None:
                    continue
                if match.group(1) in numbers:
                    problems.append(f"{path}:{number}: {match.group(1)} is defined twice")
                numbers.add(match.group(1))
        defined[key] = numbers
    both = defined["io"] & defined["data"]
    for rule in sorted(both):
        problems.append(f"{ARTICLES['io']}: {rule} is also defined in {ARTICLES['data']}")
    rules = defined["io"] | defined["data"]
    for number in range(1, 82):
        if f"R{number}" not in rules:
            problems.append(f"R{number} is defined in neither {ARTICLES['io']} nor {ARTICLES['data']}")
    for number in range(1, 9):
        if f"D{number}" not in defined["differences"]:
            problems.append(f"{ARTICLES['differences']}: D{number} is not defined")
    return defined


def main() -> int:
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    problems: list[str] = []
    defined = defined_rules(problems)
    every_rule = defined["io"] | defined["data"] | defined["differences"]
    files = git_files()
    everything = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")
    paths = {path for path in everything if path}
    names = {os.path.basename(path) for path in paths}
    top_level = {path.split("/")[0] for path in paths}
    for path in files:
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except UnicodeDecodeError:
            continue  # not text
        swift_in_ropes = path.startswith("Sources/ByteRopes") and path.endswith(".swift")
        allowed = defined["data"] if swift_in_ropes else every_rule
        is_code = path.endswith(CODE_EXTENSIONS) or os.access(path, os.X_OK) or path.startswith(".ci/")
        for number, line in enumerate(text.split("\n"), 1):
            for match in CITATION.finditer(line):
                rule = match.group(1)
                if rule not in allowed:
                    why = "not a rule of the data article" if swift_in_ropes else "no article defines it"
                    problems.append(f"{path}:{number}: {rule}: {why}: {line.strip()}")
            for pattern, why in FORBIDDEN:
                if pattern.search(line):
                    problems.append(f"{path}:{number}: {why}: {line.strip()}")
            prose = line
            if is_code:
                comment = COMMENT.search(line)
                prose = line[comment.start():] if comment else ""
            for match in FILE_TOKEN.finditer(prose):
                token = match.group(1).lstrip("./")
                base = os.path.basename(token)
                if base in EXTERNAL_FILES:
                    continue
                if "/" in token and token.split("/")[0] in top_level:
                    if token not in paths and not any(p.startswith(token + "/") for p in paths):
                        problems.append(f"{path}:{number}: no such file in the repository: {token}")
                elif base.endswith(BARE_NAME_EXTENSIONS) and base not in names:
                    problems.append(f"{path}:{number}: no file of this name in the repository: {token}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if "--rules" in sys.argv[1:]:
        for key, numbers in defined.items():
            ordered = sorted(numbers, key=lambda rule: (rule.startswith("R-S"), int(rule.lstrip("RDS-"))))
            print(f"{ARTICLES[key]}: {' '.join(ordered)}")
    if problems:
        print(f"{len(problems)} reference(s) to fix (what each check is: the comment at the top of Tools/check-doc-references.py)",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
