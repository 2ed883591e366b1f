#!/usr/bin/env python3
"""Plots the memory timeline of a kilnc report as an SVG (no dependencies).

  utils/memory_timeline.py REPORT.json -o timeline.svg [--title TEXT]

REPORT.json is `kilnc --report`'s: its "timeline" (live arena bytes at each
kernel launch) is drawn as a step line; with `--max-memory`, the report's
"remat" section adds the timeline before rematerialization and the budget
as a dashed line (with `--max-memory-weights`, the arena's share: the
budget less the weights), and the recomputed launches are marked. Steps on
the x axis, MiB on the y axis.
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

W, H = 800, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50


def step_path(values, x, y):
    """An SVG path that holds each value over its step."""
    points = []
    for i, v in enumerate(values):
        points.append(f"{x(i):.1f},{y(v):.1f}")
        points.append(f"{x(i + 1):.1f},{y(v):.1f}")
    return "M" + " L".join(points)


def svg(report, title):
    after = [t["live_bytes"] for t in report.get("timeline", [])]
    if not after:
        sys.exit("memory_timeline: the report has no timeline (kilnc --report of a "
                 "model with a host program)")
    remat = report.get("remat") or {}
    before = [t["live_bytes"] for t in remat.get("timeline_before", [])]
    budget = remat.get("arena_budget_bytes", remat.get("budget_bytes"))
    weights = remat.get("weights_bytes")
    steps = max(len(after), len(before))
    top = max(after + before + ([budget] if budget else []))
    top = top * 1.08 or 1
    mib = 1024.0 * 1024.0
    x = lambda i: LEFT + (W - LEFT - RIGHT) * i / steps
    y = lambda b: H - BOTTOM - (H - TOP - BOTTOM) * b / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">'
           f'{escape(title)}</text>']
    # Axes with five ticks each.
    out.append(f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" '
               f'y2="{H - BOTTOM}" stroke="black"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{H - BOTTOM}" '
               f'stroke="black"/>')
    for k in range(6):
        b = top * k / 5
        out.append(f'<text x="{LEFT - 6}" y="{y(b) + 4:.1f}" text-anchor="end">'
                   f'{b / mib:.2f}</text>')
        out.append(f'<line x1="{LEFT}" y1="{y(b):.1f}" x2="{W - RIGHT}" '
                   f'y2="{y(b):.1f}" stroke="#eee"/>')
        s = round(steps * k / 5)
        out.append(f'<text x="{x(s):.1f}" y="{H - BOTTOM + 16}" '
                   f'text-anchor="middle">{s}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" '
               f'text-anchor="middle">kernel step</text>')
    out.append(f'<text x="16" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})">live MiB</text>')
    legend = []
    if before:
        out.append(f'<path d="{step_path(before, x, y)}" fill="none" '
                   f'stroke="#999" stroke-width="1.5"/>')
        legend.append(("#999", f"before remat (peak {max(before) / mib:.2f} MiB)", ""))
    out.append(f'<path d="{step_path(after, x, y)}" fill="none" '
               f'stroke="#1f5fbf" stroke-width="2"/>')
    legend.append(("#1f5fbf", f"{'after remat' if before else 'live'} "
                   f"(peak {max(after) / mib:.2f} MiB)", ""))
    if budget:
        out.append(f'<line x1="{LEFT}" y1="{y(budget):.1f}" x2="{W - RIGHT}" '
                   f'y2="{y(budget):.1f}" stroke="#c33" stroke-dasharray="6,4"/>')
        label = f"budget {budget / mib:.2f} MiB"
        if weights is not None:
            label = (f"arena budget {budget / mib:.2f} MiB (budget "
                     f"{remat['budget_bytes'] / mib:.2f} less weights "
                     f"{weights / mib:.2f})")
        legend.append(("#c33", label, "6,4"))
    # Recomputed (or moved) launches: a tick under their step.
    kernels = report.get("kernels", [])
    for i, k in enumerate(kernels[:len(after)]):
        if k.get("remat"):
            out.append(f'<line x1="{x(i + 0.5):.1f}" y1="{H - BOTTOM}" '
                       f'x2="{x(i + 0.5):.1f}" y2="{H - BOTTOM - 8}" '
                       f'stroke="#e80" stroke-width="3"/>')
    if any(k.get("remat") for k in kernels):
        legend.append(("#e80", "recomputed launch", ""))
    for n, (color, text, dash) in enumerate(legend):
        ly = TOP + 4 + 16 * n
        out.append(f'<line x1="{W - RIGHT - 230}" y1="{ly}" x2="{W - RIGHT - 205}" '
                   f'y2="{ly}" stroke="{color}" stroke-width="2"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        out.append(f'<text x="{W - RIGHT - 200}" y="{ly + 4}">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", help="kilnc --report JSON")
    ap.add_argument("-o", "--output", required=True, help="SVG to write")
    ap.add_argument("--title", default="", help="title (default: the report's name)")
    a = ap.parse_args()
    with open(a.report) as f:
        report = json.load(f)
    text = svg(report, a.title or f"memory timeline: {a.report}")
    with open(a.output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
