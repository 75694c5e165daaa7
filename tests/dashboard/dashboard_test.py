#!/usr/bin/env python3
"""Service test: the dashboard in headless Chromium against a real `weft controller`.

Starts the controller (loopback, generated config, temp store), feeds it a 5-host mesh over the
agent API with 30 % loss on one pair, drives Chromium through chromedriver and checks:
  - the page (served from the binary) loads with no console errors,
  - the heatmap has a cell with data for every ordered pair, and nothing else,
  - the lossy pair is painted in the lossy (red) end of the scale, the clean pairs in the green end,
  - hovering a cell shows its numbers, clicking it shows that pair's history,
  - the agents view lists every agent,
  - the page refreshes by itself (new data appears without a reload).
Saves a screenshot to <build>/artifacts/dashboard.png.

    dashboard_test.py WEFT_BINARY ARTIFACT_DIR
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_fixture import Controller, base_us  # noqa: E402
from webdriver import Browser  # noqa: E402

CONTROLLER_PORT, DRIVER_PORT, DEVTOOLS_PORT, STATES_PORT = 19100, 19101, 19102, 19103
HOSTS = [f"wdb-{c}" for c in "abcde"]
LOSSY = (HOSTS[0], HOSTS[2])


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def main():
    weft, artifacts = sys.argv[1], sys.argv[2]
    for tool in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.access(tool, os.X_OK):
            print(f"{tool} not installed: skipped")
            return 77
    with Controller(weft, CONTROLLER_PORT, HOSTS, lossy={LOSSY: 0.3}) as ctl:
        ctl.register_all()
        ctl.backfill(30)
        ctl.feed_forever()

        # The page and its assets come from the binary.
        status, headers, body = ctl.request("GET", "/", token=False)
        check(status == 200 and b'id="heatmap"' in body, f"GET / -> {status}")
        check(headers.get("Content-Type", "").startswith("text/html"), headers.get("Content-Type"))

        with Browser(DRIVER_PORT, DEVTOOLS_PORT) as b:
            b.get(f"{ctl.url}/?protocol=udp&group=wdb&metric=loss&refresh=2")
            st = b.wait_for("const d = window.weftDashboard; return d && d.state().renders > 0 && d.state();",
                            what="first render")
            check(st["error"] is None, f"page error: {st['error']}")
            check(st["hosts"] == HOSTS, f"heatmap axes {st['hosts']} != {HOSTS}")
            n = len(HOSTS)
            check(st["counts"]["ok"] == n * (n - 1),
                  f"expected a current cell for all {n * (n - 1)} ordered pairs, got {st['counts']}")

            lossy_rgb, clean = None, 0
            for s in HOSTS:
                for d in HOSTS:
                    if s == d:
                        continue
                    c = b.js("return window.weftDashboard.cell(arguments[0], arguments[1]);", s, d)
                    check(c and c["state"] == "ok" and c["pair"], f"{s}->{d}: {c}")
                    r, g, _ = c["rgb"]
                    check(abs(c["pair"]["p50"] - base_us(HOSTS.index(s), HOSTS.index(d))) < 0.01,
                          f"{s}->{d}: p50 {c['pair']['p50']} µs is not what was fed")
                    if (s, d) == LOSSY:
                        check(abs(c["pair"]["loss"] - 0.3) < 1e-9, f"lossy pair loss {c['pair']['loss']}")
                        check(r > 180 and g < 110, f"lossy pair painted {c['rgb']}, expected the red end")
                        lossy_rgb = c["rgb"]
                    else:
                        check(c["pair"]["loss"] == 0, f"{s}->{d} loss {c['pair']['loss']}")
                        check(g > r and g > 120, f"clean pair {s}->{d} painted {c['rgb']}, expected green")
                        clean += 1
            print(f"cells: {n * (n - 1)} ordered pairs, lossy {LOSSY} = rgb{tuple(lossy_rgb)}, {clean} clean green")

            # Hover: the tooltip names the pair and its loss.
            rect = b.js("return window.weftDashboard.cell(arguments[0], arguments[1]).rect;", *LOSSY)
            cx, cy = rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2
            b.move_to(cx, cy)
            tip = b.wait_for("const t = document.getElementById('tooltip'); return !t.hidden && t.textContent;",
                             what="tooltip")
            check(f"{LOSSY[0]} → {LOSSY[1]}" in tip and "30.0 %" in tip, f"tooltip: {tip!r}")

            # The controller's verdict, under the summary: that link, and no host.
            sus = b.wait_for("const t = document.getElementById('suspects').textContent; return t && t;",
                             what="suspects line")
            check(f"link {LOSSY[0]} → {LOSSY[1]} (30.0 % loss)" in sus and "host " not in sus, f"suspects: {sus!r}")
            print(f"suspects: {sus}")

            # Click: the pair's history (fed 30 past windows plus live ones).
            b.click_at(cx, cy)
            hist = b.wait_for("const h = window.weftDashboard.state().history; return h && h.windows && h;",
                              what="pair history")
            check(hist["src"] == LOSSY[0] and hist["dst"] == LOSSY[1], f"history of {hist}")
            check(hist["windows"] >= 30, f"history has {hist['windows']} windows, fed at least 30")
            title = b.js("return document.getElementById('history-title').textContent;")
            check(LOSSY[0] in title and LOSSY[1] in title, f"history title {title!r}")
            # The RTT chart is drawn: some pixels of the plot area are not background.
            inked = b.js("""const c = document.getElementById('history-rtt');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] < 200 || d[i + 2] > 200 && d[i] < 120)) n++;
                return n;""")
            check(inked > 500, f"history chart looks empty ({inked} inked pixels)")
            # Another range: the history is fetched again for 15 min (all fed windows are newer).
            b.js("document.querySelector('#history-ranges [data-range=\"900\"]').click();")
            hist = b.wait_for("const h = window.weftDashboard.state().history; return h && h.rangeS === 900 && h.windows && h;",
                              what="history for 15 min")
            check(hist["windows"] >= 30, f"15 min history has {hist['windows']} windows")
            check(b.js("return document.querySelector('#history-ranges .active').dataset.range;") == "900",
                  "15 min range button not marked active")
            time.sleep(0.5)
            b.screenshot(os.path.join(artifacts, "dashboard-hover.png"))
            b.move_to(5, 5)  # off the heatmap: the tooltip goes, the legend shows
            b.wait_for("return document.getElementById('tooltip').hidden;", what="tooltip to hide")
            shot = b.screenshot(os.path.join(artifacts, "dashboard.png"))
            print(f"screenshots: {shot} (and -hover, -agents)")

            # Auto-refresh: more renders happen without a reload.
            before = b.js("return window.weftDashboard.state().renders;")
            b.wait_for(f"return window.weftDashboard.state().renders > {before};", timeout=15, what="auto refresh")
            check(b.js("return performance.getEntriesByType('navigation').length;") == 1, "page was reloaded")

            # Agents view.
            b.get(f"{ctl.url}/?protocol=udp&group=wdb#agents")
            rows = b.wait_for("""const r = [...document.querySelectorAll('#agents tbody tr')];
                return r.length && r.map(x => x.dataset.agent + ':' + x.querySelector('.badge').textContent);""",
                              what="agents table")
            check(sorted(rows) == sorted(f"{h}:up" for h in HOSTS), f"agents table {rows}")
            b.screenshot(os.path.join(artifacts, "dashboard-agents.png"))

            errors = b.console_errors()
            check(not errors, f"console errors: {errors}")
        check(ctl.feed_error is None, f"feeding the controller failed: {ctl.feed_error}")
    cell_states(weft, artifacts)
    print("dashboard test: OK")
    return 0


def cell_states(weft, artifacts):
    """Missing, stale and down cells look different from good ones and from each other."""
    hosts = [f"wdb-s{i}" for i in range(1, 6)]
    never = (hosts[0], hosts[1])           # never reported: no data
    stale = (hosts[1], hosts[2])           # reported once, long ago (> 2 windows)
    silent = hosts[4]                      # stops reporting: marked down
    with Controller(weft, STATES_PORT, hosts, never=[never], backfill_only=[stale], silent=[silent],
                    down_after_s=3) as ctl:
        ctl.register_all()
        ctl.backfill(2)
        ctl.feed_forever()
        # Wait until the controller itself says the silent agent is down.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            agents = {a["name"]: a["state"] for a in ctl.get_json("/api/v1/agents")["agents"]}
            if agents.get(silent) == "down":
                break
            time.sleep(0.5)
        check(agents.get(silent) == "down", f"controller never marked {silent} down: {agents}")
        with Browser(DRIVER_PORT, DEVTOOLS_PORT) as b:
            b.get(f"{ctl.url}/?protocol=udp&group=wdb&metric=p50&refresh=2")
            b.wait_for("const d = window.weftDashboard; return d && d.state().renders > 0;", what="first render")
            want = {never: "missing", stale: "stale", (silent, hosts[0]): "down", (hosts[0], silent): "down",
                    (hosts[2], hosts[3]): "ok"}
            colours = {}
            for (s, d), state in want.items():
                c = b.wait_for(f"const c = window.weftDashboard.cell('{s}', '{d}'); return c && c.state === '{state}' && c;",
                               timeout=20, what=f"{s}->{d} to show as {state}")
                colours.setdefault(state, tuple(c["rgb"]))
            print(f"cell colours: {colours}")
            check(len(set(colours.values())) == len(colours), f"cell states share a colour: {colours}")
            b.screenshot(os.path.join(artifacts, "dashboard-states.png"))
            errors = b.console_errors()
            check(not errors, f"console errors: {errors}")


if __name__ == "__main__":
    sys.exit(main())
