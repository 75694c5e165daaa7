#!/usr/bin/env python3
"""Service test: the dashboard's topology view in headless Chromium against a real `weft controller`
given a topology (3 racks of 3 hosts under one spine) and fed reports in which every pair between
rack1 and the other racks loses 20 % while every other pair is clean: the one element that explains
that is the cable tor1-spine1. Checks:
  - the page opens on the whole mesh (all 9 hosts), not on the first group (rack1 only);
  - the controller names link tor1-spine1 (GET /api/v1/suspects' `elements`), and the view draws
    that link suspect (its line painted red, read back with getComputedStyle) and draws every
    element exactly in the state the API gives (suspect if named, ok otherwise);
  - racks, ToRs, spines and all links of GET /api/v1/topology are drawn;
  - with no topology configured (dashboard_test.py's controller) the view is hidden.
Screenshot: <build>/artifacts/dashboard-topology.png.

    topology_test.py WEFT_BINARY ARTIFACT_DIR
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_fixture import Controller  # noqa: E402
from webdriver import Browser  # noqa: E402

CONTROLLER_PORT, DRIVER_PORT, DEVTOOLS_PORT, PLAIN_PORT = 19104, 19105, 19106, 19107
RACKS = [[f"wdb-h{3 * r + j}" for j in (1, 2, 3)] for r in range(3)]
HOSTS = [h for rack in RACKS for h in rack]
SUSPECT = "tor1-spine1"
RED = "rgb(215, 48, 39)"  # --bad in style.css


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def topology_yaml():
    lines = ["topology:", "  spines: [spine1]", "  racks:"]
    for r, hosts in enumerate(RACKS, 1):
        lines += [f"    - name: rack{r}", f"      tor: tor{r}", f"      hosts: [{', '.join(hosts)}]"]
    return "\n".join(lines) + "\n"


def main():
    weft, artifacts = sys.argv[1], sys.argv[2]
    for tool in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.access(tool, os.X_OK):
            print(f"{tool} not installed: skipped")
            return 77
    lossy = {(a, b): 0.2 for a in RACKS[0] for b in RACKS[1] + RACKS[2]}
    lossy.update({(b, a): 0.2 for (a, b) in list(lossy)})
    groups = [("rack1", ["wdb-h1", "wdb-h2", "wdb-h3"]), ("all", ["wdb-*"])]
    # One `with`: entering twice started a second controller and left the first one running.
    with Controller(weft, CONTROLLER_PORT, HOSTS, lossy=lossy, groups=groups, extra_config=topology_yaml()) as ctl:
        ctl.register_all()
        ctl.backfill(5)
        ctl.feed_forever()
        topo = ctl.get_json("/api/v1/topology")
        check(topo.get("configured") is True, f"the controller did not take the topology: {topo}")
        links = {e["name"] for e in topo["elements"] if e["type"] == "link"}
        check(SUSPECT in links and len(links) == 9 + 3, f"topology links {sorted(links)}")

        # The controller's verdict: the cable under the losses, and it alone.
        deadline = time.monotonic() + 30
        named = set()
        while time.monotonic() < deadline:
            named = {e["name"] for e in ctl.get_json("/api/v1/suspects?protocol=udp").get("elements", [])}
            if SUSPECT in named:
                break
            time.sleep(0.5)
        check(SUSPECT in named, f"/api/v1/suspects never named {SUSPECT} (last: {sorted(named)})")
        print(f"API: suspects name {sorted(named)}")

        with Browser(DRIVER_PORT, DEVTOOLS_PORT) as b:
            b.get(f"{ctl.url}/?protocol=udp&refresh=2")
            st = b.wait_for("const d = window.weftDashboard; return d && d.state().renders > 0 && d.state();",
                            what="first render")
            check(st["error"] is None, f"page error: {st['error']}")
            check(st["group"] == "" and sorted(st["hosts"]) == sorted(HOSTS),
                  f"the page opened on group {st['group']!r} with {st['hosts']}, not the whole mesh")
            drawn = b.wait_for(f"const t = window.weftDashboard.topology(); return t && t.links['{SUSPECT}'] === 'suspect' && t;",
                               timeout=20, what=f"the topology view to draw {SUSPECT} suspect")
            check(not b.js("return document.getElementById('topology').hidden;"), "topology view hidden")
            stroke = b.js(f"""const l = document.querySelector('#topology .link[data-name="{SUSPECT}"] line');
                return l && getComputedStyle(l).stroke;""")
            check(stroke == RED, f"{SUSPECT} drawn in {stroke}, not red")
            # Every element in the state the API gives it (read both at nearly the same moment).
            api_state = ctl.get_json("/api/v1/topology").get("state", {})
            named = {e["name"] for e in ctl.get_json("/api/v1/suspects?protocol=udp").get("elements", [])}
            named |= {n for n, s in api_state.items() if s == "suspect"}
            drawn = b.js("return window.weftDashboard.topology();")
            all_drawn = {**drawn["links"], **drawn["nodes"]}
            want = {e["name"] for e in topo["elements"]}
            check(set(all_drawn) == want, f"drawn {sorted(all_drawn)} != topology {sorted(want)}")
            wrong = {n: s for n, s in all_drawn.items() if (s == "suspect") != (n in named)}
            check(not wrong, f"drawn states disagree with the API (named {sorted(named)}): {wrong}")
            ok_stroke = b.js("""const l = document.querySelector('#topology .link[data-name="tor2-spine1"] line');
                return getComputedStyle(l).stroke;""")
            check(ok_stroke != RED, f"a clean link is drawn red too ({ok_stroke})")
            racks = b.js("return document.querySelectorAll('#topology .rack').length;")
            check(racks == 3, f"{racks} racks drawn")
            print(f"view: {SUSPECT} drawn {stroke}, clean links {ok_stroke}, {len(all_drawn)} elements as the API says")
            b.screenshot(os.path.join(artifacts, "dashboard-topology.png"))
            errors = b.console_errors()
            check(not errors, f"console errors: {errors}")
        check(ctl.feed_error is None, f"feeding the controller failed: {ctl.feed_error}")

    # No topology: no view.
    with Controller(weft, PLAIN_PORT, HOSTS[:3]) as ctl:
        ctl.register_all()
        ctl.backfill(2)
        with Browser(DRIVER_PORT, DEVTOOLS_PORT) as b:
            b.get(f"{ctl.url}/?protocol=udp")
            b.wait_for("const d = window.weftDashboard; return d && d.state().renders > 0;", what="first render")
            check(b.js("return document.getElementById('topology').hidden;"), "topology view shown without a topology")
            check(b.js("return window.weftDashboard.topology();") is None, "a topology drawn without one")
    print("dashboard topology test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
