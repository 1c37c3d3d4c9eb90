#!/usr/bin/env python3
"""Work/span prediction vs measured speedup at 2 workers (the prediction should hold within 15 %).

For each program, in interleaved rounds:
  * the prediction: <ot>/<problem>_magpie --workspan (a MAGPIE_OBSERVE_TASKS build) prints the
    predicted speedup range at P workers (lower: T1/(T1/P + burdened span), upper: min(P, T1/T∞));
  * the measurement: <bin>/<problem>_magpie (the default build) at 1 and at P workers.
The speedup is median(T at 1 worker) / median(T at P workers) over all rounds' repetitions.

  cmake --preset bench && cmake --build build/bench -j2 --target fib_magpie ...
  cmake --preset bench -B build/bench-ot -DMAGPIE_OBSERVE_TASKS=ON && cmake --build build/bench-ot ...
  bench/workspan_check.py --bin build/bench/bench/bin --ot build/bench-ot/bench/bin
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

# (problem, size, extra arguments, label). Zipf twice: the hand-written recursive split (a fixed
# DAG) and magpie::for_each, whose lazy splitting builds a different DAG when nobody steals (the
# one-worker run the analysis watches): see docs/guide/tracing.md.
PROGRAMS = [("fib", "default", [], "fib"), ("nqueens", "default", [], "nqueens"),
            ("uts", "T1", [], "uts T1"), ("zipf", "512", ["--variant", "split"], "zipf split"),
            ("zipf", "512", [], "zipf for_each")]


def busy_cpu_seconds():
    """CPU seconds the whole machine has been busy (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / os.sysconf("SC_CLK_TCK")


def wait_quiet(limit):
    """Waits (up to `limit` s) for a second in which other processes kept < 0.2 cores busy."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        b0 = busy_cpu_seconds()
        time.sleep(1.0)
        b1 = busy_cpu_seconds()
        if b0 is None or b1 is None or b1 - b0 <= 0.2:
            break


OTHERS = []  # cores other processes kept busy during each measured run


def run(cmd, measured=False):
    b0, own0, t0 = busy_cpu_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    b1, own1, wall = busy_cpu_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - t0
    if measured and b0 is not None and b1 is not None:
        own = own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime
        OTHERS.append(max(0.0, (b1 - b0 - own) / wall))
    found = {}
    for line in out.splitlines():
        for tag in ("@@WORKSPAN ", "@@RESULT "):
            if line.startswith(tag):
                found[tag.strip()] = json.loads(line[len(tag):])
    if found.get("@@RESULT", {}).get("check") == "FAIL":
        sys.exit(f"wrong answer: {' '.join(cmd)}")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", required=True, help="default build's bench/bin")
    ap.add_argument("--ot", required=True, help="MAGPIE_OBSERVE_TASKS build's bench/bin")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions per run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--clock", default="auto", choices=["auto", "steady", "thread_cpu"],
                    help="the probe's clock; auto: thread_cpu (a preempted worker's clock stops,"
                         " so a busy machine does not lengthen the span), but steady for fib, whose"
                         " 46 M events would cost a system call each")
    ap.add_argument("--only", default="", help="comma-separated problems")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before each measured run, wait up to S s for the machine to be idle")
    ap.add_argument("--quiet", type=float, default=0.25, metavar="CORES",
                    help="runs during which other processes kept at most CORES busy count as quiet")
    a = ap.parse_args()
    programs = [p for p in PROGRAMS if not a.only or p[0] in a.only.split(",")]
    data = {p[3]: {"lower": [], "upper": [], "par": [], "bpar": [], "t1": [], "tp": [],
                   "q1": [], "qp": []} for p in programs}
    for r in range(a.rounds):
        for prob, size, extra, label in programs:
            d = data[label]
            clock = a.clock if a.clock != "auto" else "steady" if prob == "fib" else "thread_cpu"
            ws = run([f"{a.ot}/{prob}_magpie", "--size", size, "--workspan", "--clock", clock,
                      "--reps", "1", "--warmup", "0"] + extra)["@@WORKSPAN"]
            row = next(s for s in ws["speedup"] if s["workers"] == a.workers)
            d["lower"].append(row["lower"])
            d["upper"].append(row["upper"])
            d["par"].append(ws["parallelism"])
            d["bpar"].append(ws["burdened_parallelism"])
            for workers, key in ((1, "t1"), (a.workers, "tp")):
                wait_quiet(a.wait_quiet)
                res = run([f"{a.bin}/{prob}_magpie", "--size", size, "--workers", str(workers),
                           "--reps", str(a.reps), "--warmup", "1"] + extra, measured=True)["@@RESULT"]
                d[key].extend(res["times"])
                if OTHERS and OTHERS[-1] <= a.quiet:  # a run the rest of the machine left alone
                    d["q" + key[1]].extend(res["times"])
            print(f"round {r + 1}/{a.rounds} {label}: predicted {row['lower']:.3f}..{row['upper']:.3f}"
                  f", T1 {statistics.median(d['t1'][-a.reps:]):.4f} s,"
                  f" T{a.workers} {statistics.median(d['tp'][-a.reps:]):.4f} s", flush=True)
    print(f"\nP = {a.workers}; medians over {a.rounds} rounds ({a.rounds * a.reps} timed reps per"
          " worker count)")
    if OTHERS:
        print(f"cores kept busy by other processes during the measured runs: median"
              f" {statistics.median(OTHERS):.2f}, max {max(OTHERS):.2f}")
    print(f"{'program':14} {'parallelism':>11} {'burdened':>9} {'lower':>6} {'upper':>6}"
          f" {'T1 s':>8} {'TP s':>8} {'speedup':>7}  {'in range':8} {'off by':>6}"
          f"  {'quiet runs':>10} {'speedup':>7} {'off by':>6}")
    for prob, size, extra, label in programs:
        d = data[label]
        med = {k: statistics.median(v) for k, v in d.items() if v}

        def off_by(speedup):
            nearest = min(max(speedup, med["lower"]), med["upper"])
            return abs(nearest - speedup) / speedup

        speedup = med["t1"] / med["tp"]
        inside = med["lower"] <= speedup <= med["upper"]
        quiet = ""
        if d["q1"] and d["qp"]:
            qs = med["q1"] / med["qp"]
            quiet = f"  {len(d['q1']):4}+{len(d['qp']):<5} {qs:7.3f} {100 * off_by(qs):5.1f}%"
        print(f"{label:14} {med['par']:11.1f} {med['bpar']:9.1f} {med['lower']:6.3f}"
              f" {med['upper']:6.3f} {med['t1']:8.4f} {med['tp']:8.4f} {speedup:7.3f}  "
              f"{'yes' if inside else 'no':8} {100 * off_by(speedup):5.1f}%{quiet}")


if __name__ == "__main__":
    main()
