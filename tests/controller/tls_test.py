#!/usr/bin/env python3
"""The controller over HTTPS on loopback (docs/controller.md "TLS"), with a CA, certificates and keys
the test makes with the openssl command at run time (nothing kept):
  - agents given the CA file (--ca) register and their reports land; `weft mesh --ca` reads the mesh;
  - an agent given another CA refuses the controller, with a clear error, and never registers;
  - plain HTTP to the HTTPS port gets no HTTP answer;
  - a TLS handshake that stalls is closed within http_header_timeout (slowloris), not after the
    idle timeout;
  - SIGHUP reloads the certificate: a new connection is served the new one (its SHA-256 read with
    python's ssl), the agents keep reporting;
  - mutual TLS (tls_client_ca): an agent with a certificate naming it reports with no token; one
    whose certificate names another agent is refused (403); a client without a certificate is refused;
  - a non-loopback listen address without TLS is refused unless plain_http: true, which warns.
Usage: tls_test.py WEFT"""
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import mesh_harness as mh  # noqa: E402

WEFT = sys.argv[1]
PORT = 18560
TOKEN = "tls-test-token"
failed = []


def check(cond, what):
    if not cond:
        failed.append(what)
        print(f"  FAIL: {what}", flush=True)
    else:
        print(f"  ok: {what}", flush=True)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def make_cert(d, ca, name, san):
    """A certificate for `name` signed by `ca`, with subjectAltName `san` (e.g. DNS:x,IP:127.0.0.1)."""
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)


def served_cert_sha256(cafile):
    """The SHA-256 of the certificate the controller serves to a new connection (verified)."""
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", PORT), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return hashlib.sha256(t.getpeercert(binary_form=True)).hexdigest()


def file_cert_sha256(path):
    with open(path) as f:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(f.read())).hexdigest()


def https_get(path, cafile, cert=None):
    ctx = ssl.create_default_context(cafile=cafile)
    if cert:
        ctx.load_cert_chain(cert + ".pem", cert + ".key")
    import http.client
    c = http.client.HTTPSConnection("127.0.0.1", PORT, context=ctx, timeout=5)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body) if body.startswith(b"{") else body


def mesh_pairs(cafile, cert=None):
    status, body = https_get("/api/v1/mesh?protocol=udp", cafile, cert)
    return {(p["src"], p["dst"]): p for p in body.get("pairs", [])} if status == 200 else {}


def agent(tmp, name, addr, udp, ca, extra=(), token=True):
    args = [WEFT, "--log-level", "info", "agent", "--controller", f"https://127.0.0.1:{PORT}", "--ca", ca,
            "--name", name, "--address", addr, "--protocols", "udp", "--udp-port", str(udp), "--tcp-port",
            str(udp + 1), *extra]
    if token:
        args += ["--token", mh.agent_token(TOKEN, name)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/agent-{name}.log", "w"))


def start_controller(tmp, extra=""):
    cfg = os.path.join(tmp, "weft.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\ntls_cert: server.pem\ntls_key: server.key\n{extra}"
                f"agent_secret: {mh.agent_secret(TOKEN)}\nstore: sqlite:{tmp}/history.db\n"
                "window: 1s\nreport_interval: 300ms\npinglist_sync: 1s\nhttp_header_timeout: 1s\n"
                "http_idle_timeout: 30s\nprotocols:\n  udp: {interval: 50ms, timeout: 300ms}\n"
                "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    log = open(os.path.join(tmp, "controller.log"), "a")
    p = subprocess.Popen([WEFT, "--log-level", "info", "controller", "-c", cfg], stdout=log, stderr=log)
    mh.wait(lambda: served_cert_sha256(os.path.join(tmp, "ca.pem")), "the controller answers over TLS", 20)
    return p


def main():
    if subprocess.run(["which", "openssl"], stdout=subprocess.DEVNULL).returncode != 0:
        print("SKIP: no openssl command")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="weft-tls-")
    procs = []
    try:
        make_ca(tmp, "ca")
        make_ca(tmp, "other-ca")
        make_cert(tmp, "ca", "server", "DNS:localhost,IP:127.0.0.1")
        ca, other_ca = os.path.join(tmp, "ca.pem"), os.path.join(tmp, "other-ca.pem")

        print("HTTPS controller, agents with the CA file", flush=True)
        ctl = start_controller(tmp)
        procs.append(ctl)
        check(served_cert_sha256(ca) == file_cert_sha256(os.path.join(tmp, "server.pem")),
              "the controller serves its configured certificate")
        procs.append(agent(tmp, "tls-a", "127.0.0.1", 18561, ca))
        procs.append(agent(tmp, "tls-b", "127.0.0.2", 18563, ca))
        pairs = mh.wait(lambda: (lambda p: p if ("tls-a", "tls-b") in p and ("tls-b", "tls-a") in p else None)(
            mesh_pairs(ca)), "reports from both agents land over HTTPS", 30)
        check(pairs[("tls-a", "tls-b")]["sent"] > 0, "a window from tls-a to tls-b has probes in it")
        r = subprocess.run([WEFT, "mesh", "--controller", f"https://127.0.0.1:{PORT}", "--ca", ca],
                           capture_output=True, text=True, timeout=20)
        check(r.returncode == 0 and "pair tls-a tls-b" in r.stdout, "weft mesh --ca reads the mesh over HTTPS")
        r = subprocess.run([WEFT, "mesh", "--controller", f"https://127.0.0.1:{PORT}", "--ca", other_ca],
                           capture_output=True, text=True, timeout=20)
        check(r.returncode == 1 and "does not verify against CA file" in r.stderr,
              f"weft mesh with another CA refuses the controller clearly: {r.stderr.strip()[:160]}")

        print("an agent with another CA", flush=True)
        wrong = agent(tmp, "tls-wrong", "127.0.0.3", 18565, other_ca)
        procs.append(wrong)
        log = mh.wait(lambda: (lambda t: t if "does not verify against CA file" in t else None)(
            open(f"{tmp}/agent-tls-wrong.log").read()), "the wrong-CA agent says why it refuses", 20)
        check("other-ca.pem" in log, "its error names the CA file")
        status, agents = https_get("/api/v1/agents", ca)
        check(status == 200 and "tls-wrong" not in {a["name"] for a in agents["agents"]},
              "the wrong-CA agent never registered")

        print("plain HTTP to the HTTPS port", flush=True)
        with socket.create_connection(("127.0.0.1", PORT), timeout=5) as s:
            s.sendall(b"GET /api/v1/agents HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = s.recv(4096)
            except ConnectionResetError:
                got = b""
            check(b"HTTP/" not in got, "no HTTP answer on the HTTPS port")

        print("a stalled handshake", flush=True)
        t0 = time.monotonic()
        with socket.create_connection(("127.0.0.1", PORT), timeout=10) as s:
            s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))  # half a ClientHello
            try:
                got = s.recv(4096)
            except (ConnectionResetError, socket.timeout):
                got = None
        took = time.monotonic() - t0
        check(got == b"" and 0.9 <= took < 3.0,
              f"a handshake that stalls is closed after http_header_timeout (1 s): {took:.2f} s")

        status, metrics = https_get("/metrics", ca)
        counts = {}
        for line in metrics.decode().splitlines():
            if line.startswith("weft_controller_tls_handshakes_total{"):
                counts[line.split('"')[1]] = float(line.split()[-1])
        check(counts.get("failed", 0) >= 1 and counts.get("timed_out", 0) >= 1 and counts.get("ok", 0) >= 2,
              f"/metrics counts the refused and the timed-out handshakes: {counts}")

        print("SIGHUP reloads the certificate", flush=True)
        old = file_cert_sha256(os.path.join(tmp, "server.pem"))
        before = len(mesh_pairs(ca))
        make_cert(tmp, "ca", "server", "DNS:localhost,IP:127.0.0.1")  # renewed: written over the old files
        new = file_cert_sha256(os.path.join(tmp, "server.pem"))
        check(new != old, "the renewed certificate differs")
        ctl.send_signal(signal.SIGHUP)
        served = mh.wait(lambda: (lambda h: h if h == new else None)(served_cert_sha256(ca)),
                         "a new connection is served the renewed certificate after SIGHUP", 10)
        check(served == new, "after SIGHUP the served certificate is the renewed one")
        t_reload = time.time()
        mh.wait(lambda: all(p.get("window_start", 0) > t_reload for p in mesh_pairs(ca).values()) and
                len(mesh_pairs(ca)) >= before, "agents keep reporting after the reload", 20)
        check(ctl.poll() is None, "the controller is still running")
        mh.stop(procs)
        procs.clear()

        print("mutual TLS", flush=True)
        make_ca(tmp, "agents-ca")
        make_cert(tmp, "agents-ca", "mtls-a", "DNS:mtls-a")
        make_cert(tmp, "agents-ca", "mtls-b", "DNS:mtls-b")
        make_cert(tmp, "agents-ca", "reader", "DNS:reader")
        ctl = start_controller_mtls(tmp)
        procs.append(ctl)
        cert = lambda n: ["--cert", f"{tmp}/{n}.pem", "--key", f"{tmp}/{n}.key"]  # noqa: E731
        procs.append(agent(tmp, "mtls-a", "127.0.0.1", 18561, ca, cert("mtls-a"), token=False))
        # Certificate of mtls-a, name mtls-b: the certificate names the agent, so it is refused.
        procs.append(agent(tmp, "mtls-b", "127.0.0.2", 18563, ca, cert("mtls-a"), token=False))
        reader = os.path.join(tmp, "reader")
        mh.wait(lambda: any(a["name"] == "mtls-a" for a in https_get("/api/v1/agents", ca, reader)[1]["agents"]),
                "an agent with a client certificate naming it registers without a token", 20)
        log = mh.wait(lambda: (lambda t: t if "403" in t else None)(open(f"{tmp}/agent-mtls-b.log").read()),
                      "an agent whose certificate names another is refused", 20)
        check("client certificate is agent 'mtls-a''s" in log, "the refusal names the certificate's agent")
        names = {a["name"] for a in https_get("/api/v1/agents", ca, reader)[1]["agents"]}
        check("mtls-b" not in names, "the agent with another's certificate is not registered")
        try:
            https_get("/api/v1/agents", ca)
            check(False, "a client without a certificate is refused")
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError, OSError):
            check(True, "a client without a certificate is refused")
        mh.stop(procs)
        procs.clear()

        print("plain HTTP beyond loopback", flush=True)
        cfg = os.path.join(tmp, "plain.yaml")
        base = f"agent_secret: {mh.agent_secret(TOKEN)}\nopen_read: true\nstore: sqlite:{tmp}/plain.db\n"
        with open(cfg, "w") as f:
            f.write(f"listen: 0.0.0.0:{PORT}\n{base}")
        r = subprocess.run([WEFT, "controller", "-c", cfg], capture_output=True, text=True, timeout=20)
        check(r.returncode == 2 and "plain_http: true" in r.stderr and "tls_cert" in r.stderr,
              f"plain HTTP beyond loopback is refused without plain_http: {r.stderr.strip()[:120]}")
        with open(cfg, "w") as f:
            f.write(f"listen: 0.0.0.0:{PORT}\nplain_http: true\n{base}")
        log = open(os.path.join(tmp, "plain.log"), "w")
        p = subprocess.Popen([WEFT, "controller", "-c", cfg], stdout=log, stderr=log)
        procs.append(p)
        mh.wait(lambda: mh.get(PORT, "/api/v1/agents") is not None, "plain_http: true serves plain HTTP", 20)
        check("clear text" in open(os.path.join(tmp, "plain.log")).read(), "plain_http beyond loopback warns")
    finally:
        mh.stop(procs)
        subprocess.run(["rm", "-rf", tmp])
    mh.finish(failed, "tls: HTTPS controller, agents and mesh with a CA file, refusals, stalled handshake, "
                      "SIGHUP reload, mutual TLS, plain HTTP rules")


def start_controller_mtls(tmp):
    extra = "tls_client_ca: agents-ca.pem\n"
    cfg = os.path.join(tmp, "weft.yaml")
    with open(cfg, "w") as f:
        # An agent secret: agent endpoints need a credential, and the client certificate is the one.
        f.write(f"listen: 127.0.0.1:{PORT}\ntls_cert: server.pem\ntls_key: server.key\n{extra}"
                f"agent_secret: {mh.agent_secret(TOKEN)}\nstore: sqlite:{tmp}/history-mtls.db\n"
                "window: 1s\nreport_interval: 300ms\npinglist_sync: 1s\n"
                "protocols:\n  udp: {interval: 50ms, timeout: 300ms}\n"
                "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    log = open(os.path.join(tmp, "controller-mtls.log"), "a")
    p = subprocess.Popen([WEFT, "--log-level", "info", "controller", "-c", cfg], stdout=log, stderr=log)
    reader = os.path.join(tmp, "reader")
    mh.wait(lambda: https_get("/healthz", os.path.join(tmp, "ca.pem"), reader)[0] in (200, 503),
            "the mutual-TLS controller answers", 20)
    return p


if __name__ == "__main__":
    main()
