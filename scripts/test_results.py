#!/usr/bin/env python3
"""Counts the test cases of GoogleTest shards (tests/run_gtest_shard.sh) for scripts/test.sh.

Usage: test_results.py PRESET RESULTS_DIR CTEST_JUNIT EXCERPTS_FILE

Reads every GoogleTest XML report in RESULTS_DIR (one per shard, or one per case where a shard was
run again case by case) and prints, like test.sh's reading of ctest's JUnit file: a first line
"passed failed skipped", then one line per skipped or failed case: PRESET<TAB>reason<TAB>name
(reason FAILED for a failure). A failed case's first lines of failure go to EXCERPTS_FILE. A shard
that ctest saw fail (CTEST_JUNIT) but whose reports record no failure counts as one failed test,
so that a shard that never ran its cases cannot pass unnoticed.
"""

import glob
import os
import re
import sys
import xml.etree.ElementTree as ET


def main():
    preset, results, junit, excerpts = sys.argv[1:5]
    passed = failed = skipped = 0
    lines = []
    notes = []
    failing_reports = set()  # "<binary>.<index>" of shards whose reports record a failure
    for path in sorted(glob.glob(os.path.join(results, "*.xml"))):
        shard = ".".join(os.path.basename(path).split(".")[:2])
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as error:
            failed += 1
            failing_reports.add(shard)
            lines.append(f"{preset}\tFAILED\t{os.path.basename(path)} (unreadable report: {error})")
            continue
        for case in root.iter("testcase"):
            name = f"{case.get('classname')}.{case.get('name')}"
            failure = case.find("failure")
            skip = case.find("skipped")
            if failure is not None:
                failed += 1
                failing_reports.add(shard)
                lines.append(f"{preset}\tFAILED\t{name}")
                said = [l for l in (failure.text or failure.get("message") or "").splitlines() if l.strip()]
                notes.append(f"  [{preset}] {name}\n" + "".join(
                    f"      {l[:200]}\n" for l in (said[:12] or ["(no message in its output)"])))
            elif case.get("status") == "notrun":
                skipped += 1
                lines.append(f"{preset}\tdisabled (DISABLED_ test; the reason is beside it in tests/)\t{name}")
            elif case.get("result") == "skipped" or skip is not None:
                skipped += 1
                text = (skip.get("message") if skip is not None else "") or ""
                # GoogleTest's message is "<file>:<line>\n<reason>".
                reason = text.split("\n", 1)[1].strip() if "\n" in text else ""
                lines.append(f"{preset}\t{reason or 'skipped (no reason given)'}\t{name}")
            else:
                passed += 1
    # Shards that ctest saw fail without a failure in their reports.
    if os.path.exists(junit):
        text = open(junit, encoding="utf-8", errors="replace").read()
        for match in re.finditer(r'<testcase name="shard\.([^"]+)\.(\d+)"[^>]*status="([^"]*)"', text):
            binary, index, status = match.groups()
            if status == "fail" and f"{binary}.{index}" not in failing_reports:
                failed += 1
                lines.append(f"{preset}\tFAILED\tshard.{binary}.{index} (no case reported a failure)")
                notes.append(f"  [{preset}] shard.{binary}.{index}\n      the shard failed ({status})"
                             " and no report of its cases says why: see its output in the log\n")
    print(passed, failed, skipped)
    for line in sorted(lines, key=lambda l: l.split("\t")[2]):
        print(line)
    with open(excerpts, "a", encoding="utf-8") as out:
        out.writelines(notes)


if __name__ == "__main__":
    main()
