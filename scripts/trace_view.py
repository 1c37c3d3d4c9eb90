#!/usr/bin/env python3
"""Renders a magpie trace (Chrome trace-event JSON, trace::session::write_json) as a standalone
SVG timeline: one lane per worker, spans coloured by kind (root, steal, resume, fork, call,
sleep), nested spans stacked below their parent, suspensions as ticks. For a quick look, the
README's screenshot, or a machine without a browser that opens ui.perfetto.dev.

Usage: trace_view.py TRACE.json OUT.svg [--width PX] [--from US] [--to US]
Screenshot: chromium --headless --screenshot=out.png --window-size=W,H file://$PWD/OUT.svg
"""

import argparse
import html
import json
import sys

COLOURS = {"root": "#4c72b0", "steal": "#dd8452", "resume": "#55a868", "fork": "#8172b3",
           "call": "#937860", "sleep": "#c8c8c8"}
LANE, ROW, TOP, LEFT = 64, 14, 40, 90


def spans_of(events):
    """{tid: [(start, end, name, depth)]} and {tid: [(ts, name)]} from B/E/i events."""
    spans, ticks, stacks = {}, {}, {}
    for e in events:
        tid = e.get("tid")
        if e["ph"] == "B":
            stacks.setdefault(tid, []).append((e["ts"], e["name"]))
        elif e["ph"] == "E" and stacks.get(tid):
            start, name = stacks[tid].pop()
            spans.setdefault(tid, []).append((start, e["ts"], name, len(stacks[tid])))
        elif e["ph"] == "i":
            ticks.setdefault(tid, []).append((e["ts"], e["name"]))
    return spans, ticks


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("out")
    p.add_argument("--width", type=int, default=1200)
    p.add_argument("--from", dest="t0", type=float, default=None)
    p.add_argument("--to", dest="t1", type=float, default=None)
    a = p.parse_args(argv)
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    spans, ticks = spans_of(events)
    times = [s for v in spans.values() for s, _, _, _ in v] + [t for v in spans.values() for _, t, _, _ in v]
    if not times:
        sys.exit("trace_view: no spans in " + a.trace)
    t0 = a.t0 if a.t0 is not None else min(times)
    t1 = a.t1 if a.t1 is not None else max(times)
    span_w = a.width - LEFT - 20
    x = lambda t: LEFT + (t - t0) / max(t1 - t0, 1e-9) * span_w
    tids = sorted(set(names) | set(spans))
    height = TOP + LANE * len(tids) + 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{a.width}" height="{height}" '
           f'font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="14">{html.escape(a.trace.split("/")[-1])}: '
           f'{t1 - t0:.0f} µs</text>']
    for lane, tid in enumerate(tids):
        y = TOP + lane * LANE
        out.append(f'<text x="8" y="{y + 16}">{html.escape(names.get(tid, f"tid {tid}"))}</text>')
        out.append(f'<line x1="{LEFT}" x2="{LEFT + span_w}" y1="{y + LANE - 4}" y2="{y + LANE - 4}" stroke="#eee"/>')
        for s, e, name, depth in spans.get(tid, []):
            if e < t0 or s > t1 or depth > 3:
                continue
            x0, x1 = x(max(s, t0)), x(min(e, t1))
            out.append(f'<rect x="{x0:.2f}" y="{y + depth * ROW}" width="{max(x1 - x0, 0.5):.2f}" '
                       f'height="{ROW - 2}" fill="{COLOURS.get(name, "#999")}"><title>{name} '
                       f'{s:.3f}-{e:.3f} µs</title></rect>')
        for t, name in ticks.get(tid, []):
            if t0 <= t <= t1:
                colour = "#c44e52" if name == "join_suspend" else "#333"
                out.append(f'<line x1="{x(t):.2f}" x2="{x(t):.2f}" y1="{y + 4 * ROW}" '
                           f'y2="{y + LANE - 6}" stroke="{colour}"/>')
    y = TOP + LANE * len(tids) + 20
    for i, (name, colour) in enumerate(list(COLOURS.items()) + [("join_suspend", "#c44e52")]):
        out.append(f'<rect x="{LEFT + i * 110}" y="{y}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{LEFT + i * 110 + 16}" y="{y + 11}">{name}</text>')
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
