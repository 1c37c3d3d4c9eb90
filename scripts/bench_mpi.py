#!/usr/bin/env python3
"""The hybrid MPI benchmarks: distributed UTS and SUMMA with magpie, OpenMP or oneTBB inside each
rank, on 1, 2 and 4 ranks x 1 and 2 workers, then the ping-pong latencies (bench/mpi/).

    scripts/bench_mpi.py BINDIR OUTDIR [--reps 3] [--ranks 1,2,4] [--workers 1,2]

Every run checks its answer (the node count; the product's exact sum): a wrong one fails the
run. Writes OUTDIR/mpi.json (every run's RESULT line) and OUTDIR/mpi.md (the table). Needs
mpiexec (openmpi-bin); without it, or without the binaries, it says so and runs nothing.
scripts/bench.py runs it after the other problems (skip with --no-mpi; alone with --only mpi).

When ranks x workers exceeds the machine's cores, the OpenMP version runs with
OMP_WAIT_POLICY=passive: libgomp's waiting threads otherwise spin on cores that the other ranks
need (4 ranks x 2 workers on 2 cores: seconds instead of tenths), which measures the spin, not
the algorithm. The table marks those cells.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

# (problem, size): sizes that run in tenths of a second per rep on a 2-core machine.
PROBLEMS = [("uts", "T1"), ("uts", "T3L"), ("summa", "default")]
VERSIONS = ["magpie", "omp", "tbb"]


def mpiexec() -> str | None:
    return shutil.which("mpiexec") or shutil.which("mpirun")


def mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root without these two
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def launch(exe: str, ranks: int, args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    cmd = [exe, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timed out"


def result_line(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            try:
                return json.loads(line[len("RESULT "):])
            except json.JSONDecodeError:
                return None
    return None


def run(bindir: Path, outdir: Path, reps: int = 3, ranks_list=(1, 2, 4), workers_list=(1, 2),
        timeout: float = 300.0) -> dict:
    """Runs everything; returns {"rows", "pingpong", "failures", "missing", "ran"}."""
    out = {"rows": [], "pingpong": None, "failures": [], "missing": [], "ran": []}
    exe = mpiexec()
    if exe is None:
        out["missing"].append("mpi: mpiexec not found (apt-get install openmpi-bin libopenmpi-dev)")
        return out
    env = mpi_env()
    cores = os.cpu_count() or 1
    for problem, size in PROBLEMS:
        for version in VERSIONS:
            binary = bindir / f"mpi_{problem}_{version}"
            if not binary.exists():
                out["missing"].append(f"mpi: {binary.name} was not built")
                continue
            for ranks in ranks_list:
                for workers in workers_list:
                    run_env = dict(env)
                    passive = version == "omp" and ranks * workers > cores
                    if passive:
                        run_env["OMP_WAIT_POLICY"] = "passive"
                    rc, so, se = launch(exe, ranks, [str(binary), "--size", size, "--workers", str(workers),
                                                     "--reps", str(reps)], run_env, timeout)
                    res = result_line(so)
                    label = f"{binary.name} {size} ranks={ranks} workers={workers}"
                    if rc != 0 or res is None or not res.get("ok"):
                        out["failures"].append(f"mpi: {label}: exit status {rc}"
                                               + ("" if res is None else f", answer {res.get('answer')}"
                                                  f" expected {res.get('expected')}")
                                               + (f" ({se.strip().splitlines()[-1]})" if se.strip() else ""))
                        print(f"FAIL {label} (exit status {rc})", flush=True)
                        continue
                    res["omp_wait_policy"] = "passive" if passive else None
                    out["rows"].append(res)
                    print(f"{label}: {res['seconds_median']:.4f} s, peak RSS per rank "
                          f"{max(res['peak_rss_kb'])} KiB", flush=True)
            out["ran"].append(f"{binary.name} {size}")
    pingpong = bindir / "mpi_pingpong"
    if pingpong.exists():
        rc, so, se = launch(exe, 2, [str(pingpong)], env, timeout)
        res = result_line(so)
        print(so.rstrip(), flush=True)
        if rc != 0 or res is None:
            out["failures"].append(f"mpi: mpi_pingpong: exit status {rc}")
        else:
            out["pingpong"] = {"result": res, "text": so}
            out["ran"].append("mpi_pingpong")
    else:
        out["missing"].append("mpi: mpi_pingpong was not built")
    outdir.mkdir(parents=True, exist_ok=True)
    with open(outdir / "mpi.json", "w") as f:
        json.dump(out, f, indent=1)
    (outdir / "mpi.md").write_text(table(out))
    return out


def table(out: dict) -> str:
    """One row per problem, size, ranks and workers: each version's median time and peak RSS."""
    cells: dict[tuple, dict] = {}
    for r in out["rows"]:
        cells.setdefault((r["problem"], r["size"], r["ranks"], r["workers"]), {})[r["version"]] = r
    lines = ["| problem | ranks × workers | " + " | ".join(f"{v} s" for v in VERSIONS)
             + " | peak RSS per rank, KiB (" + " / ".join(VERSIONS) + ") |",
             "| --- | --- | " + " | ".join("---:" for _ in VERSIONS) + " | ---: |"]
    for key in sorted(cells):
        problem, size, ranks, workers = key
        row = cells[key]
        times, rss = [], []
        for v in VERSIONS:
            r = row.get(v)
            if r is None:
                times.append("–")
                rss.append("–")
                continue
            times.append(f"{r['seconds_median']:.3f}" + ("†" if r.get("omp_wait_policy") else ""))
            rss.append(str(max(r["peak_rss_kb"])))
        lines.append(f"| {problem} {size} | {ranks} × {workers} | " + " | ".join(times)
                     + " | " + " / ".join(rss) + " |")
    text = "\n".join(lines) + "\n"
    if any(r.get("omp_wait_policy") for r in out["rows"]):
        text += "\n† OpenMP with OMP_WAIT_POLICY=passive (more ranks × workers than cores).\n"
    if out["pingpong"]:
        text += "\nmpi_pingpong (2 ranks):\n\n```\n" + out["pingpong"]["text"].rstrip() + "\n```\n"
    return text


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bindir", type=Path)
    p.add_argument("outdir", type=Path)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--workers", default="1,2")
    a = p.parse_args(argv)
    out = run(a.bindir, a.outdir, a.reps, [int(x) for x in a.ranks.split(",")],
              [int(x) for x in a.workers.split(",")])
    print("\n" + table(out))
    for m in out["missing"]:
        print("MISSING: " + m)
    for f in out["failures"]:
        print("FAIL: " + f)
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
