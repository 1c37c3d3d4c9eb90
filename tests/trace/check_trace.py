"""Checks magpie's JSON files: counters (an object with "workers") or traces ("traceEvents",
with B/E spans matched per worker and timestamps that never go back on a worker)."""
import json
import sys

for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    if "traceEvents" not in doc:
        assert "workers" in doc and "total" in doc, path
        total = doc["total"]
        assert sum(w["steals"] for w in doc["workers"]) == total["steals"], path
        print(path, "counters ok")
        continue
    open_spans, last_ts, spans = {}, {}, 0
    for e in doc["traceEvents"]:
        if e["ph"] == "M":
            continue
        tid = e["tid"]
        assert e["ts"] >= last_ts.get(tid, 0), (path, e)
        last_ts[tid] = e["ts"]
        if e["ph"] == "B":
            open_spans[tid] = open_spans.get(tid, 0) + 1
            spans += 1
        elif e["ph"] == "E":
            assert open_spans.get(tid, 0) > 0, (path, "E without B", e)
            open_spans[tid] -= 1
    assert all(n == 0 for n in open_spans.values()), (path, open_spans)
    assert spans > 0, (path, "no spans")
    print(path, "trace ok:", spans, "spans")
