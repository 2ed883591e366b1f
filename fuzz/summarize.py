#!/usr/bin/env python3
"""Figures of a fuzzing campaign (utils/fuzz.sh) from libFuzzer's logs.

    fuzz/summarize.py CAMPAIGN_DIR TARGET...

Reads CAMPAIGN_DIR/<target>.log and .status (exit code, seconds) and the
crash inputs in CAMPAIGN_DIR/crashes/<target>/; merges the targets' rows
into CAMPAIGN_DIR/summary.json and prints them as a table (executions,
seconds, executions per second, edges and features covered, corpus size,
crash inputs). docs/reliability.md records the table.
"""
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
rows = {}
for t in sys.argv[2:]:
    log = (out / f"{t}.log").read_text(errors="replace")
    rc, seconds = (out / f"{t}.status").read_text().split()
    stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", log))
    last = re.findall(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", log)
    crashes = sorted(p.name for p in (out / "crashes" / t).iterdir())
    rows[t] = {
        "executions": int(stats.get("number_of_executed_units", 0)),
        "seconds": int(seconds),
        "exec_per_sec": int(stats.get("average_exec_per_sec", 0)),
        "edges": int(last[-1][1]) if last else 0,
        "features": int(last[-1][2]) if last else 0,
        "corpus": int(last[-1][3]) if last else 0,
        "peak_rss_mb": int(stats.get("peak_rss_mb", 0)),
        "exit": int(rc),
        "crashes": crashes,
    }
summary = out / "summary.json"
old = json.loads(summary.read_text()) if summary.exists() else {}
old.update(rows)
summary.write_text(json.dumps(old, indent=2) + "\n")
print(f"{'target':12} {'executions':>11} {'seconds':>8} {'exec/s':>7} "
      f"{'edges':>6} {'features':>9} {'corpus':>7} crashes")
for t, r in rows.items():
    print(f"{t:12} {r['executions']:>11} {r['seconds']:>8} "
          f"{r['exec_per_sec']:>7} {r['edges']:>6} {r['features']:>9} "
          f"{r['corpus']:>7} {len(r['crashes'])}")
