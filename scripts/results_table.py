#!/usr/bin/env python3
"""Prints a benchmark run's results (scripts/bench.py's results.json) as a Markdown table.

Usage:

    scripts/results_table.py [RUN]                          # print the table
    scripts/results_table.py [RUN] --update bench/README.md # replace the table in the file

RUN is a results.json or the folder that holds one (default: results/latest). One row per
problem, size and runtime; one column per worker count P with the median time and, where the run
measured the serial projection, the speedup T_s/T_P; then the peak RSS (VmHWM) at each P and the
answers' check. A header line says where the numbers come from: compiler, CPU and how many,
kernel, git commit, date, sizes and the command.

--update FILE replaces everything between the lines `<!-- results:begin -->` and
`<!-- results:end -->` in FILE with the table (the markers stay); it fails, changing nothing, if
FILE lacks either marker. Nothing else is written. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"
NOISE_CORES = 0.15  # as scripts/bench.py: other processes above this many cores made a row noisy


def load(run: Path) -> dict:
    path = run / "results.json" if run.is_dir() else run
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if "rows" not in data:
        raise ValueError(f"{path}: no \"rows\": not a results.json of scripts/bench.py")
    return data


def fmt_time(s: float) -> str:
    """Three significant digits in s, ms or µs."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if s >= scale or unit == "µs":
            v = s / scale
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:.0f} {unit}"
    raise AssertionError("unreachable")


def header(machine: dict, rows: list[dict]) -> str:
    """One paragraph: what was measured where, from what the run recorded."""
    compiler = machine.get("cxx_version") or machine.get("compiler") or "compiler not recorded"
    cpu = machine.get("cpu") or "CPU not recorded"
    nproc = machine.get("nproc")
    where = f"{cpu}, {nproc} CPUs" if nproc else cpu
    if machine.get("kernel"):
        where += f", Linux {machine['kernel']}"
    git = machine.get("git") or "not recorded"
    if machine.get("git_dirty"):
        git += " with uncommitted changes to the sources"
    date = machine.get("date", "date not recorded")
    reps = sorted({r["reps"] for r in rows if "reps" in r})
    parts = [f"**Compiler** {compiler}", f"**machine** {where}", f"**git** `{git}`", f"**date** {date}"]
    if machine.get("sizes"):
        parts.append(f"**sizes** {machine['sizes']}")
    if reps:
        parts.append(f"**timed reps per cell** {reps[0]}" + (f"–{reps[-1]}" if len(reps) > 1 else ""))
    if machine.get("duration_s") is not None:
        parts.append(f"**duration** {machine['duration_s'] / 60:.1f} min")
    text = " · ".join(parts) + "."
    if machine.get("command"):
        text += f" Command: `{machine['command']}`."
    return text


def table(data: dict) -> str:
    rows = [r for r in data["rows"] if "problem" in r]
    workers = sorted({r["workers"] for r in rows})
    head = ["problem", "runtime"] + [f"P = {p}" for p in workers] + ["peak RSS MiB", "check"]
    lines = [header(data.get("machine", {}), rows), "",
             "| " + " | ".join(head) + " |", "|" + " --- |" * 2 + " ---: |" * (len(workers) + 1) + " --- |"]
    cells: dict[tuple, dict[int, dict]] = {}  # (problem, size, runtime) -> P -> row, in run order
    for r in rows:
        cells.setdefault((r["problem"], r["size"], r["runtime"]), {})[r["workers"]] = r
    noisy = 0
    for (problem, size, runtime), by_p in cells.items():
        name = problem if size == "default" else f"{problem} {size}"
        times, rss, checks = [], [], []
        for p in workers:
            r = by_p.get(p)
            if r is None or "median_s" not in r:
                times.append("FAIL" if r is not None else "—")
            else:
                cell = fmt_time(r["median_s"])
                if runtime != "serial" and r.get("speedup") is not None:
                    cell += f" ({r['speedup']:.2f}×)"
                if (r.get("other_cores") or 0) > NOISE_CORES:
                    cell += "\\*"
                    noisy += 1
                times.append(cell)
            if r is not None:
                rss.append(f"{r['maxrss_kib'] / 1024:.1f}")
                checks.append(r.get("check", "?"))
        check = "/".join(sorted(set(checks), key=checks.index))
        lines.append("| " + " | ".join([name, runtime] + times + [" / ".join(rss), check]) + " |")
    lines += ["", "Each cell: the median wall time of the root call over the timed repetitions, and in "
              "brackets the speedup T_s/T_P over the serial projection (`serial`, run at one worker). "
              "Peak RSS at each P, left to right. Check: OK = every answer matched the reference, "
              "UNREF = no reference answer but every runtime and P agreed, FAIL = a wrong answer or no result "
              "(the run's summary.txt says why)."]
    if noisy:
        lines.append(f"Cells marked \\* ({noisy}) ran while other processes kept more than {NOISE_CORES} cores "
                     "busy: read them as noisy.")
    return "\n".join(lines)


def update(path: Path, text: str) -> None:
    doc = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or not pattern.search(doc):
        raise ValueError(f"{path}: needs exactly one line {BEGIN} followed by one line {END}")
    path.write_text(pattern.sub(lambda _: f"{BEGIN}\n{text}\n{END}", doc), encoding="utf-8")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", nargs="?", default=str(ROOT / "results" / "latest"),
                   help="a results.json, or the run folder that holds it (default: results/latest)")
    p.add_argument("--update", metavar="FILE",
                   help=f"replace the text between {BEGIN} and {END} in FILE instead of printing")
    args = p.parse_args(argv)
    try:
        text = table(load(Path(args.run)))
        if args.update:
            update(Path(args.update), text)
            print(f"results_table: updated {args.update} from {args.run}")
        else:
            print(text)
    except (OSError, ValueError, KeyError) as e:
        print(f"results_table: {e!r}" if isinstance(e, KeyError) else f"results_table: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
