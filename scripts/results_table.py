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
import dataclasses
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


def header_fields(machine: dict, rows: list[dict]) -> list[tuple[str, str, bool]]:
    """What was measured where, from what the run recorded: (label, value, value is code) each."""
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
    fields = [("Compiler", compiler, False), ("machine", where, False), ("git", git, True), ("date", date, False)]
    if machine.get("sizes"):
        fields.append(("sizes", machine["sizes"], False))
    if reps:
        fields.append(("timed reps per cell", f"{reps[0]}" + (f"–{reps[-1]}" if len(reps) > 1 else ""), False))
    if machine.get("duration_s") is not None:
        fields.append(("duration", f"{machine['duration_s'] / 60:.1f} min", False))
    return fields


def header(machine: dict, rows: list[dict]) -> str:
    """One paragraph: what was measured where, from what the run recorded."""
    text = " · ".join(f"**{label}** " + (f"`{value}`" if code else value)
                      for label, value, code in header_fields(machine, rows)) + "."
    if machine.get("command"):
        text += f" Command: `{machine['command']}`."
    return text


@dataclasses.dataclass
class Cell:
    """One time cell: its text, whether the measurement was noisy, the row it comes from (None: not
    measured at that P)."""
    text: str
    noisy: bool
    row: dict | None


@dataclasses.dataclass
class Line:
    """One line of the table: a problem, size and runtime across the worker counts."""
    problem: str
    size: str
    runtime: str
    times: list[Cell]  # one per worker count, in the order of Summary.workers
    rss: str
    check: str

    @property
    def name(self) -> str:
        return self.problem if self.size == "default" else f"{self.problem} {self.size}"

    def texts(self, noisy_mark: str = "*") -> list[str]:
        """The line's cells as text, in the table's column order."""
        return ([self.name, self.runtime] + [c.text + (noisy_mark if c.noisy else "") for c in self.times]
                + [self.rss, self.check])


@dataclasses.dataclass
class Summary:
    """The table of a run, before it is written as Markdown (results.md) or HTML (index.html)."""
    workers: list[int]
    lines: list[Line]
    noisy: int

    @property
    def columns(self) -> list[str]:
        return ["problem", "runtime"] + [f"P = {p}" for p in self.workers] + ["peak RSS MiB", "check"]


LEGEND = ("Each cell: the median wall time of the root call over the timed repetitions, and in "
          "brackets the speedup T_s/T_P over the serial projection (`serial`, run at one worker). "
          "Peak RSS at each P, left to right. Check: OK = every answer matched the reference, "
          "UNREF = no reference answer but every runtime and P agreed, FAIL = a wrong answer or no result "
          "(the run's summary.txt says why).")


def noisy_note(noisy: int, mark: str) -> str:
    return (f"Cells marked {mark} ({noisy}) ran while other processes kept more than {NOISE_CORES} cores "
            "busy: read them as noisy.")


def summarise(data: dict) -> Summary:
    """One line per problem, size and runtime (in run order); one time cell per worker count."""
    rows = [r for r in data["rows"] if "problem" in r]
    workers = sorted({r["workers"] for r in rows})
    cells: dict[tuple, dict[int, dict]] = {}  # (problem, size, runtime) -> P -> row, in run order
    for r in rows:
        cells.setdefault((r["problem"], r["size"], r["runtime"]), {})[r["workers"]] = r
    noisy = 0
    lines = []
    for (problem, size, runtime), by_p in cells.items():
        times, rss, checks = [], [], []
        for p in workers:
            r = by_p.get(p)
            if r is None or "median_s" not in r:
                times.append(Cell("FAIL" if r is not None else "—", False, r))
            else:
                text = fmt_time(r["median_s"])
                if runtime != "serial" and r.get("speedup") is not None:
                    text += f" ({r['speedup']:.2f}×)"
                is_noisy = (r.get("other_cores") or 0) > NOISE_CORES
                noisy += is_noisy
                times.append(Cell(text, is_noisy, r))
            if r is not None:
                rss.append(f"{r['maxrss_kib'] / 1024:.1f}")
                checks.append(r.get("check", "?"))
        check = "/".join(sorted(set(checks), key=checks.index))
        lines.append(Line(problem, size, runtime, times, " / ".join(rss), check))
    return Summary(workers, lines, noisy)


def table(data: dict) -> str:
    """The run as Markdown: the header paragraph, the table and its legend."""
    rows = [r for r in data["rows"] if "problem" in r]
    s = summarise(data)
    lines = [header(data.get("machine", {}), rows), "",
             "| " + " | ".join(s.columns) + " |", "|" + " --- |" * 2 + " ---: |" * (len(s.workers) + 1) + " --- |"]
    lines += ["| " + " | ".join(line.texts("\\*")) + " |" for line in s.lines]
    lines += ["", LEGEND]
    if s.noisy:
        lines.append(noisy_note(s.noisy, "\\*"))
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

    def run() -> None:
        text = table(load(Path(args.run)))
        if args.update:
            update(Path(args.update), text)
            print(f"results_table: updated {args.update} from {args.run}")
        else:
            print(text)

    return reporting_errors("results_table", run)


def reporting_errors(name: str, action) -> int:
    """Runs action(); returns 0, or 1 after saying (as `name`) why a run or file could not be read
    or written."""
    try:
        action()
    except (OSError, ValueError, KeyError) as e:
        print(f"{name}: {e!r}" if isinstance(e, KeyError) else f"{name}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
