#!/usr/bin/env python3
# RingIO — the Swift code in the documentation compiles against today's API.
#
#   Tools/check-doc-snippets.py              extract, build, report; exit 1 if a snippet fails
#   Tools/check-doc-snippets.py --list       print each snippet and how it is checked; no build
#   Tools/check-doc-snippets.py README.md    only the documents named (paths from the repository root)
#
# Every ```swift block of the documents in DOCUMENTS becomes a module of its own in a throwaway
# package, .build-docs/snippets (ignored by git), that depends on this repository by path; the
# package is then built. Compiler errors point at the document's own lines (each generated file
# carries `#sourceLocation` directives), e.g. `Sources/RingIO/RingIO.docc/GettingStarted.md:42`.
#
# How a block is compiled:
#
# - A block with `@main`, or with a top-level `extension` or `protocol`, is a file as it stands.
# - Any other block is top-level code: it is wrapped in `func snippet() async throws { … }`, so
#   it may `try` and `await`; its `import` lines move to the top of the file.
# - Every block gets `import <the module whose catalog the article is in>` (`import RingIO` for
#   README.md) besides its own imports.
#
# Markers, HTML comments on the lines just before a block (DocC does not render them):
#
#   <!-- snippet-context
#   let ring = try RingLoop()
#   let serve: @Sendable (IOConnection) -> Void = { _ in }
#   -->
#       Declarations a fragment needs but does not show, compiled before the block (inside the
#       wrapper function, so what a task or a handler calls must be `@Sendable`; `import` lines
#       move to the top). Keep it to what the prose implies. No line may start with `@`: DocC
#       reads that as a directive, even inside a comment.
#
#   <!-- snippet-skip: a Package.swift fragment -->
#       Not compiled; the reason is required. For code that is not Swift of this package
#       (a manifest fragment, a deliberate error, pseudo-code).
#
# DOCUMENTS: the articles of every catalogue, and README.md. After an API change, run the script,
# fix the documents at the lines it names, and run it again (later builds are incremental).
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DOCUMENTS = sorted(glob.glob("Sources/*/*.docc/*.md", root_dir=ROOT)) + ["README.md"]
PACKAGE_DIR = ".build-docs/snippets"

# What every snippet module may import: this repository's library products, and the products
# of other packages that the articles use beside them.
REPOSITORY_PRODUCTS = [
    "RingIO", "ByteRopes", "ByteRopesFoundationCompat", "RingHTTP", "RingTLS", "RingIOServiceLifecycle",
]
OTHER_PACKAGES = [
    # (url, minimum version, package identity, products)
    ("https://github.com/swift-server/swift-service-lifecycle", "2.13.0", "swift-service-lifecycle",
     ["ServiceLifecycle"]),
    ("https://github.com/apple/swift-log", "1.6.0", "swift-log", ["Logging"]),
]

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
MARKER_START = re.compile(r"^\s*<!--\s*snippet-(context|skip)\b:?(.*)$")
IMPORT = re.compile(r"^\s*(@_exported\s+|@testable\s+)?import\s+\w")
FILE_LEVEL = re.compile(r"^(@main\b|extension\s|protocol\s|public\s+extension\s)")


class Snippet:
    def __init__(self, document: str, line: int, code: list[str], context: list[str], context_line: int,
                 skip: str | None):
        self.document = document
        self.line = line  # the first line of code, 1-based
        self.code = code
        self.context = context
        self.context_line = context_line
        self.skip = skip

    @property
    def module(self) -> str:
        if self.document.startswith("Sources/"):
            return self.document.split("/")[1]
        return "RingIO"

    @property
    def target(self) -> str:
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(self.document))[0])
        return f"Snippet_{stem}_{self.line}"

    @property
    def file_level(self) -> bool:
        return any(FILE_LEVEL.match(line) for line in self.code)


def parse(document: str, problems: list[str]) -> list[Snippet]:
    with open(os.path.join(ROOT, document), encoding="utf-8") as file:
        lines = file.read().split("\n")
    snippets = []
    marker: tuple[str, str, list[str], int] | None = None  # kind, argument, body, line of body
    index = 0
    while index < len(lines):
        line = lines[index]
        start = MARKER_START.match(line)
        if start:
            kind, rest = start.group(1), start.group(2)
            body: list[str] = []
            first = index + 2
            if "-->" in rest:
                rest = rest[: rest.index("-->")]
            else:
                index += 1
                while index < len(lines) and "-->" not in lines[index]:
                    body.append(lines[index])
                    index += 1
            if marker is not None:
                problems.append(f"{document}:{index + 1}: two snippet markers in a row")
            marker = (kind, rest.strip(), body, first)
            index += 1
            continue
        fence = FENCE.match(line)
        if fence and fence.group(2):
            language = fence.group(2)
            end = index + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            if language == "swift":
                context, context_line, skip = [], 0, None
                if marker is not None:
                    kind, argument, body, first = marker
                    if kind == "skip":
                        skip = argument
                        if not skip:
                            problems.append(f"{document}:{index}: snippet-skip needs a reason")
                    else:
                        context, context_line = body, first
                snippets.append(Snippet(document, index + 2, lines[index + 1:end], context, context_line, skip))
            elif marker is not None:
                problems.append(f"{document}:{index + 1}: a snippet marker before a ```{language} block")
            marker = None
            index = end + 1
            continue
        if marker is not None and line.strip():
            problems.append(f"{document}:{marker[3] - 1}: a snippet marker not followed by a ```swift block")
            marker = None
        index += 1
    return snippets


def location(document: str, line: int) -> str:
    return f'#sourceLocation(file: "{document}", line: {line})'


def generate(snippet: Snippet) -> str:
    imports: list[str] = []
    body: list[str] = []
    for offset, line in enumerate(snippet.context):
        if IMPORT.match(line):
            imports += [location(snippet.document, snippet.context_line + offset), line.strip()]
    for offset, line in enumerate(snippet.code):
        if IMPORT.match(line):
            imports += [location(snippet.document, snippet.line + offset), line.strip()]
    if imports:
        imports.append("#sourceLocation()")
    imports.insert(0, f"import {snippet.module}")
    code = ["" if IMPORT.match(line) else line for line in snippet.code]
    context = ["" if IMPORT.match(line) else line for line in snippet.context]
    out = ["// Generated by Tools/check-doc-snippets.py from " + snippet.document + "; do not edit.", *imports, ""]
    if snippet.file_level:
        if context:
            out += [location(snippet.document, snippet.context_line), *context]
        out += [location(snippet.document, snippet.line), *code, "#sourceLocation()"]
    else:
        out.append("func snippet() async throws {")
        if context:
            out += [location(snippet.document, snippet.context_line), *context]
        out += [location(snippet.document, snippet.line), *code, "#sourceLocation()", "}"]
    return "\n".join(out) + "\n"


def manifest(snippets: list[Snippet]) -> str:
    relative = os.path.relpath(ROOT, os.path.join(ROOT, PACKAGE_DIR))
    dependencies = [f'        .package(path: "{relative}", traits: ["ServiceLifecycle"]),']
    products = [f'.product(name: "{name}", package: "{os.path.basename(ROOT)}")' for name in REPOSITORY_PRODUCTS]
    for url, version, identity, names in OTHER_PACKAGES:
        dependencies.append(f'        .package(url: "{url}", from: "{version}"),')
        products += [f'.product(name: "{name}", package: "{identity}")' for name in names]
    targets = "\n".join(
        f'        .target(name: "{snippet.target}", dependencies: shared),' for snippet in snippets
    )
    products_list = ",\n    ".join(products)
    dependencies_list = "\n".join(dependencies)
    return f"""// swift-tools-version:6.1
// Generated by Tools/check-doc-snippets.py: the documentation's Swift snippets, one module each.
import PackageDescription

let shared: [Target.Dependency] = [
    {products_list},
]

let package = Package(
    name: "DocumentationSnippets",
    dependencies: [
{dependencies_list}
    ],
    targets: [
{targets}
    ]
)
"""


def write_if_changed(path: str, text: str) -> None:
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            if file.read() == text:
                return
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


def main() -> int:
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    documents = arguments or DOCUMENTS
    problems: list[str] = []
    snippets = [snippet for document in documents for snippet in parse(document, problems)]
    checked = [snippet for snippet in snippets if snippet.skip is None]
    if "--list" in sys.argv[1:]:
        for snippet in snippets:
            how = f"skipped: {snippet.skip}" if snippet.skip is not None else (
                "file level" if snippet.file_level else "wrapped") + (", with context" if snippet.context else "")
            print(f"{snippet.document}:{snippet.line}: {snippet.target} ({how})")
        return 0
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    package = os.path.join(ROOT, PACKAGE_DIR)
    wanted = {snippet.target for snippet in checked}
    os.makedirs(os.path.join(package, "Sources"), exist_ok=True)
    for name in os.listdir(os.path.join(package, "Sources")):
        if name not in wanted:
            subprocess.run(["rm", "-rf", os.path.join(package, "Sources", name)], check=True)
    for snippet in checked:
        os.makedirs(os.path.join(package, "Sources", snippet.target), exist_ok=True)
        write_if_changed(os.path.join(package, "Sources", snippet.target, "Snippet.swift"), generate(snippet))
    write_if_changed(os.path.join(package, "Package.swift"), manifest(checked))
    print(f"== {len(checked)} snippets from {len(documents)} documents "
          f"({len(snippets) - len(checked)} skipped); building {PACKAGE_DIR}", flush=True)
    build = swift_build(package)
    if build.returncode == 0:
        for line in diagnostics(build.stdout):  # warnings
            print(line)
        print("== every snippet compiles")
        return 0
    # The build stops at its first failed module: build each snippet alone (the ones that
    # compiled are up to date) so that every failure is reported.
    failed = 0
    for snippet in checked:
        alone = swift_build(package, snippet.target)
        if alone.returncode != 0:
            failed += 1
            print("\n".join(diagnostics(alone.stdout)) or alone.stdout, file=sys.stderr)
    if failed == 0:  # not a snippet's fault: the dependencies, the manifest…
        print(build.stdout, file=sys.stderr)
    print(f"{failed or 'the'} documentation snippet(s) do not compile: fix them at the lines above "
          "(Tools/check-doc-snippets.py)", file=sys.stderr)
    return 1


def swift_build(package: str, target: str | None = None) -> subprocess.CompletedProcess[str]:
    command = ["swift", "build", "--package-path", package] + (["--target", target] if target else [])
    return subprocess.run(command, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def diagnostics(output: str) -> list[str]:
    """The compiler's messages about the documents (their paths end in .md), with the notes and
    source lines that follow each."""
    kept: list[str] = []
    keeping = False
    for line in output.split("\n"):
        if re.search(r"\.md:\d+(:\d+)?: (error|warning|note)", line):
            # An unused value is what a snippet shows, not a mistake.
            keeping = "[#no-usage]" not in line and "never mutated" not in line
        elif re.match(r"^(\[\d+/\d+\]|Building|Build|Compiling|Write|error: |warning: )", line):
            keeping = False
        if keeping and line.strip():
            kept.append(line)
    return kept


if __name__ == "__main__":
    sys.exit(main())
