"""Per-stage times of a round trip from the stamps of bench/rdma_probe_stages/stages.guest.

pingpong: client post -> server polled the message -> server posted the reply -> client polled it.
ping:     PING posted -> responder polled it -> PONG posted -> prober polled the PONG.
Prints, per tool, the four segments (3 legs and the total): their minimum per round (median over
rounds and range), and their median per round (median over rounds).
  python3 summary.py SHARE_DIR...
"""
import sys, os, statistics as st
def load(p):
    out = {}
    for line in open(p):
        c = line.split()
        out[int(c[1])] = [int(x) for x in c[2:]]
    return out
for d in sys.argv[1:]:
    pp, pr = [], []
    for r in range(1, 20):
        if os.path.exists(f"{d}/pp-c.{r}") and os.path.exists(f"{d}/pp-s.{r}"):
            C, S = load(f"{d}/pp-c.{r}"), load(f"{d}/pp-s.{r}")
            pp.append([(S[i][0]-C[i][0], S[i][1]-S[i][0], C[i][1]-S[i][1], C[i][1]-C[i][0]) for i in C if i in S])
        if os.path.exists(f"{d}/pr-p.{r}") and os.path.exists(f"{d}/pr-r.{r}"):
            P, R = load(f"{d}/pr-p.{r}"), load(f"{d}/pr-r.{r}")
            pr.append([(R[i][0]-P[i][0], R[i][1]-R[i][0], P[i][2]-R[i][1], P[i][2]-P[i][0]) for i in P if i in R])
    print(d)
    for name, rows in (("pingpong", pp), ("ping-busy", pr)):
        mins = [[min(s[j] for s in segs)/1000 for j in range(4)] for segs in rows]
        p50 = [[st.median(s[j] for s in segs)/1000 for j in range(4)] for segs in rows]
        print(f"  {name:9s} segment min (median over {len(rows)} rounds; range):  ", "  ".join(f"{st.median(m[j] for m in mins):7.1f} ({min(m[j] for m in mins):.1f}-{max(m[j] for m in mins):.1f})" for j in range(4)))
        print(f"  {name:9s} segment p50 (median over rounds):  ", "  ".join(f"{st.median(m[j] for m in p50):9.1f}" for j in range(4)))
