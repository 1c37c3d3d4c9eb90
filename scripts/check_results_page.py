#!/usr/bin/env python3
"""Checks the benchmark results page (scripts/results_page.py) as headless Chromium renders it.

Usage: scripts/check_results_page.py [--fixture DIR] [--chromium PATH] [--keep DIR]

Copies a run folder (default tests/results_page: a results.json in scripts/bench.py's format, with
fib, UTS T1 and skynet at P = 1 and 2, a noisy cell, a failed measurement, a line without P = 1
and a command that needs escaping, and a placeholder plot) to a temporary folder, writes its
index.html with `scripts/results_page.py RUN`, and opens the page in headless Chromium twice:

* --screenshot (1200×900): the PNG must exist, have the window's size and not be blank;
* --dump-dom: in the document Chromium built, the table #results must hold what results.json
  says: the columns and every line, cell by cell, as results.md writes them
  (scripts/results_table.py), every results.json row exactly once, in the cell of its problem,
  size, runtime and P, with its median (data-median-s) and its time and noise mark; the header
  must name the run's compiler, machine and commit, the command must read exactly as recorded
  (so it was escaped), and every plot in the folder must be on the page and loaded.

Exit status 0 when all of that holds; 1, saying what differs, otherwise, and when Chromium is not
installed (scripts/deps.sh test installs it) or fails. Standard library only.
"""

from __future__ import annotations

import argparse
import html.parser
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import results_table
import results_page

ROOT = Path(__file__).resolve().parent.parent
WINDOW = (1200, 900)


class Dom(html.parser.HTMLParser):
    """The parts of the page the check reads: #results's header and rows, #run, #command, images."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.columns: list[str] = []
        self.rows: list[tuple[dict, list[tuple[dict, str]]]] = []  # (tr attributes, [(td attributes, text)])
        self.images: list[dict] = []
        self.texts: dict[str, str] = {}  # id -> text, for #run and #command
        self.tables = 0
        self._in_table = False
        self._cell: tuple[dict, list[str]] | None = None
        self._id: tuple[str, str, list[str]] | None = None  # (id, tag, text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table" and a.get("id") == "results":
            self._in_table = True
            self.tables += 1
        elif tag == "img":
            self.images.append(a)
        elif self._in_table and tag == "tr" and "data-problem" in a:
            self.rows.append((a, []))
        elif self._in_table and tag in ("td", "th"):
            self._cell = (a, [])
        if a.get("id") in ("run", "command"):
            self._id = (a["id"], tag, [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif tag in ("td", "th") and self._cell is not None:
            attrs, text = self._cell
            if tag == "th":
                self.columns.append("".join(text))
            elif self.rows:
                self.rows[-1][1].append((attrs, "".join(text)))
            self._cell = None
        if self._id is not None and tag == self._id[1]:
            self.texts[self._id[0]] = " ".join("".join(self._id[2]).split())
            self._id = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[1].append(data)
        if self._id is not None:
            self._id[2].append(data)


def chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: Chromium refuses to run as root (CI) with its sandbox on.
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           f"--user-data-dir={profile}", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with status {res.returncode}:\n{res.stderr[-2000:]}")
    return res


def check_png(path: Path) -> str:
    """Fails unless `path` is a PNG of the window's size whose rows are not all alike."""
    if not path.is_file():
        raise RuntimeError(f"Chromium wrote no screenshot {path}")
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise RuntimeError(f"the screenshot {path} is not a PNG")
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    if (width, height) != WINDOW:
        raise RuntimeError(f"the screenshot is {width}×{height}, not the window's {WINDOW[0]}×{WINDOW[1]}")
    idat, at = b"", 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + length]
        at += 12 + length
    pixels = zlib.decompress(idat)
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    stride = 1 + width * channels * depth // 8
    rows = {pixels[i:i + stride] for i in range(0, len(pixels), stride)}
    # A blank or single-colour page has a handful of distinct (filtered) rows; text has hundreds.
    if len(rows) < height // 10:
        raise RuntimeError(f"the screenshot looks blank: {len(rows)} distinct rows of {height}")
    return f"{width}×{height} PNG, {len(data)} bytes, {len(rows)} distinct rows"


def expected_header(machine: dict, rows: list[dict]) -> str:
    fields = results_table.header_fields(machine, rows)
    return " ".join((" · ".join(f"{label} {value}" for label, value, _ in fields) + ".").split())


def check_dom(dom: Dom, data: dict, run: Path) -> list[str]:
    """What differs between the rendered page and results.json (empty: nothing)."""
    errors: list[str] = []
    machine = data.get("machine", {})
    rows = [r for r in data["rows"] if "problem" in r]
    summary = results_table.summarise(data)
    if dom.tables != 1:
        return [f"the page has {dom.tables} tables with id=\"results\", not 1"]
    if dom.columns != summary.columns:
        errors.append(f"columns: page {dom.columns}, results.md {summary.columns}")
    if len(dom.rows) != len(summary.lines):
        errors.append(f"the table has {len(dom.rows)} lines, results.json {len(summary.lines)} "
                      "(one per problem, size and runtime)")
    # Line by line, cell by cell: the text results.md shows (with the noise mark as "*").
    for i, (line, (attrs, cells)) in enumerate(zip(summary.lines, dom.rows), 1):
        want_key = (line.problem, line.size, line.runtime)
        got_key = (attrs.get("data-problem"), attrs.get("data-size"), attrs.get("data-runtime"))
        if got_key != want_key:
            errors.append(f"line {i}: is {got_key}, results.json has {want_key} there")
        got = [text.strip() for _, text in cells]
        if got != line.texts():
            errors.append(f"line {i} {want_key}: page {got}\n    results.md {line.texts()}")
    # Each results.json row, found by its data attributes: the median and the time it shows.
    cells_by_key = {}
    for attrs, cells in dom.rows:
        for cell_attrs, text in cells:
            if "data-workers" in cell_attrs:
                key = (attrs.get("data-problem"), attrs.get("data-size"), attrs.get("data-runtime"),
                       cell_attrs["data-workers"])
                if key in cells_by_key:
                    errors.append(f"two cells for {key}")
                cells_by_key[key] = (cell_attrs, text.strip())
    for r in rows:
        key = (r["problem"], r["size"], r["runtime"], str(r["workers"]))
        if key not in cells_by_key:
            errors.append(f"results.json row {key} is not on the page")
            continue
        attrs, text = cells_by_key.pop(key)
        noisy = (r.get("other_cores") or 0) > results_table.NOISE_CORES
        if "median_s" not in r:
            want = "FAIL"
        else:
            want = results_table.fmt_time(r["median_s"])
            if r["runtime"] != "serial" and r.get("speedup") is not None:
                want += f" ({r['speedup']:.2f}×)"
            want += "*" if noisy else ""
            if attrs.get("data-median-s") is None or float(attrs["data-median-s"]) != r["median_s"]:
                errors.append(f"{key}: data-median-s {attrs.get('data-median-s')!r}, results.json {r['median_s']!r}")
        if text != want:
            errors.append(f"{key}: shows {text!r}, results.json says {want!r}")
        if (attrs.get("data-noisy") == "1") != noisy:
            errors.append(f"{key}: data-noisy {attrs.get('data-noisy')!r}, other_cores {r.get('other_cores')!r}")
    for key, (_, text) in cells_by_key.items():
        if text != "—":
            errors.append(f"{key}: shows {text!r} but results.json has no such row")
    # The header and the command, as text: markup in a value would change it.
    want = expected_header(machine, rows)
    if dom.texts.get("run") != want:
        errors.append(f"#run: page {dom.texts.get('run')!r}\n    results.json {want!r}")
    if machine.get("command") and dom.texts.get("command") != " ".join(machine["command"].split()):
        errors.append(f"#command: page {dom.texts.get('command')!r}, results.json {machine['command']!r}")
    # Plots: every one in the folder, each loaded by the browser.
    shown = [img.get("src") for img in dom.images]
    for name, _ in results_page.plots(run):
        if name not in shown:
            errors.append(f"the plot {name} is not on the page")
    for img in dom.images:
        if img.get("data-loaded") != "yes":
            errors.append(f"the image {img.get('src')!r} did not load (data-loaded={img.get('data-loaded')!r})")
    if not dom.images:
        errors.append("the page shows no plot (the fixture has one)")
    return errors


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fixture", default=str(ROOT / "tests" / "results_page"),
                   help="a run folder with results.json and plots (default: tests/results_page)")
    p.add_argument("--chromium", default=os.environ.get("CHROMIUM", ""),
                   help="the browser (default: $CHROMIUM, else chromium or chromium-browser on PATH)")
    p.add_argument("--keep", metavar="DIR", help="leave the page, screenshot and DOM in DIR")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    browser = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("check_results_page: FAIL: Chromium is not installed (chromium on PATH, or --chromium); "
              "scripts/deps.sh test installs it", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="magpie-results-page-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        run = work / "run"
        work.mkdir(parents=True, exist_ok=True)
        if run.exists():
            shutil.rmtree(run)
        shutil.copytree(args.fixture, run, ignore=shutil.ignore_patterns("index.html"))
        try:
            subprocess.run([sys.executable, str(ROOT / "scripts" / "results_page.py"), str(run)], check=True)
            url = (run / "index.html").resolve().as_uri()
            shot = work / "screenshot.png"
            chromium(browser, Path(tmp) / "profile", f"--screenshot={shot}",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}", url)
            said = check_png(shot)
            dom_text = chromium(browser, Path(tmp) / "profile", "--dump-dom", url).stdout
            (work / "dom.html").write_text(dom_text, encoding="utf-8")
            dom = Dom()
            dom.feed(dom_text)
            data = results_table.load(run)
            errors = check_dom(dom, data, run)
        except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as e:
            print(f"check_results_page: FAIL: {e}", file=sys.stderr)
            return 1
        if errors:
            print(f"check_results_page: FAIL: the page Chromium rendered from {args.fixture} disagrees "
                  "with its results.json:", file=sys.stderr)
            for e in errors:
                print(f"  {e}", file=sys.stderr)
            return 1
        cells = sum(len(cells) for _, cells in dom.rows)
        print(f"check_results_page: OK ({time.monotonic() - t0:.1f} s): {len(dom.rows)} lines, {cells} cells "
              f"and {len(data['rows'])} results.json rows agree; {len(dom.images)} plot(s) loaded; "
              f"screenshot {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
