// Paris traceroute on the UDP prober's flows (issue 24): TTL-limited probes sent on a flow's own
// socket, so that their 5-tuple, and with it the ECMP hash, is the flow's; each router's ICMP
// time-exceeded answer lands on that socket's error queue (IP_RECVERR, no raw socket, no root)
// with the router's address (SO_EE_OFFENDER). One hop in flight at a time, so an answer needs no
// matching beyond "the socket of the trace in flight"; a trace ends when the target answers (the
// responder replies to the trace probe, or the target's ICMP says the port is closed) or after
// trace_max_hops. Trace probes use a session of their own: their replies are recognised and
// counted in no window (docs/probe.md "Paths"). Not on the per-probe path.
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <sys/socket.h>

#include <cstring>

#include "probe/ip/prober_impl.hpp"

namespace weft::probe {

int64_t Prober::Impl::trace_next() const {
  if (!tracing()) return INT64_MAX;
  if (trace.active) return trace.hop_answered ? 0 : trace.hop_sent_mono + cfg.trace_hop_timeout.count();
  return next_trace_mono;
}

void Prober::Impl::trace_step(int64_t now) {
  if (!tracing()) return;
  if (trace.active) {
    if (!trace.hop_answered) {
      // Answers on a polled socket wait for its next read: look at its error queue first.
      TargetState* t = trace.target < targets.size() ? targets[trace.target].get() : nullptr;
      if (t && t->gen == trace.gen) drain_errqueue(static_cast<int>(t->sock * nflows + trace.flow));
    }
    if (!trace.hop_answered) {
      if (now < trace.hop_sent_mono + cfg.trace_hop_timeout.count()) return;
      trace_hop({}, false);  // no answer from this hop
    }
    if (trace.reached || trace.ended || trace.ttl >= cfg.trace_max_hops) {
      trace_finish(now);
      return;
    }
    trace.ttl++;
    trace_send_hop(now);
    return;
  }
  if (now < next_trace_mono || targets.empty()) return;
  // The next flow to trace: a followed one (its path just changed) that is due, unless the last
  // two were follow-ups; else one that started losing; else the next one round-robin that is due.
  const size_t jobs = targets.size() * nflows;
  int64_t due_before = now - cfg.trace_interval.count();
  const size_t follow_up = trace_pick_followed(now);
  size_t pick = follow_run < 2 ? follow_up : SIZE_MAX;
  for (size_t n = 0; n < jobs && pick == SIZE_MAX; ++n) {
    const size_t j = (trace_cursor + n) % jobs;
    TargetState* t = targets[j / nflows].get();
    if (t && !t->retired && !t->traced_mono.empty() && t->trace_urgent[j % nflows]) pick = j;
  }
  for (size_t n = 0; n < jobs && pick == SIZE_MAX; ++n) {
    const size_t j = (trace_cursor + n) % jobs;
    TargetState* t = targets[j / nflows].get();
    if (t && !t->retired && !t->traced_mono.empty() &&
        (t->traced_mono[j % nflows] == 0 || t->traced_mono[j % nflows] <= due_before))
      pick = j;
  }
  if (pick == SIZE_MAX) pick = follow_up;  // no other flow waits: the follow-up after all
  const bool followed_pick = pick == follow_up && pick != SIZE_MAX;
  follow_run = followed_pick ? follow_run + 1 : 0;
  if (pick == SIZE_MAX) {  // nothing due: look again in a while
    next_trace_mono = now + std::min<int64_t>(cfg.trace_gap.count(), 1'000'000'000);
    return;
  }
  if (!followed_pick) trace_cursor = pick + 1;
  TargetState& t = *targets[pick / nflows];
  const size_t flow = pick % nflows;
  t.traced_mono[flow] = now;
  t.trace_urgent[flow] = 0;
  trace.active = true;
  trace.target = static_cast<uint32_t>(pick / nflows);
  trace.gen = t.gen;
  trace.flow = flow;
  trace.ttl = 1;
  trace.reached = false;
  trace.ended = false;
  trace.hops.clear();
  trace.started_rt = realtime_ns();
  ++trace.id;
  next_trace_mono = now + cfg.trace_gap.count();
  trace_send_hop(now);
}

size_t Prober::Impl::trace_pick_followed(int64_t now) const {
  size_t pick = SIZE_MAX;
  int64_t oldest = INT64_MAX;
  for (const Followed& f : followed) {
    if (now >= f.until_mono || f.target >= targets.size()) continue;
    const TargetState* t = targets[f.target].get();
    if (!t || t->gen != f.gen || t->retired || f.flow >= t->traced_mono.size()) continue;
    const int64_t last = t->traced_mono[f.flow];
    if (last > now - cfg.trace_follow_gap.count() || last >= oldest) continue;
    oldest = last;
    pick = f.target * nflows + f.flow;
  }
  return pick;
}

void Prober::Impl::trace_follow(uint32_t target, uint32_t gen, size_t flow, int64_t now) {
  // Already followed: follow it longer. Else a free slot, else the one followed the longest.
  Followed* slot = nullptr;
  for (Followed& f : followed)
    if (f.target == target && f.gen == gen && f.flow == flow && now < f.until_mono) slot = &f;
  if (!slot)
    for (Followed& f : followed)
      if (!slot || f.until_mono < slot->until_mono) slot = &f;
  *slot = Followed{target, gen, flow, now + cfg.trace_follow_for.count()};
}

void Prober::Impl::trace_send_hop(int64_t now) {
  trace.hop_answered = false;
  trace.hop_sent_mono = now;
  TargetState* t = trace.target < targets.size() ? targets[trace.target].get() : nullptr;
  if (!t || t->gen != trace.gen || t->retired) {  // the target went away mid-trace
    trace.active = false;
    return;
  }
  const int sidx = static_cast<int>(t->sock * nflows + trace.flow);
  UdpSock& u = udp[static_cast<size_t>(sidx)];
  wire::Packet p;
  p.type = wire::Type::probe;
  p.session = trace_session;
  p.seq = (trace.id << 8) | static_cast<uint64_t>(trace.ttl);
  p.prober_tx_ns = realtime_ns();
  uint8_t buf[wire::kSize];
  wire::encode(p, std::span<uint8_t, wire::kSize>(buf, wire::kSize));
  iovec iov{buf, sizeof buf};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_name = t->addr.sa();
  m.msg_namelen = t->addr.length;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  const bool v6 = u.family == AF_INET6;
  c->cmsg_level = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
  c->cmsg_type = v6 ? IPV6_HOPLIMIT : IP_TTL;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int ttl = trace.ttl;
  std::memcpy(CMSG_DATA(c), &ttl, sizeof ttl);
  if (sendmsg(u.fd.get(), &m, 0) < 0) {
    trace.hop_answered = true;  // could not even leave: record no answer and move on
    trace.hops.emplace_back();
    return;
  }
  Counters::inc(ctr.trace_probes);
  // It took an OPT_ID and its transmit stamp will come: map the id to no probe (seq 0).
  u.txmap[u.tx_counter & tx_mask] = 0;
  ++u.tx_counter;
  ++u.unstamped;
}

void Prober::Impl::trace_hop(std::string addr, bool is_target) {
  if (trace.hop_answered) return;
  trace.hop_answered = true;
  trace.hops.push_back(std::move(addr));
  trace.reached = is_target;
}

void Prober::Impl::trace_finish(int64_t now) {
  trace.active = false;
  TargetState* t = trace.target < targets.size() ? targets[trace.target].get() : nullptr;
  if (!t || t->gen != trace.gen) return;
  Counters::inc(ctr.traces);
  if (trace.flow < t->traced_hops.size()) {
    auto& last = t->traced_hops[trace.flow];
    if (!last.empty() &&
        !proto::same_route(last, t->traced_reached[trace.flow] != 0, trace.hops, trace.reached))
      trace_follow(trace.target, trace.gen, trace.flow, now);
    last = trace.hops;
    t->traced_reached[trace.flow] = trace.reached ? 1 : 0;
  }
  if (!on_path) return;
  proto::PathTrace pt;
  pt.protocol = Protocol::udp;
  pt.target = t->target.name;
  pt.src_port = udp[t->sock * nflows + trace.flow].port;
  pt.dst_port = t->addr.port();
  pt.traced_at_unix_ns = trace.started_rt;
  pt.reached = trace.reached;
  pt.hops = std::move(trace.hops);
  trace.hops = {};
  on_path(std::move(pt));
}

// An error-queue message that is not a transmit stamp: an ICMP error for a datagram this socket
// sent. Returns true when it was the answer to the trace hop in flight.
bool Prober::Impl::trace_icmp(int sidx, const msghdr& m) {
  if (!trace.active || trace.hop_answered) return false;
  TargetState* t = trace.target < targets.size() ? targets[trace.target].get() : nullptr;
  if (!t || t->gen != trace.gen || sidx != static_cast<int>(t->sock * nflows + trace.flow)) return false;
  for (auto* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&m), c)) {
    const bool v4 = c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR;
    const bool v6 = c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR;
    if ((!v4 && !v6) || c->cmsg_len < CMSG_LEN(sizeof(sock_extended_err))) continue;
    sock_extended_err ee;
    std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
    if (ee.ee_origin != SO_EE_ORIGIN_ICMP && ee.ee_origin != SO_EE_ORIGIN_ICMP6) continue;
    // The offender's address follows the sock_extended_err in the same control message.
    const size_t have = c->cmsg_len - CMSG_LEN(0);
    const auto* off = reinterpret_cast<const sockaddr*>(CMSG_DATA(c) + sizeof(sock_extended_err));
    char text[INET6_ADDRSTRLEN] = {};
    if (ee.ee_origin == SO_EE_ORIGIN_ICMP && have >= sizeof(sock_extended_err) + sizeof(sockaddr_in) &&
        off->sa_family == AF_INET) {
      sockaddr_in a;
      std::memcpy(&a, off, sizeof a);
      inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    } else if (ee.ee_origin == SO_EE_ORIGIN_ICMP6 &&
               have >= sizeof(sock_extended_err) + sizeof(sockaddr_in6) && off->sa_family == AF_INET6) {
      sockaddr_in6 a;
      std::memcpy(&a, off, sizeof a);
      inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    }
    // Time exceeded: a router on the way. Anything else (port or host unreachable) ends the trace;
    // from the target itself it is the target.
    const bool time_exceeded = (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == ICMP_TIME_EXCEEDED) ||
                               (ee.ee_origin == SO_EE_ORIGIN_ICMP6 && ee.ee_type == 3);
    const std::string addr = text;
    const bool is_target = !addr.empty() && addr == t->target.host;
    trace_hop(addr, is_target);
    if (!time_exceeded) trace.ended = true;  // nothing answers past an unreachable
    return true;
  }
  return false;
}

// A reply (or follow-up) in the trace session: a trace probe reached the responder.
void Prober::Impl::trace_reply(const wire::Packet& p) {
  if (p.type != wire::Type::reply || !trace.active || trace.hop_answered) return;
  if (p.seq != ((trace.id << 8) | static_cast<uint64_t>(trace.ttl))) return;  // an earlier hop's, late
  TargetState* t = trace.target < targets.size() ? targets[trace.target].get() : nullptr;
  if (!t || t->gen != trace.gen) return;
  trace_hop(t->target.host, true);
}

}  // namespace weft::probe
