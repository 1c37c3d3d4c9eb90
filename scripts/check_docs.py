#!/usr/bin/env python3
"""Checks that the code shown in magpie's documentation is code that CI compiles and runs.

Every fenced code block in a --strict file (the guide, docs/guide/*.md) and every marked block, and
every C++ block, in a --lenient file (README.md) must be introduced by a marker on the line just
before it:

    <!-- file: examples/quicksort.cpp -->            the block is the whole file
    <!-- file: examples/quicksort.cpp [partition] --> the lines between two `// [partition]` lines
    <!-- file: examples/quicksort.out -->            the program's output, compared by its ctest

The block must equal the file (or region) exactly. The file must lie under examples/ and belong to
an example registered in examples/CMakeLists.txt with magpie_example(<name>), which builds it and
runs it as the ctest example.<name>; an .out file must belong to an example whose test compares
its output with that file (one registered without EXPECT).

Usage: check_docs.py [--root DIR] [--fix] [--strict FILE...] [--lenient FILE...]
Default: --strict docs/guide/*.md --lenient README.md. Exit status 1 on any problem. --fix
rewrites each marked block that differs from its file with the file's text (and still reports
the problems it cannot fix).
"""

import argparse
import glob
import os
import re
import sys

MARKER = re.compile(r"^<!--\s*file:\s*(\S+)(?:\s+\[([\w.-]+)\])?\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
CPP_INFO = {"cpp", "c++", "cxx", "hpp"}


def fenced_blocks(lines):
    """Yields (line index of the opening fence, info string, content lines)."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        yield i, info, lines[i + 1 : j]
        i = j + 1


def registered_examples(root):
    """{name: compares_output} for every magpie_example(<name> ...) in examples/CMakeLists.txt."""
    text = open(os.path.join(root, "examples", "CMakeLists.txt"), encoding="utf-8").read()
    text = re.sub(r"#.*", "", text)
    examples = {}
    for m in re.finditer(r"magpie_example\(\s*([\w-]+)([^)]*)\)", text):
        examples[m.group(1)] = "EXPECT" not in m.group(2).split()
    return examples


def region_of(lines, region, where):
    tag = re.compile(r"^\s*//\s*\[" + re.escape(region) + r"\]\s*$")
    at = [k for k, line in enumerate(lines) if tag.match(line)]
    if len(at) != 2:
        raise ValueError(f"{where}: region [{region}] needs exactly two `// [{region}]` lines, found {len(at)}")
    return lines[at[0] + 1 : at[1]]


def check_file(path, strict, root, examples, fix=False):
    errors = []
    lines = open(path, encoding="utf-8").read().split("\n")
    fixes = []  # (first content line, end, replacement)
    rel = os.path.relpath(path, root)
    for start, info, content in fenced_blocks(lines):
        where = f"{rel}:{start + 1}"
        marker = MARKER.match(lines[start - 1]) if start > 0 else None
        if marker is None:
            if strict or info in CPP_INFO:
                errors.append(f"{where}: code block without a `<!-- file: examples/... -->` marker on the line before it")
            continue
        target, region = marker.group(1), marker.group(2)
        parts = target.split("/")
        if len(parts) != 2 or parts[0] != "examples":
            errors.append(f"{where}: {target} is not a file directly under examples/")
            continue
        name, ext = os.path.splitext(parts[1])
        if name not in examples:
            errors.append(f"{where}: {target} is not a registered example (add magpie_example({name}) to examples/CMakeLists.txt)")
            continue
        if ext == ".out" and not examples[name]:
            errors.append(f"{where}: {target}: example.{name} does not compare its output with this file (registered with EXPECT)")
            continue
        if ext not in (".cpp", ".out"):
            errors.append(f"{where}: {target}: only an example's .cpp or .out can be shown")
            continue
        file_path = os.path.join(root, target)
        if not os.path.isfile(file_path):
            errors.append(f"{where}: {target} does not exist")
            continue
        expected = open(file_path, encoding="utf-8").read()
        expected = expected[:-1] if expected.endswith("\n") else expected
        expected_lines = expected.split("\n")
        if region is not None:
            try:
                expected_lines = region_of(expected_lines, region, target)
            except ValueError as e:
                errors.append(f"{where}: {e}")
                continue
        if content != expected_lines and fix:
            fixes.append((start + 1, start + 1 + len(content), expected_lines))
        elif content != expected_lines:
            shown = f"{target} [{region}]" if region else target
            for k, (a, b) in enumerate(zip(content, expected_lines)):
                if a != b:
                    errors.append(f"{where}: block differs from {shown} at its line {k + 1}:\n  guide: {a!r}\n  file:  {b!r}")
                    break
            else:
                errors.append(f"{where}: block has {len(content)} lines, {shown} has {len(expected_lines)}")
    for first, end, replacement in reversed(fixes):
        lines[first:end] = replacement
    if fixes:
        open(path, "w", encoding="utf-8").write("\n".join(lines))
        print(f"check_docs: rewrote {len(fixes)} blocks in {rel}")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--fix", action="store_true")
    parser.add_argument("--strict", nargs="*", default=None)
    parser.add_argument("--lenient", nargs="*", default=None)
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    strict = args.strict if args.strict is not None else sorted(glob.glob(os.path.join(root, "docs", "guide", "*.md")))
    lenient = args.lenient if args.lenient is not None else [os.path.join(root, "README.md")]
    if not strict and args.strict is None:
        print("check_docs: no guide found under docs/guide/", file=sys.stderr)
        return 1
    examples = registered_examples(root)
    errors = []
    blocks = 0
    for path, is_strict in [(p, True) for p in strict] + [(p, False) for p in lenient]:
        errors += check_file(path, is_strict, root, examples, args.fix)
        blocks += sum(1 for _ in fenced_blocks(open(path, encoding="utf-8").read().split("\n")))
    for e in errors:
        print(e, file=sys.stderr)
    files = len(strict) + len(lenient)
    print(f"check_docs: {blocks} code blocks in {files} files, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
