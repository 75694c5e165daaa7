#!/usr/bin/env python3
"""Render benchmark: the dashboard's heatmap for an N x N mesh (default 500 x 500 = 249,500 ordered
pairs) in headless Chromium, measured by the page itself (performance.now()).

Data comes from tests/dashboard/fake_controller.py (a synthetic mesh in the API's exact shapes),
so the figure is the browser's work, not the time the controller takes to build the JSON. With
--weft BINARY it comes from a real `weft controller` instead, fed one window per ordered pair over
the agent API (end to end: fetch_ms is then the controller's /api/v1/mesh).
Prints one JSON object:
  render_ms   building the cell arrays + drawing the canvas, first load (what "render" means)
  parse_ms    JSON.parse of the /api/v1/mesh body
  fetch_ms    HTTP fetch of that body from the fixture (Python: slow, reported for completeness)
  redraw_ms   median of re-drawing on a metric change (p50, p99, max, loss, late+dup, x3)
  first_screen_ms   page opened -> first heatmap on screen (includes fetch + parse), median
  first_load_screen_ms, first_load_fetch_ms   the same for the first page load alone (against a
              real controller it computes the mesh then; later loads may be served from its cache)

    render_bench.py [--hosts 500] [--runs 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import Browser, stop, wait_port  # noqa: E402

FIXTURE_PORT, DRIVER_PORT, DEVTOOLS_PORT, CONTROLLER_PORT = 19120, 19121, 19122, 19123


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3, help="page loads; the median is reported")
    ap.add_argument("--weft", help="measure against a real `weft controller` (this binary) instead of the fixture")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    if a.weft:
        from controller_fixture import Controller
        width = len(str(a.hosts))
        ctl = Controller(a.weft, CONTROLLER_PORT, [f"wdb-{i:0{width}d}" for i in range(1, a.hosts + 1)],
                         window_s=60, down_after_s=3600)
        with ctl:
            ctl.register_all()
            ctl.backfill(1)
            run(a, CONTROLLER_PORT, "&group=wdb")
        return
    fixture = subprocess.Popen([sys.executable, os.path.join(here, "fake_controller.py"), "--port", str(FIXTURE_PORT),
                                "--hosts", str(a.hosts)], stdout=subprocess.DEVNULL)
    try:
        wait_port(FIXTURE_PORT, proc=fixture)
        run(a, FIXTURE_PORT, "")
    finally:
        stop(fixture)


def run(a, port, extra_query):
    loads, redraws = [], []
    with Browser(DRIVER_PORT, DEVTOOLS_PORT, width=1600, height=1200) as b:
        for _ in range(a.runs):
            b.get(f"http://127.0.0.1:{port}/?protocol=udp&metric=p99&refresh=0{extra_query}")
            st = b.wait_for("const d = window.weftDashboard; return d && (d.state().renders > 0 || d.state().error) && d.state();",
                            timeout=300, what="first render")
            if st["error"]:
                raise SystemExit(f"page error: {st['error']}")
            if st["timings"]["hosts"] != a.hosts:
                raise SystemExit(f"rendered {st['timings']['hosts']} hosts, expected {a.hosts}")
            loads.append(st["timings"])
            for metric in ["p50", "p99", "max", "loss", "latedup"] * 3:
                ms = b.js("""const s = document.getElementById('metric'); s.value = arguments[0];
                             s.dispatchEvent(new Event('change'));
                             return window.weftDashboard.state().timings.redrawMs;""", metric)
                redraws.append(ms)
        errors = b.console_errors()
    med = lambda k: round(statistics.median(t[k] for t in loads), 1)  # noqa: E731
    print(json.dumps({
        "hosts": a.hosts, "pairs": loads[0]["pairs"], "cells": a.hosts * a.hosts,
        "mesh_json_bytes": loads[0]["bytes"],
        "render_ms": med("renderMs"), "model_ms": med("modelMs"), "draw_ms": med("drawMs"),
        "parse_ms": med("parseMs"), "fetch_ms": med("fetchMs"),
        "redraw_ms": round(statistics.median(redraws), 1), "redraw_max_ms": round(max(redraws), 1),
        "first_screen_ms": med("sinceNavigationMs"), "runs": a.runs,
        # The first page load alone: the controller computes the mesh for it (later loads may get
        # the controller's cached answer, docs/api.md).
        "first_load_screen_ms": round(loads[0]["sinceNavigationMs"], 1),
        "first_load_fetch_ms": round(loads[0]["fetchMs"], 1),
        "console_errors": len(errors),
        "source": "weft controller" if a.weft else "fixture",
        "chromium": subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True).stdout.strip(),
    }))


if __name__ == "__main__":
    main()
