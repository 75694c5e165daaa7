#!/usr/bin/env python3
"""GET /api/v1/mesh?format=columns against a real controller: the dashboard's form, served from the
controller's render cache when it is expensive to compute (docs/api.md). Checks, with 40 agents
(1,560 pairs, a body over the 64 KB gzip threshold):
  - with Accept-Encoding: gzip the answer is gzip (Content-Encoding says so) and decodes to the same
    mesh as the plain answer, which has no Content-Encoding;
  - every pair is there with what was reported;
  - a newer report shows in the columns mesh within a few seconds (the cached answer is refreshed);
  - an offer of Brotli gets gzip or plain, never Brotli (issue 14, defect 7);
  - an unknown group is 404 and a bad format 400.
    mesh_columns_http_test.py WEFT_BINARY"""
import gzip
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dashboard"))
from controller_fixture import Controller  # noqa: E402

PORT = 19170
HOSTS = [f"wdb-{i:02d}" for i in range(1, 41)]


def get(path, gz):
    return get_enc(path, "gzip" if gz else None)


def get_enc(path, accept):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", headers={"Accept-Encoding": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Encoding"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read()


def columns(gz):
    status, enc, body = get("/api/v1/mesh?protocol=udp&format=columns&group=wdb", gz)
    assert status == 200, (status, body[:200])
    if gz:
        assert enc == "gzip", f"asked for gzip, got Content-Encoding {enc!r} ({len(body)} bytes)"
        body = gzip.decompress(body)
    else:
        assert enc is None, f"did not ask for gzip, got Content-Encoding {enc!r}"
    assert len(body) > 64 * 1024, f"the mesh is {len(body)} bytes: below the gzip threshold, the test proves nothing"
    return json.loads(body)


def lost_of(mesh, src, dst):
    hosts, c = mesh["hosts"], mesh["columns"]
    for k in range(mesh["pairs"]):
        if hosts[c["src"][k]] == src and hosts[c["dst"][k]] == dst:
            return c["lost"][k]
    return None


def main():
    ctl = Controller(sys.argv[1], PORT, HOSTS, window_s=2, down_after_s=3600)
    with ctl:
        ctl.register_all()
        ctl.backfill(1)
        plain, zipped = columns(False), columns(True)
        n = len(HOSTS) * (len(HOSTS) - 1)
        for m in (plain, zipped):
            assert m["pairs"] == n, (m["pairs"], n)
            assert sorted(m["hosts"]) == HOSTS, m["hosts"][:5]
            assert all(v == 200 for v in m["columns"]["sent"]), "sent column"
        for col in ("src", "dst", "sent", "lost", "p50_us"):
            assert plain["columns"][col] == zipped["columns"][col], f"gzip and plain answers differ in {col}"
        assert lost_of(plain, "wdb-01", "wdb-02") == 0
        print(f"ok   {n} pairs, plain and gzip answers agree")

        # A newer window with loss on one pair must reach the columns mesh (the cache refreshes).
        ctl.lossy[("wdb-01", "wdb-02")] = 0.5
        w = ctl.window_s * 10**9
        ctl.report((time.time_ns() // w + 1) * w, seq=1)
        deadline = time.monotonic() + 20
        while True:
            got = lost_of(columns(True), "wdb-01", "wdb-02")
            if got == 100:
                break
            assert time.monotonic() < deadline, f"the newer report never reached the columns mesh (lost {got})"
            time.sleep(0.2)
        print("ok   a newer report shows in the columns mesh")

        # Issue 14, defect 7: a client offering Brotli got the mesh at Brotli's maximum quality (19 s
        # for a 6 MB mesh). Neither form is ever Brotli: gzip (level 1) or plain.
        for path in ("/api/v1/mesh?protocol=udp", "/api/v1/mesh?protocol=udp&format=columns"):
            status, enc, body = get_enc(path, "br, gzip")
            assert status == 200 and enc in (None, "gzip"), f"{path} offered br, gzip: {status} {enc!r}"
            assert len(body) > 0
        print("ok   never Brotli")

        assert get("/api/v1/mesh?protocol=udp&format=columns&group=nope", True)[0] == 404
        assert get("/api/v1/mesh?protocol=udp&format=cols", True)[0] == 400
        print("ok   unknown group 404, bad format 400")
    print("PASS")


if __name__ == "__main__":
    main()
