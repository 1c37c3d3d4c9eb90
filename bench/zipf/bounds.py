#!/usr/bin/env python3
"""The efficiency a scheduling policy can reach on the zipf benchmark's own samples, with no overhead.

Efficiency Σcost / (P × makespan) on the skewed loop depends on more than a runtime's overheads:
which iterations start last decides how long the other workers wait at the end, and that depends
on where the sample's expensive iterations lie. This script draws the same samples as
bench/zipf/problem.hpp (BENCHMARKS.md: costs 50 ns × k, P(k) ∝ k^-1.5 on 1 … 1000, SplitMix64
seeded with 42) and simulates, with zero-cost steals and splits, the policies the benchmark runs:

  lazy-split  magpie's loops (docs/algorithms.md): before each iteration a worker whose deque is
              empty forks the lower half of its range and leaves the upper half as a stealable
              continuation; an idle worker steals the oldest continuation; chunks of one iteration
  greedy      an idle worker takes the next index (OpenMP schedule(dynamic,1), a shared counter)
  static      P contiguous slices of n / P iterations (OpenMP schedule(static), the naive pool)
  bound       Σ / (P × max(Σ / P, the largest cost)): no schedule does better

Usage: bench/zipf/bounds.py [--workers P] [--sizes 64,100,128,512,1024,2048]
"""

import argparse

MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def zipf_ks(n):
    """k_0 … k_{n-1} exactly as zipf::zipf_ks draws them."""
    cumulative, total = [], 0.0
    for k in range(1, 1001):
        total += k ** -1.5
        cumulative.append(total)
    state, ks = 42, []
    for _ in range(n):
        state, r = splitmix64(state)
        target = (r >> 11) * 2.0 ** -53 * total
        j = 0
        while j < 999 and not cumulative[j] > target:
            j += 1
        ks.append(j + 1)
    return ks


def lazy_split(ks, p):
    """Makespan of lazy binary splitting on p workers (continuation stealing, oldest first)."""
    n = len(ks)
    workers = [{"range": [0, n], "deque": [], "t": 0.0}] + [
        {"range": None, "deque": [], "t": 0.0} for _ in range(p - 1)
    ]
    started = 0
    while started < n:
        w = min(workers, key=lambda x: x["t"])  # the worker that is free first acts next
        r = w["range"]
        if r is None or r[0] >= r[1]:
            if w["deque"]:
                w["range"] = w["deque"].pop()  # its own continuation, newest first
                continue
            victims = [v for v in workers if v is not w and v["deque"]]
            if victims:
                w["range"] = victims[0]["deque"].pop(0)  # a thief takes the oldest
            else:  # nothing to steal yet: wait until a worker with a range acts
                busy = [v["t"] for v in workers if v["range"] and v["range"][0] < v["range"][1]]
                w["t"] = max(w["t"], min(busy)) + 1e-9
            continue
        if r[1] - r[0] >= 2 and not w["deque"]:
            mid = r[0] + (r[1] - r[0]) // 2
            w["deque"].append([mid, r[1]])
            w["range"] = [r[0], mid]
            continue
        w["t"] += ks[r[0]]
        r[0] += 1
        started += 1
    return max(w["t"] for w in workers)


def greedy(ks, p):
    loads = [0] * p
    for k in ks:
        i = loads.index(min(loads))
        loads[i] += k
    return max(loads)


def static(ks, p):
    n = len(ks)
    return max(sum(ks[i * n // p:(i + 1) * n // p]) for i in range(p))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sizes", default="64,100,128,512,1024,2048")
    a = ap.parse_args()
    p = a.workers
    print(f"zero-overhead efficiency Σcost / ({p} × makespan) on BENCHMARKS.md's zipf samples")
    print(f"{'N':>6} {'Σk':>7} {'largest k (index)':>18} {'lazy-split':>11} {'greedy':>8} "
          f"{'static':>8} {'bound':>7}")
    for n in (int(s) for s in a.sizes.split(",")):
        ks = zipf_ks(n)
        total = sum(ks)
        big = max(range(n), key=lambda i: ks[i])
        eff = [total / (p * m) for m in (lazy_split(ks, p), greedy(ks, p), static(ks, p),
                                         max(total / p, ks[big]))]
        print(f"{n:>6} {total:>7} {f'{ks[big]} ({big})':>18} {eff[0]:>11.3f} {eff[1]:>8.3f} "
              f"{eff[2]:>8.3f} {eff[3]:>7.3f}")


if __name__ == "__main__":
    main()
