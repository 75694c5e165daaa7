#!/usr/bin/env python3
"""Remote write over HTTPS with credentials (docs/metrics.md "Long-term: remote write"): a receiver the
test runs on loopback (python's ssl, a certificate made with the openssl command at run time) takes
the controller's pushes only with the right credential, the way an authenticating proxy in front of
Prometheus or Mimir does.
  - bearer token (remote_write_bearer_token_file): pushes arrive over TLS, snappy remote-write
    requests carrying that token;
  - basic auth (remote_write_username, remote_write_password_file): likewise with Basic;
  - a receiver whose certificate the configured CA did not sign gets nothing, and the controller's
    log says the certificate does not verify.
Usage: remote_write_tls_test.py WEFT"""
import base64
import http.server
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import mesh_harness as mh  # noqa: E402
from tls_test import make_ca, make_cert  # noqa: E402  (the openssl command helpers)

WEFT = sys.argv[1]
PORT = 18580          # controller
RECEIVER = 18581      # the HTTPS receiver
TOKEN = "rw-tls-test-token"
failed = []


def check(cond, what):
    (failed.append(what) if not cond else None)
    print(f"  {'ok' if cond else 'FAIL'}: {what}", flush=True)


class Receiver:
    """An HTTPS server that records every POST (its Authorization and Content-Encoding) and answers
    204 when the Authorization is the expected one, 401 otherwise."""

    def __init__(self, cert, key):
        self.expect = None
        self.posts = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization", "")
                outer.posts.append((auth, self.headers.get("Content-Encoding"), len(body)))
                self.send_response(204 if auth == outer.expect else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", RECEIVER), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run_controller(tmp, name, remote):
    cfg = os.path.join(tmp, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(mh.controller_config(PORT, TOKEN, f"sqlite:{tmp}/{name}.db") +
                f"remote_write: https://127.0.0.1:{RECEIVER}/api/v1/write\nremote_write_interval: 1s\n{remote}")
    log = os.path.join(tmp, f"{name}.log")
    p = subprocess.Popen([WEFT, "controller", "-c", cfg], stdout=open(log, "w"), stderr=subprocess.STDOUT)
    return p, log


def main():
    tmp = tempfile.mkdtemp(prefix="weft-rw-tls-")
    procs = []
    receiver = None
    try:
        make_ca(tmp, "ca")
        make_ca(tmp, "other-ca")
        make_cert(tmp, "ca", "receiver", "DNS:localhost,IP:127.0.0.1")
        with open(f"{tmp}/bearer", "w") as f:
            f.write("rw-bearer-secret\n")
        with open(f"{tmp}/password", "w") as f:
            f.write("rw-basic-secret\n")
        receiver = Receiver(f"{tmp}/receiver.pem", f"{tmp}/receiver.key")

        for name, remote, expect in [
                ("bearer", f"remote_write_ca: ca.pem\nremote_write_bearer_token_file: bearer\n",
                 "Bearer rw-bearer-secret"),
                ("basic", "remote_write_ca: ca.pem\nremote_write_username: weft\nremote_write_password_file: password\n",
                 "Basic " + base64.b64encode(b"weft:rw-basic-secret").decode())]:
            print(f"remote write over HTTPS, {name}", flush=True)
            receiver.expect, receiver.posts = expect, []
            ctl, log = run_controller(tmp, name, remote)
            procs.append(ctl)
            procs.append(mh.start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, "rw-a", "127.0.0.1", 18582, 18583))
            procs.append(mh.start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, "rw-b", "127.0.0.2", 18584, 18585))
            mh.wait(lambda: any(p[0] == expect and p[2] > 0 for p in receiver.posts),
                    f"a push with the {name} credential reaches the HTTPS receiver", 40)
            good = [p for p in receiver.posts if p[0] == expect]
            check(all(p[1] == "snappy" for p in good), f"{name}: pushes are snappy remote-write requests")
            check(len(good) == len(receiver.posts), f"{name}: every push carried the credential")
            mh.stop(procs)
            procs.clear()

        print("a receiver the CA did not sign", flush=True)
        receiver.expect, receiver.posts = "Bearer rw-bearer-secret", []
        ctl, log = run_controller(tmp, "wrong-ca",
                                  "remote_write_ca: other-ca.pem\nremote_write_bearer_token_file: bearer\n")
        procs.append(ctl)
        procs.append(mh.start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, "rw-a", "127.0.0.1", 18582, 18583))
        procs.append(mh.start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, "rw-b", "127.0.0.2", 18584, 18585))
        text = mh.wait(lambda: (lambda t: t if "does not verify" in t else None)(open(log).read()),
                       "the controller says the receiver's certificate does not verify", 40)
        check("other-ca.pem" in text, "the error names the CA file")
        time.sleep(1)
        check(not receiver.posts, "nothing reached a receiver the CA did not sign")
    finally:
        mh.stop(procs)
        if receiver:
            receiver.close()
        subprocess.run(["rm", "-rf", tmp])
    mh.finish(failed, "remote write over HTTPS: bearer token and basic auth pushes arrive, a receiver "
                      "outside the CA gets nothing")


if __name__ == "__main__":
    main()
