#!/usr/bin/env python3
"""magpie's benchmark runner: every problem × runtime × worker count, one process per measurement.

Usage (normally through scripts/bench.sh, which installs packages and builds first):

    scripts/bench.py [--paper] [--only fib,uts:T3,...] [--runtimes serial,magpie-lazy,...]
                     [--workers 1,2] [--reps 5] [--compiler gcc|clang]

Each measurement is a separate process (so its peak RSS, read from the OS with wait4, is its
own). The binary runs warm-up repetitions and then timed ones and prints one @@RESULT JSON line;
this script collects them, checks answers (each binary checks against BENCHMARKS.md; answers
without a reference must agree across runtimes), prints a summary table and writes raw results
(CSV, JSON), the Markdown table of scripts/results_table.py (results.md), plots and one page that
shows the table and the plots (index.html, scripts/results_page.py) to results/<timestamp>/ (and
results/latest). It changes no tracked file; it prints the command that puts results.md into
bench/README.md.

At the end it says what ran, what was missing (a binary that was not built, the self-test, a
microbenchmark) and what failed. Exit status: 0 when everything requested ran and every check
passed, 1 otherwise (2: bad arguments or no build).
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime as dt
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import bench_mpi  # scripts/bench_mpi.py: the hybrid MPI benchmarks
import results_page  # scripts/results_page.py: the run's page (index.html)
import results_table  # scripts/results_table.py: the Markdown summary (results.md)

ROOT = Path(__file__).resolve().parent.parent

# ----------------------------------------------------------------------------------------------
# What there is to run. Sizes are names understood by bench/<problem>/problem.hpp.

ZIPF_COUNTS = ["64", "100", "128", "512", "1024", "2048"]
ZIPF_SIZES = ZIPF_COUNTS + [f"uniform-{n}" for n in ZIPF_COUNTS]
MUTEX_SIZES = ["magpie", "magpie-timed", "semaphore", "shared", "shared-read", "shared-timed",
               "std", "magpie-spaced", "magpie-timed-spaced", "semaphore-spaced", "shared-spaced",
               "shared-read-spaced", "shared-timed-spaced", "std-spaced"]
LOOPS = {"zipf"}  # problems of the parallel-loop runtimes below
# Plain binaries run after the suite, that measure every runtime themselves in one process
# (their table goes to micro.txt); `--only NAME` runs just that one. edges: bench/edges.
STANDALONE = {"edges"}
# The hybrid MPI benchmarks (scripts/bench_mpi.py), after everything else; `--only mpi` alone.
MPI_RUN = "mpi"
ALGOS = {"algo"}

PROBLEMS: dict[str, dict] = {
    "fib": {"default": ["default"], "paper": ["paper"]},
    "integrate": {"default": ["default"], "paper": ["paper"]},
    "matmul": {"default": ["default"], "paper": ["paper"]},
    "nqueens": {"default": ["default"], "paper": ["paper"]},
    "uts": {
        "default": ["T1", "T1L", "T1XXL", "T3", "T3L", "T3XXL"],
        "paper": ["T1-paper", "T1L-paper", "T1XXL-paper", "T3-paper", "T3L-paper", "T3XXL-paper"],
    },
    "skynet": {"default": ["default"], "paper": ["paper"]},
    "zipf": {"default": ZIPF_SIZES, "paper": ZIPF_SIZES},
    # The parallel algorithms (bench/algo): --paper runs the large sizes (0.8-1.6 GB of memory).
    "algo": {"default": ["reduce", "scan", "sort", "find"],
             "paper": ["reduce-1e8", "scan-1e8", "sort-1e7", "find-1e8"]},
    # skynet with 10^6 leaves, spawned the carb.tasking ways (bench/sync/skynet_tasks.cpp)
    "skynet-tasks": {"default": ["6"], "paper": ["6"]},
    # bench/sync: magpie::mutex, a magpie::semaphore of one permit, a magpie::shared_mutex
    # (writers only, and three readers to a writer) and std::mutex (the size names the lock),
    # magpie pools only
    "mutex": {"default": MUTEX_SIZES, "paper": MUTEX_SIZES,
              "runtimes": {"magpie-lazy", "magpie-busy"}},
}

# runtime name -> (binary suffix, extra arguments, problems it applies to or None for all)
RUNTIMES: dict[str, tuple[str, list[str], set[str] | None]] = {
    "serial": ("serial", [], None),
    "magpie-lazy": ("magpie", ["--pool", "lazy"], None),
    "magpie-busy": ("magpie", ["--pool", "busy"], None),
    "magpie*-lazy": ("magpie", ["--pool", "lazy", "--star"], {"uts"}),
    "magpie*-busy": ("magpie", ["--pool", "busy", "--star"], {"uts"}),
    "tbb": ("tbb", [], None),
    "omp": ("omp", [], LOOPS | {"fib", "integrate", "matmul", "nqueens", "uts", "skynet"}),
    # Loop schedulers of the Zipf comparison (the article's runtimes) and std::execution::par.
    "tbb-simple": ("tbb", ["--variant", "simple"], LOOPS),
    "omp-static": ("omp", ["--variant", "static"], LOOPS),
    "omp-guided": ("omp", ["--variant", "guided"], LOOPS),
    "pstl": ("pstl", [], LOOPS | ALGOS),
    "naive": ("naive", [], LOOPS),
    "ws-deque": ("wsdeque", [], LOOPS),
    "magpie-futures-lazy": ("magpie-futures", ["--pool", "lazy"], {"skynet-tasks"}),
    "magpie-group-lazy": ("magpie-group", ["--pool", "lazy"], {"skynet-tasks"}),
    "magpie-counter-lazy": ("magpie-counter", ["--pool", "lazy"], {"skynet-tasks"}),
    "async": ("async", [], {"skynet-tasks"}),
}
DEFAULT_RUNTIMES = ["serial", "magpie-lazy", "magpie-busy", "magpie*-lazy", "tbb", "omp",
                    "tbb-simple", "omp-static", "omp-guided", "pstl", "naive", "ws-deque",
                    "magpie-futures-lazy", "magpie-group-lazy", "magpie-counter-lazy", "async"]
BASELINE = "magpie-lazy"  # the "ratio" column compares with this runtime
NOISE_CORES = 0.15  # other processes using more than this many cores during a measurement: noisy


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--paper", action="store_true", help="the paper's sizes (Table I): hours on 2 cores")
    p.add_argument("--only", default="", help="comma-separated problems, or problem:size (e.g. fib,uts:T3); edges: the edges benchmark alone")
    p.add_argument("--runtimes", default=",".join(DEFAULT_RUNTIMES),
                   help=f"comma-separated, from {','.join(RUNTIMES)} (default: %(default)s)")
    p.add_argument("--workers", default="", help="comma-separated worker counts (default: 1..nproc)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions per measurement (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed repetitions first (default 1)")
    p.add_argument("--max-seconds", type=float, default=6.0,
                   help="a measurement whose warm-up predicts more than this runs fewer reps (never < 3)")
    p.add_argument("--compiler", choices=["gcc", "clang"], default="gcc")
    p.add_argument("--build-dir", default="", help="default: build/bench or build/bench-clang")
    p.add_argument("--results", default=str(ROOT / "results"), help="results root (default: results/)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before one process is killed")
    p.add_argument("--retry-noisy", type=int, default=0, metavar="N",
                   help="re-run a measurement up to N times while other processes kept more than "
                        f"{0.15} cores busy during it; the quietest run is kept (default 0)")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="S",
                   help="before each measurement, wait up to S seconds for the machine to be idle "
                        "(for shared machines; default 0: do not wait)")
    p.add_argument("--placement", default="unpinned",
                   help="magpie pools: unpinned | cores | pus | numa:N | cpus:A,B (recorded per row)")
    p.add_argument("--victims", default="uniform", choices=["uniform", "weighted"],
                   help="magpie pools: victim selection (recorded per row)")
    p.add_argument("--trace", default="", metavar="DIR",
                   help="magpie runtimes: write a Chrome/Perfetto trace per measurement to DIR "
                        "(<problem>-<size>-<runtime>-P<workers>.json; open in ui.perfetto.dev)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-mpi", action="store_true",
                   help="skip the hybrid MPI benchmarks (bench/mpi, scripts/bench_mpi.py)")
    p.add_argument("--no-micro", action="store_true",
                   help="skip the microbenchmarks (micro_fib_overhead, micro_magpie) run after the suite")
    return p.parse_args(argv)


# ----------------------------------------------------------------------------------------------
# Running one measurement


def busy_cpu_seconds() -> float | None:
    """CPU seconds spent busy by the whole machine so far (all cores), from /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run_process(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    """Runs cmd; returns stdout, stderr, exit status, wall time, the OS's peak RSS (KiB) and how
    many cores other processes kept busy meanwhile (a noise indicator)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        busy0 = busy_cpu_seconds()
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4, not by Popen
        wall = time.monotonic() - t0
        busy1 = busy_cpu_seconds()
        own = usage.ru_utime + usage.ru_stime
        others = None
        if busy0 is not None and busy1 is not None and wall > 0:
            others = max(0.0, (busy1 - busy0 - own) / wall)
        out.seek(0)
        err.seek(0)
        return {
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
            "rc": proc.returncode,
            "timed_out": killed.is_set(),
            "wall": wall,
            "maxrss_kib": usage.ru_maxrss,  # Linux: KiB
            "other_cores": others,
        }


def wait_quiet(limit: float) -> float:
    """Waits (up to `limit` seconds) until the whole machine is idle for one second; returns the
    seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        b0 = busy_cpu_seconds()
        time.sleep(1.0)
        b1 = busy_cpu_seconds()
        if b0 is None or b1 is None or b1 - b0 <= NOISE_CORES * 1.0:
            break
    return time.monotonic() - t0


def measure(binary: Path, problem: str, size: str, runtime: str, workers: int, args) -> dict:
    suffix, extra, _ = RUNTIMES[runtime]
    cmd = [str(binary), "--size", size, "--workers", str(workers), "--reps", str(args.reps),
           "--warmup", str(args.warmup), "--max-seconds", str(args.max_seconds)] + extra
    if suffix == "magpie":
        cmd += ["--placement", args.placement, "--victims", args.victims]
        if args.trace:
            Path(args.trace).mkdir(parents=True, exist_ok=True)
            name = f"{problem}-{size}-{runtime}-P{workers}.json".replace("*", "star")
            cmd += ["--trace", str(Path(args.trace) / name)]
    res = run_process(cmd, args.timeout)
    row = {"problem": problem, "size": size, "runtime": runtime, "workers": workers,
           "maxrss_kib": res["maxrss_kib"], "process_wall_s": round(res["wall"], 3),
           "other_cores": None if res["other_cores"] is None else round(res["other_cores"], 3),
           "command": " ".join(cmd)}
    if suffix == "magpie":
        row.update({"placement": args.placement, "victims": args.victims})
    result = None
    for line in res["stdout"].splitlines():
        if line.startswith("@@RESULT "):
            result = json.loads(line[len("@@RESULT "):])
    if result is None or res["rc"] not in (0, 1):
        why = "timed out" if res["timed_out"] else f"exit status {res['rc']}"
        row.update(check="FAIL", note=f"no result ({why}): {res['stderr'].strip()[-400:]}", times=[])
        return row
    times = result.pop("times")
    row.update(result)
    row["runtime"] = runtime  # the runner's name (the binary says the same for magpie/tbb/omp)
    # Peak RSS: the binary's own VmHWM. wait4's ru_maxrss is kept for reference only: it survives
    # exec, so it is never below the RSS of this Python process, which forked the binary.
    row["wait4_maxrss_kib"] = row["maxrss_kib"]
    if result.get("vmhwm_kib", -1) > 0:
        row["maxrss_kib"] = result["vmhwm_kib"]
    row["times"] = times
    if res["rc"] != 0 and row.get("check") != "FAIL":
        row["check"] = "FAIL"
        row["note"] = f"exit status {res['rc']}"
    if times:
        row["median_s"] = statistics.median(times)
        row["min_s"] = min(times)
        row["max_s"] = max(times)
        row["spread"] = (row["max_s"] - row["min_s"]) / row["median_s"] if row["median_s"] > 0 else 0.0
    return row


# ----------------------------------------------------------------------------------------------
# Analysis


def fit_power(ps: list[float], ys: list[float]) -> tuple[float, float, float] | None:
    """Least-squares fit of y ≈ a + b·P^n with a, b ≥ 0, over a grid of n (closed form for a and b
    at each n; a bound that binds is clamped to 0 and the other coefficient refitted)."""
    if len(set(ps)) < 3:
        return None
    best = None
    for i in range(0, 401):
        n = i / 100.0
        xs = [p ** n for p in ps]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        if sxx == 0:
            continue
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
        a = my - b * mx
        if b < 0:
            a, b = my, 0.0
        elif a < 0:
            a, b = 0.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
        sse = sum((a + b * x - y) ** 2 for x, y in zip(xs, ys))
        if best is None or sse < best[3] - 1e-12:
            best = (a, b, n, sse)
    return None if best is None else best[:3]


def analyse(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """Adds speedup, efficiency and ratios; returns the rows and a list of failures."""
    failures = []
    by_key: dict[tuple, list[dict]] = {}
    for r in rows:
        by_key.setdefault((r["problem"], r["size"]), []).append(r)
    for (problem, size), group in by_key.items():
        # Answers must agree across every runtime and worker count.
        answers = {r.get("answer") for r in group if r.get("check") in ("OK", "UNREF")}
        if len(answers) > 1:
            for r in group:
                if r.get("check") in ("OK", "UNREF"):
                    r["check"] = "FAIL"
                    r["note"] = f"runtimes disagree: {sorted(answers)}"
        serial = next((r for r in group if r["runtime"] == "serial" and "median_s" in r), None)
        base = {r["workers"]: r for r in group if r["runtime"] == BASELINE and "median_s" in r}
        for r in group:
            if "median_s" not in r:
                continue
            if serial:
                r["speedup"] = serial["median_s"] / r["median_s"]
                r["efficiency"] = r["speedup"] / r["workers"]
            b = base.get(r["workers"])
            if b:
                r["ratio_time"] = r["median_s"] / b["median_s"]
                r["ratio_rss"] = r["maxrss_kib"] / b["maxrss_kib"] if b["maxrss_kib"] else None
            if "sections" in r:  # bench/sync: time per critical section
                r["ns_per_section"] = r["median_s"] / r["sections"] * 1e9
            if problem == "zipf" and "nominal_loop_s" in r:
                loops = r["loops_per_rep"]
                r["loops_per_s"] = loops / r["median_s"]
                r["nominal_efficiency"] = loops * r["nominal_loop_s"] / (r["workers"] * r["median_s"])
                r["ops_per_s"] = loops * int(size.split("-")[-1]) / r["median_s"]  # iterations/s
        for r in group:
            if r.get("check") == "FAIL":
                failures.append(f"{problem} {size} {r['runtime']} P={r['workers']}: {r.get('note', 'FAIL')}")
    return rows, failures


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def summary_table(rows: list[dict]) -> str:
    head = ["problem", "size", "runtime", "P", "median", "spread", "T_s/T_P", "eff", "MRSS MiB",
            "time/lazy", "rss/lazy", "check"]
    lines = []
    for r in rows:
        extra = ""
        if "loops_per_s" in r:
            extra = (f"  ({r['loops_per_s']:.0f} loops/s, {r['ops_per_s']:.0f} ops/s, "
                     f"nominal eff {r['nominal_efficiency']:.2f})")
        elif "ns_per_section" in r:
            extra = f"  ({r['ns_per_section']:.1f} ns per critical section)"
        lines.append([
            r["problem"], r["size"], r["runtime"], str(r["workers"]), fmt_time(r.get("median_s")),
            f"±{r['spread'] * 50:.1f}%" if "spread" in r else "-",
            f"{r['speedup']:.2f}" if "speedup" in r else "-",
            f"{r['efficiency']:.2f}" if "efficiency" in r else "-",
            f"{r['maxrss_kib'] / 1024:.1f}",
            f"{r['ratio_time']:.2f}" if r.get("ratio_time") is not None else "-",
            f"{r['ratio_rss']:.2f}" if r.get("ratio_rss") is not None else "-",
            r.get("check", "?") + ("*" if (r.get("other_cores") or 0) > NOISE_CORES else "") + extra,
        ])
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)),
           "  ".join("-" * w for w in widths)]
    prev = None
    for l in lines:
        if prev is not None and (l[0], l[1]) != prev:
            out.append("")
        prev = (l[0], l[1])
        out.append("  ".join(c.ljust(w) for c, w in zip(l, widths)))
    return "\n".join(out)


def mrss_fits(rows: list[dict], workers: list[int]) -> str:
    if len(set(workers)) < 3:
        return (f"MRSS fit a + b·P^n (the paper's Table II): needs ≥ 3 worker counts; this run has "
                f"{len(set(workers))} ({','.join(map(str, sorted(set(workers))))}). "
                f"Run with e.g. --workers 1,2,3,4 (oversubscribed beyond nproc).")
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["runtime"] != "serial" and "median_s" in r:
            by.setdefault((r["problem"], r["size"], r["runtime"]), []).append(r)
    out = ["MRSS fit a + b·P^n per runtime (the paper's Table II): n close to 0 = flat, 1 = linear in P",
           f"{'problem':10} {'size':14} {'runtime':14} {'a MiB':>9} {'b MiB':>9} {'n':>6}"]
    for (problem, size, runtime), g in sorted(by.items()):
        fit = fit_power([float(r["workers"]) for r in g], [r["maxrss_kib"] / 1024 for r in g])
        if fit:
            a, b, n = fit
            out.append(f"{problem:10} {size:14} {runtime:14} {a:9.2f} {b:9.3f} {n:6.2f}")
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# Plots (in the style of the paper's figures 5–7)

COLORS = {"serial": "black", "magpie-lazy": "tab:blue", "magpie-busy": "tab:cyan",
          "magpie*-lazy": "tab:purple", "magpie*-busy": "tab:pink", "tbb": "tab:green", "omp": "tab:red",
          "tbb-simple": "olive", "omp-static": "tab:orange", "omp-guided": "salmon", "pstl": "tab:brown",
          "naive": "tab:gray", "ws-deque": "gold", "magpie-futures-lazy": "navy",
          "magpie-group-lazy": "teal", "magpie-counter-lazy": "slateblue", "async": "darkred"}
MARKERS = {"serial": "x", "magpie-lazy": "o", "magpie-busy": "s", "magpie*-lazy": "D",
           "magpie*-busy": "d", "tbb": "^", "omp": "v", "tbb-simple": "<", "omp-static": ">",
           "omp-guided": "P", "pstl": "*", "naive": "h", "ws-deque": "X",
           "magpie-futures-lazy": "1", "magpie-group-lazy": "2", "magpie-counter-lazy": "3",
           "async": "4"}
# A runtime added to RUNTIMES without a style above still gets plotted, in grey.
COLORS = collections.defaultdict(lambda: "tab:gray", COLORS)
MARKERS = collections.defaultdict(lambda: ".", MARKERS)


def plot_zipf(rows: list[dict], outdir: Path, title: str) -> list[str]:
    """zipf_efficiency.png: nominal efficiency Σcost/(P·wall) against N, skewed and uniform costs,
    one line per runtime, at the largest worker count measured."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    z = [r for r in rows if r["problem"] == "zipf" and "nominal_efficiency" in r]
    if not z:
        return []
    p = max(r["workers"] for r in z)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), squeeze=False)
    for ax, uniform in zip(axes.flat, (False, True)):
        for rt in RUNTIMES:
            pts = [r for r in z if r["runtime"] == rt and r["workers"] == p
                   and r["size"].startswith("uniform-") == uniform]
            if not pts or rt == "serial":
                continue
            pts.sort(key=lambda r: int(r["size"].split("-")[-1]))
            ax.plot([int(r["size"].split("-")[-1]) for r in pts], [r["nominal_efficiency"] for r in pts],
                    color=COLORS[rt], marker=MARKERS[rt], ms=4, lw=1.2, label=rt)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("iterations per loop N")
        ax.set_ylabel(f"efficiency Σcost / (P·wall), P = {p}", fontsize=8)
        ax.set_title("uniform costs (the Zipf sample's mean)" if uniform else "Zipf costs (s = 1.5)", fontsize=10)
        ax.axhline(1.0, color="grey", lw=0.6, ls="--")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    handles = {}
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(l, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=6, fontsize=8,
               frameon=False)
    fig.suptitle(f"{title}: skewed parallel loop", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 0.95))
    fig.savefig(outdir / "zipf_efficiency.png", dpi=110)
    plt.close(fig)
    return ["zipf_efficiency.png"]


def plot(rows: list[dict], outdir: Path, title: str) -> list[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib not found: no plots (apt-get install python3-matplotlib)")
        return []
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if "median_s" in r:
            groups.setdefault((r["problem"], r["size"]), []).append(r)
    keys = list(groups)
    if not keys:
        return []
    cols = min(4, len(keys))
    nrows = math.ceil(len(keys) / cols)
    written = []
    for kind, ylabel, fname in [("time", "wall time [s] (median, min–max)", "time.png"),
                                ("efficiency", "efficiency T_s / (P·T_P) (needs the serial runtime)", "efficiency.png"),
                                ("memory", "peak RSS [MiB]", "memory.png")]:
        fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
        for ax, key in zip(axes.flat, keys):
            g = groups[key]
            runtimes = [rt for rt in RUNTIMES if any(r["runtime"] == rt for r in g)]
            for rt in runtimes:
                pts = sorted((r for r in g if r["runtime"] == rt), key=lambda r: r["workers"])
                ps = [r["workers"] for r in pts]
                if kind == "time":
                    ys = [r["median_s"] for r in pts]
                    lo = [r["median_s"] - r["min_s"] for r in pts]
                    hi = [r["max_s"] - r["median_s"] for r in pts]
                    if rt == "serial":
                        ax.axhline(ys[0], color=COLORS[rt], ls=":", lw=1, label="serial (T_s)")
                        continue
                    ax.errorbar(ps, ys, yerr=[lo, hi], color=COLORS[rt], marker=MARKERS[rt], ms=4,
                                capsize=2, lw=1.2, label=rt)
                elif kind == "efficiency":
                    if rt == "serial" or not all("efficiency" in r for r in pts):
                        continue
                    ax.plot(ps, [r["efficiency"] for r in pts], color=COLORS[rt], marker=MARKERS[rt],
                            ms=4, lw=1.2, label=rt)
                else:
                    ys = [r["maxrss_kib"] / 1024 for r in pts]
                    if rt == "serial":
                        ax.axhline(ys[0], color=COLORS[rt], ls=":", lw=1, label="serial")
                        continue
                    ax.plot(ps, ys, color=COLORS[rt], marker=MARKERS[rt], ms=4, lw=1.2, label=rt)
            ax.set_title(f"{key[0]} {key[1]}" if key[1] != "default" else key[0], fontsize=10)
            ax.set_xlabel("workers P")
            ax.set_ylabel(ylabel, fontsize=8)
            ax.set_xticks(sorted({r["workers"] for r in g}))
            if kind == "time":
                ax.set_yscale("log")
            if kind == "efficiency":
                ax.axhline(1.0, color="grey", lw=0.6, ls="--")
                ax.set_ylim(bottom=0)
            if kind == "memory":
                ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
        for ax in list(axes.flat)[len(keys):]:
            ax.axis("off")
        handles, labels = {}, {}
        for ax in axes.flat:
            for h, l in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(l, h)
        if handles:
            fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
                       ncol=min(7, len(handles)), fontsize=9, frameon=False)
        fig.suptitle(f"{title}: {kind}", fontsize=11)
        fig.tight_layout(rect=(0, 0.05, 1, 0.97))
        fig.savefig(outdir / fname, dpi=110)
        plt.close(fig)
        written.append(fname)
    return written


# ----------------------------------------------------------------------------------------------


def machine_info(compiler: str, build_dir: Path) -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cxx = ""
    try:
        for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
            if line.startswith("CMAKE_CXX_COMPILER:"):
                cxx = line.split("=", 1)[1]
    except OSError:
        pass
    version = ""
    if cxx:
        try:
            version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            pass
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    # Uncommitted changes to what the binaries are built from (documentation does not count).
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                            "include", "src", "bench", "cmake", "CMakeLists.txt", "CMakePresets.json",
                            ":(exclude)*.md"], capture_output=True, text=True).stdout.strip() != ""
    return {"host": platform.node(), "cpu": cpu, "nproc": os.cpu_count(), "kernel": platform.release(),
            "compiler": compiler, "cxx": cxx, "cxx_version": version, "git": rev, "git_dirty": dirty,
            "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "loadavg_at_start": os.getloadavg()}


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    build = Path(args.build_dir) if args.build_dir else ROOT / "build" / (
        "bench" if args.compiler == "gcc" else "bench-clang")
    bindir = build / "bench" / "bin"
    if not bindir.is_dir():
        print(f"error: no benchmark binaries in {bindir}: build first (scripts/bench.sh does)", file=sys.stderr)
        return 2

    nproc = os.cpu_count() or 1
    workers = [int(w) for w in args.workers.split(",") if w] if args.workers else list(range(1, nproc + 1))
    runtimes = [r for r in args.runtimes.split(",") if r]
    for r in runtimes:
        if r not in RUNTIMES:
            print(f"error: unknown runtime {r!r} (known: {', '.join(RUNTIMES)})", file=sys.stderr)
            return 2
    scale = "paper" if args.paper else "default"
    selected: list[tuple[str, str]] = []
    only = [o for o in args.only.split(",") if o]
    for problem, sizes in PROBLEMS.items():
        for size in sizes[scale]:
            if only and not any(o == problem or o == f"{problem}:{size}" for o in only):
                continue
            selected.append((problem, size))
    mpi_only = MPI_RUN in only
    standalone = [o for o in only if o in STANDALONE]
    only = [o for o in only if o not in STANDALONE and o != MPI_RUN]
    for o in only:
        if o.split(":")[0] not in PROBLEMS:
            print(f"error: unknown problem {o!r} (known: {', '.join(PROBLEMS)})", file=sys.stderr)
            return 2

    plan = []
    missing: list[str] = []  # what was requested but could not run, with why
    for problem, size in selected:
        for rt in runtimes:
            suffix, _, only_for = RUNTIMES[rt]
            if only_for is not None and problem not in only_for:
                continue
            if rt not in PROBLEMS[problem].get("runtimes", RUNTIMES):  # a problem for some runtimes
                continue
            binary = bindir / f"{problem}_{suffix}"
            if not binary.exists():
                why = f"{binary.name} was not built (its runtime's package is missing?)"
                if why not in missing:
                    missing.append(why)
                    print(f"MISSING: {why}: {rt} not measured")
                continue
            for p in ([1] if rt == "serial" else workers):
                plan.append((binary, problem, size, rt, p))
    if not plan and not standalone and not mpi_only:
        print("error: nothing to measure: no requested problem × runtime has a binary", file=sys.stderr)
        for m in missing:
            print(f"  missing: {m}", file=sys.stderr)
        return 1

    info = machine_info(args.compiler, build)
    info["sizes"] = scale
    load = info["loadavg_at_start"][0]
    print(f"magpie bench: {len(plan)} measurements, {scale} sizes, workers {workers}, reps {args.reps} "
          f"(+{args.warmup} warm-up), {info['cxx_version'] or args.compiler}")
    print(f"machine: {info['cpu']}, {nproc} cores; load average {load:.2f}"
          + ("  — WARNING: the machine is busy; timings will be noisy" if load > 0.7 else ""))

    selftest = bindir / "bench_selftest"
    ran_selftest = False
    if selftest.exists():
        st = run_process([str(selftest)], 300)
        ok = st["rc"] == 0
        print(f"self-test (SHA-1, UTS, Zipf vectors): {'passed' if ok else 'FAILED'}")
        if not ok:
            print(st["stdout"] + st["stderr"])
            print("FAIL: the self-test failed: nothing measured", file=sys.stderr)
            return 1
        ran_selftest = True
    else:
        missing.append(f"{selftest.name} was not built: the problems' building blocks are unchecked")
        print(f"MISSING: {missing[-1]}")

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = Path(args.results) / stamp
    outdir.mkdir(parents=True, exist_ok=True)

    rows: list[dict] = []
    t_start = time.monotonic()
    for i, (binary, problem, size, rt, p) in enumerate(plan, 1):
        label = f"{problem} {size} {rt} P={p}"
        elapsed = time.monotonic() - t_start
        eta = elapsed / (i - 1) * (len(plan) - i + 1) if i > 1 else 0
        print(f"[{i:3}/{len(plan)} {elapsed / 60:4.1f} min, ~{eta / 60:.1f} min left] {label:42}",
              end="", flush=True)
        if args.wait_quiet > 0:
            wait_quiet(args.wait_quiet)
        row = measure(binary, problem, size, rt, p, args)
        for _ in range(args.retry_noisy):
            if (row.get("other_cores") or 0) <= NOISE_CORES or row.get("check") == "FAIL":
                break
            wait_quiet(max(args.wait_quiet, 2.0))
            again = measure(binary, problem, size, rt, p, args)
            if (again.get("other_cores") or 0) < (row.get("other_cores") or 0) or again.get("check") == "FAIL":
                row = again
        rows.append(row)
        med = fmt_time(row.get("median_s"))
        spread = f"±{row['spread'] * 50:.1f}%" if "spread" in row else ""
        noisy = row.get("other_cores") is not None and row["other_cores"] > NOISE_CORES
        print(f" {med:>10} {spread:>7} {row['maxrss_kib'] / 1024:7.1f} MiB  {row.get('check', '?')}"
              + (f"  {row.get('note', '')}" if row.get("check") == "FAIL" else "")
              + (f"  [busy machine: others used {row['other_cores']:.2f} cores]" if noisy else ""), flush=True)
    total = time.monotonic() - t_start

    rows, failures = analyse(rows)
    table = summary_table(rows)
    fits = mrss_fits(rows, workers)
    info["loadavg_at_end"] = os.getloadavg()
    info["duration_s"] = round(total, 1)
    info["command"] = " ".join([Path(sys.argv[0]).name] + argv)

    header = (f"magpie benchmark summary — {info['date']}\n"
              f"machine: {info['cpu']} ({info['nproc']} cores, {info['host']}, Linux {info['kernel']})\n"
              f"compiler: {info['cxx_version']}   git: {info['git']}   sizes: {scale}\n"
              f"command: {info['command']}\n"
              f"load average at start/end: {info['loadavg_at_start'][0]:.2f} / {info['loadavg_at_end'][0]:.2f}"
              f"   duration: {total / 60:.1f} min\n"
              f"median of {args.reps} reps (+{args.warmup} warm-up; fewer, never < 3, when one rep "
              f"takes over {args.max_seconds / args.reps:.1f} s); spread = ±(max−min)/2 of the median; "
              f"T_s = serial projection; ratios are to {BASELINE} at the same P (lower is better for magpie)\n")
    noisy = [r for r in rows if r.get("other_cores") is not None and r["other_cores"] > NOISE_CORES]
    if noisy:
        header += (f"WARNING: {len(noisy)} of {len(rows)} measurements ran while other processes kept more "
                   f"than {NOISE_CORES} cores busy (marked * in the table): their times are not reliable\n")
    else:
        header += f"noise check: no other process used more than {NOISE_CORES} cores during any measurement\n"
    print()
    print(header)
    print(table)
    print()
    print(fits)

    with open(outdir / "results.json", "w") as f:
        json.dump({"machine": info, "rows": rows}, f, indent=1)
    fields = ["problem", "size", "runtime", "workers", "median_s", "min_s", "max_s", "spread", "reps", "other_cores",
              "speedup", "efficiency", "maxrss_kib", "ratio_time", "ratio_rss", "check", "answer",
              "loops_per_s", "ops_per_s", "nominal_efficiency", "ns_per_section", "times", "note", "command"]
    with open(outdir / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "times": " ".join(f"{t:.6g}" for t in r.get("times", []))})
    (outdir / "summary.txt").write_text(header + "\n" + table + "\n\n" + fits + "\n")
    (outdir / "results.md").write_text(results_table.table({"machine": info, "rows": rows}) + "\n")
    plots = []
    if not args.no_plots:
        try:
            plots = plot(rows, outdir, f"magpie bench ({info['compiler']}, {scale} sizes)")
            plots += plot_zipf(rows, outdir, f"magpie bench ({info['compiler']})")
        except Exception as e:  # a plotting problem must not lose the measurements
            print(f"warning: plotting failed ({e!r}); the CSV/JSON results are complete")

    micro_ran: list[str] = []
    if standalone or (not args.no_micro and not only and not mpi_only):
        micro_lines = []
        edges_rows: list[dict] = []
        # sync_bench and sync_parked_memory (bench/sync): plain binaries that check their answers
        # and print "ERROR OCCURRED" (exit status 1) on a wrong one, like Google Benchmark.
        names = ["micro_fib_overhead", "micro_magpie", "sync_latency", "sync_bench",
                 "sync_parked_memory", "io_timers", "io_server", "edges"]
        if only or standalone:
            names = standalone
        for name in names:
            exe = bindir / name
            if not exe.exists():
                missing.append(f"{name} was not built" + ("" if name in ("sync_latency", "edges") else " (libbenchmark-dev missing?)"))
                print(f"\nMISSING: {missing[-1]}")
                continue
            print(f"\nmicrobenchmarks: {name}", flush=True)
            if args.wait_quiet > 0:
                wait_quiet(args.wait_quiet)
            res = run_process([str(exe), "--benchmark_color=false"], 600)
            text = res["stdout"] + ("" if res["rc"] == 0 else f"\n(exit status {res['rc']})\n" + res["stderr"])
            # edges: one @@EDGES {json} line per row (kept in edges.json, left out of the text)
            # and a MISSING line per peer that was not built.
            for line in res["stdout"].splitlines():
                if line.startswith("@@EDGES "):
                    edges_rows.append(json.loads(line[len("@@EDGES "):]))
                elif line.startswith("MISSING: "):
                    missing.append(line[len("MISSING: "):])
            text = "\n".join(l for l in text.splitlines() if not l.startswith("@@EDGES ")) + "\n"
            # Google Benchmark reports a run that called SkipWithError (micro_fib_overhead: a
            # wrong fib) as "ERROR OCCURRED"; the binary then also exits 1.
            errors = [l.strip() for l in res["stdout"].splitlines() if "ERROR OCCURRED" in l]
            if res["rc"] != 0 or errors:
                failures.append(f"{name}: " + ("; ".join(errors) if errors else f"exit status {res['rc']}")
                                + ("  (timed out)" if res["timed_out"] else ""))
            else:
                micro_ran.append(name + (" (every fib checked)" if name == "micro_fib_overhead"
                                         else " (every round trip checked)" if name in ("sync_latency", "edges")
                                         else " (answers checked)" if name.startswith(("sync_", "io_"))
                                         else " (no answers to check)"))
            if (res.get("other_cores") or 0) > NOISE_CORES:
                text += f"\nWARNING: other processes kept {res['other_cores']:.2f} cores busy during this run\n"
            micro_lines.append(f"== {name}\n{text}")
            print(text.rstrip())
        if micro_lines:
            (outdir / "micro.txt").write_text("\n".join(micro_lines))
        if edges_rows:
            with open(outdir / "edges.json", "w") as f:
                json.dump({"machine": info, "rows": edges_rows}, f, indent=1)

    mpi_ran: list[str] = []
    if mpi_only or (not args.no_mpi and not only and not standalone):
        print("\nhybrid MPI benchmarks (scripts/bench_mpi.py)", flush=True)
        mpi = bench_mpi.run(bindir, outdir)
        missing += mpi["missing"]
        failures += mpi["failures"]
        mpi_ran = mpi["ran"]
        if mpi["rows"] or mpi["pingpong"]:
            print("\n" + bench_mpi.table(mpi))

    # Last, so that the page links every file the run wrote; before results/latest, which may be a copy.
    try:
        page = results_page.write(outdir).name
    except (OSError, ValueError, KeyError) as e:  # the files above hold the whole run without it
        print(f"warning: writing the results page failed ({e!r}); the other files are complete")
        page = None

    latest = Path(args.results) / "latest"
    try:
        if latest.is_symlink() or latest.is_file():
            latest.unlink()
        elif latest.is_dir():
            shutil.rmtree(latest)
        latest.symlink_to(stamp)
    except OSError:
        shutil.copytree(outdir, latest)
    print(f"\nresults: {outdir} (also {latest}): " + (f"{page}, " if page else "")
          + "results.csv, results.json, summary.txt, results.md"
          + (", micro.txt" if (outdir / "micro.txt").exists() else "")
          + (", edges.json" if (outdir / "edges.json").exists() else "")
          + (", mpi.json, mpi.md" if (outdir / "mpi.json").exists() else "")
          + (", " + ", ".join(plots) if plots else ""))
    if page:
        print(f"The table and the plots on one page: open {latest / page} in a browser.")
    readme = Path(os.path.relpath(ROOT / "bench" / "README.md"))
    print(f"Markdown summary: {outdir / 'results.md'}. To make it bench/README.md's results table "
          f"(this run changes no tracked file):\n  python3 {Path(os.path.relpath(ROOT / 'scripts'))}/"
          f"results_table.py {outdir} --update {readme}")
    # What ran, what was missing, what failed: "all checks passed" only when all three say so.
    checked = sum(1 for r in rows if r.get("check") == "OK")
    unref = sum(1 for r in rows if r.get("check") == "UNREF")
    print(f"\nran: {len(rows)} measurement(s) ({checked} checked against a reference answer, "
          f"{unref} without one but agreeing across runtimes and worker counts, "
          f"{len(rows) - checked - unref} failed); self-test "
          + ("passed" if ran_selftest else "NOT RUN")
          + ("; microbenchmarks: not requested (--only or --no-micro)"
             if (args.no_micro or only) and not standalone
             else f"; microbenchmarks passed: {', '.join(micro_ran) or 'none'}")
          + (f"; MPI (answers checked): {', '.join(mpi_ran)}" if mpi_ran else ""))
    if missing:
        print(f"MISSING: {len(missing)} requested item(s) did not run:")
        for m in missing:
            print("  " + m)
    if failures:
        print(f"FAIL: {len(failures)} check(s) failed:")
        for f in failures:
            print("  " + f)
    if missing or failures:
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
