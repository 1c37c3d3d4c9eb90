#!/usr/bin/env python3
"""Writes a benchmark run's results page: RUN/index.html, one self-contained HTML file.

Usage:

    scripts/results_page.py RUN              # writes RUN/index.html
    scripts/results_page.py RUN -o FILE      # writes FILE instead

RUN is the folder scripts/bench.py wrote (results/<timestamp>, or results/latest) or its
results.json. The page holds what results.md holds (scripts/results_table.py: the header line,
the table and its legend) and the run's plots (the .png and .svg files beside results.json),
each with a caption, referenced by file name, so the page opens from the run's folder: open
RUN/index.html in a browser. It needs no network and no script to show anything. Standard
library only.

The table is <table id="results">: one <tr> per problem, size and runtime, with the attributes
data-problem, data-size and data-runtime; its cells in the order of results.md's columns. A time
cell has data-workers (P) and, where it was measured, data-median-s (the median in seconds, as in
results.json) and data-noisy="1" for a noisy measurement. scripts/check_results_page.py reads
them back.
"""

from __future__ import annotations

import argparse
import html
import sys
from pathlib import Path

import results_table  # scripts/results_table.py: the table's content, shared with results.md

# The plots scripts/bench.py writes, in the page's order, with their captions. Any other .png or
# .svg in the run folder follows, captioned with its file name.
PLOTS = {
    "time.png": "Median wall time against the number of workers P, one panel per problem and size "
                "(log scale; the bars span the fastest to the slowest repetition). The dotted line "
                "is the serial projection T_s.",
    "efficiency.png": "Efficiency T_s / (P·T_P) against P: 1 is perfect linear speedup over the serial "
                      "projection.",
    "memory.png": "Peak resident memory (VmHWM) against P. Every process starts at about 3 MiB; read "
                  "a runtime's memory as its growth above that.",
    "zipf_efficiency.png": "The skewed parallel loop: nominal efficiency Σcost / (P·wall) against the "
                           "iterations per loop N at the largest P measured, with Zipf and with "
                           "uniform costs.",
}
# The run's other files, linked under the plots when present.
FILES = {
    "summary.txt": "the table printed at the end of the run, with every column and the memory fits",
    "results.md": "this table in Markdown",
    "results.csv": "every measurement",
    "results.json": "every measurement with every repetition's time and the machine",
    "micro.txt": "the microbenchmarks' output",
    "edges.json": "the rows of the edges benchmark",
    "mpi.md": "the hybrid MPI benchmarks' table (UTS and SUMMA across ranks, ping-pong latencies)",
    "mpi.json": "every run of the hybrid MPI benchmarks",
}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em;
       color: #222; line-height: 1.4; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
table { border-collapse: collapse; margin: 1em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f0f0f0; }
td.num { text-align: right; white-space: nowrap; }
td.fail { color: #b00020; font-weight: bold; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; max-width: 60em; }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def inline_code(text: str) -> str:
    """results_table's Markdown prose (backticks for code) as escaped HTML."""
    parts = text.split("`")
    return "".join(f"<code>{esc(p)}</code>" if i % 2 else esc(p) for i, p in enumerate(parts))


def plots(run: Path) -> list[tuple[str, str]]:
    """(file name, caption) of each plot in the run folder, in the page's order."""
    present = {p.name for p in run.iterdir() if p.suffix in (".png", ".svg") and p.is_file()}
    known = [(name, caption) for name, caption in PLOTS.items() if name in present]
    return known + [(name, name) for name in sorted(present - PLOTS.keys())]


def time_cell(cell: results_table.Cell, workers: int) -> str:
    attrs = f' data-workers="{workers}"'
    if cell.row is not None and "median_s" in cell.row:
        attrs += f' data-median-s="{esc(repr(float(cell.row["median_s"])))}"'
    klass = "num"
    if cell.noisy:
        attrs += ' data-noisy="1"'
    if cell.text == "FAIL":
        klass += " fail"
    mark = '<span title="other processes were busy: noisy">*</span>' if cell.noisy else ""
    return f'<td class="{klass}"{attrs}>{esc(cell.text)}{mark}</td>'


def page(data: dict, run: Path) -> str:
    """The page's HTML for the run in folder `run` (its results.json already loaded as `data`)."""
    machine = data.get("machine", {})
    rows = [r for r in data["rows"] if "problem" in r]
    summary = results_table.summarise(data)
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>magpie benchmark results: {esc(machine.get('date', run.name))}</title>",
           f"<style>{STYLE}</style>", "</head>", "<body>", "<h1>magpie benchmark results</h1>"]
    fields = " · ".join(f"<strong>{esc(label)}</strong> " + (f"<code>{esc(value)}</code>" if code else esc(value))
                        for label, value, code in results_table.header_fields(machine, rows))
    out.append(f'<p id="run">{fields}.</p>')
    if machine.get("command"):
        out.append(f'<p>Command: <code id="command">{esc(machine["command"])}</code></p>')

    out += ['<table id="results">', "<thead><tr>"
            + "".join(f"<th>{esc(c)}</th>" for c in summary.columns) + "</tr></thead>", "<tbody>"]
    for line in summary.lines:
        cells = [f"<td>{esc(line.name)}</td>", f"<td>{esc(line.runtime)}</td>"]
        cells += [time_cell(c, p) for c, p in zip(line.times, summary.workers)]
        check_class = ' class="fail"' if "FAIL" in line.check else ""
        cells += [f'<td class="num">{esc(line.rss)}</td>', f"<td{check_class}>{esc(line.check)}</td>"]
        out.append(f'<tr data-problem="{esc(line.problem)}" data-size="{esc(line.size)}" '
                   f'data-runtime="{esc(line.runtime)}">' + "".join(cells) + "</tr>")
    out += ["</tbody>", "</table>", f"<p>{inline_code(results_table.LEGEND)}</p>"]
    if summary.noisy:
        out.append(f"<p>{esc(results_table.noisy_note(summary.noisy, '*'))}</p>")

    shown = plots(run)
    if shown:
        out.append("<h2>Plots</h2>")
    for name, caption in shown:
        # data-loaded says whether the browser could show the image (scripts/check_results_page.py).
        out.append(f'<figure><img src="{esc(name)}" alt="plot {esc(name)}" '
                   """onload="this.dataset.loaded='yes'" onerror="this.dataset.loaded='no'">"""
                   f"<figcaption>{esc(caption)}</figcaption></figure>")
    files = [(name, what) for name, what in FILES.items() if (run / name).is_file()]
    if files:
        out.append("<h2>Files of this run</h2>")
        out.append("<ul>" + "".join(f'<li><a href="{esc(n)}">{esc(n)}</a>: {esc(w)}</li>' for n, w in files)
                   + "</ul>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def write(run: Path, output: Path | None = None) -> Path:
    """Writes the page of the run in folder `run` (or of the results.json `run`); returns its path."""
    folder = run if run.is_dir() else run.parent
    output = output or folder / "index.html"
    output.write_text(page(results_table.load(run), folder), encoding="utf-8")
    return output


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="a run folder of scripts/bench.py (results/latest, results/<timestamp>) or its results.json")
    p.add_argument("-o", "--output", help="where to write the page (default: RUN/index.html)")
    args = p.parse_args(argv)
    output = Path(args.output) if args.output else None
    return results_table.reporting_errors(
        "results_page", lambda: print(f"results_page: wrote {write(Path(args.run), output)}"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
