#!/usr/bin/env python3
"""Tests tools/gdb/magpie.py on gdb_target: in the live process, `magpie tasks` and
`magpie bt 0` must show gdb_level_c -> gdb_level_b -> gdb_level_a and the parked task; then the
same from a core file written by gcore. Exits 77 (ctest: skipped) where gdb cannot trace."""

import os
import re
import subprocess
import sys

SKIP = 77


def run(cmd):
    env = dict(os.environ)
    # LeakSanitizer cannot run under ptrace: the target's leak check is off under gdb.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=240, env=env)
    return p.returncode, p.stdout


def chain_ok(text, start):
    """gdb_level_c, b, a as #0, #1, #2 (root) after `start` in text, each named as written."""
    name = r"(?:\(anonymous namespace\)::)?"
    frame = r"  \[frame 0x[0-9a-f]+\]"
    pattern = (r"#0 " + name + r"gdb_level_c\(int\)" + frame + r"\n\s*#1 " + name +
               r"gdb_level_b\(int\)" + frame + r"\n\s*#2 " + name + r"gdb_level_a\(\)" + frame +
               r" \(root\)")
    return re.search(pattern, text[start:]) is not None


def main():
    gdb, script, target, workdir = sys.argv[1:5]
    with_core = "--no-core" not in sys.argv[5:]  # sanitizer builds: shadow memory makes huge cores
    core = os.path.join(workdir, "magpie_gdb_target.core")
    if os.path.exists(core):
        os.remove(core)
    base = [gdb, "-nx", "-batch", "-ex", "set debuginfod enabled off", "-ex",
            "set auto-load safe-path /", "-x", script]
    code, out = run(base + ["-ex", "break magpie_gdb_stop_here", "-ex", "run",
                            "-ex", "echo ==tasks==\\n", "-ex", "magpie tasks",
                            "-ex", "echo ==bt==\\n", "-ex", "magpie bt 0",
                            *(["-ex", "gcore " + core] if with_core else []), "-ex", "continue",
                            "--args", target])
    print(out)
    if re.search(r"ptrace: Operation not permitted|Could not trace the inferior|"
                 r"not permitted to trace|Cannot create process", out):
        print("SKIPPED: gdb may not trace processes here (ptrace is not permitted)")
        return SKIP
    failures = []
    tasks_at, bt_at = out.find("==tasks=="), out.find("==bt==")
    if tasks_at < 0 or bt_at < 0:
        failures.append("gdb did not stop at magpie_gdb_stop_here")
    else:
        if not chain_ok(out[:bt_at], tasks_at):
            failures.append("`magpie tasks` does not show c -> b -> a")
        if not re.search(r"parked tasks: 1\nparked 0:\n\s*#0 [^\n]*gdb_parked_waiter\(",
                         out[tasks_at:bt_at]):
            failures.append("`magpie tasks` does not list the parked task")
        if not chain_ok(out, bt_at):
            failures.append("`magpie bt 0` does not show c -> b -> a")
    if "target done: depth 2, waited 1" not in out:
        failures.append("the target did not finish normally under gdb")
    if os.path.exists(core):
        code, post = run(base + ["-ex", "echo ==core==\\n", "-ex", "magpie tasks", target, core])
        print(post)
        if not chain_ok(post, max(post.find("==core=="), 0)):
            failures.append("`magpie tasks` on the core file does not show c -> b -> a")
        os.remove(core)
    else:
        print("note: no core file was written (--no-core, or gcore failed): core check not run")
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
