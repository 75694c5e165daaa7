// The RDMA probe engine's datapath: sends posted in batches, the CQ drained (receives: PINGs to
// answer, PONGs and follow-ups to match, garbage to count; sends: the stamps of our PINGs, PONGs
// whose completion triggers the follow-up), receive buffers re-posted, probes resolved.
#include <cstring>
#include <span>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "probe/rdma/engine_impl.hpp"
#include "rdma/error.hpp"

namespace weft::probe {

Status RdmaEngine::Impl::flush_reposts() {
  if (reposts.empty()) return {};
  auto st = qp.post_recv(std::span<rdma::RecvWr>(reposts));
  if (!st) return st;
  inc(c.recv_posted, reposts.size());
  reposts.clear();
  return {};
}

void RdmaEngine::Impl::flush_sends() {
  if (batch.empty()) return;
  rdma::chain(std::span<rdma::SendWr>(batch));
  // A PONG's software send time is its post: stamp it here, not when it was queued.
  const int64_t now = mono_ns();
  for (auto& w : batch) sends[w.wr.wr_id].post_mono = now;
  size_t first_bad = 0;
  if (auto st = qp.post_send(std::span<rdma::SendWr>(batch), &first_bad); !st) {
    // WRs from first_bad on were not posted: they are the newest in the ring, so take them back.
    log().warn("rdma probe: {} ({} of {} WRs not posted)", st.error().message, batch.size() - first_bad,
               batch.size());
    for (size_t j = first_bad; j < batch.size(); ++j) {
      const SendCtx& s = sends[batch[j].wr.wr_id];
      inc(c.send_errors);
      if (s.kind == SendKind::ping && s.session == session) in_flight->on_send_failed(s.seq);
    }
    head -= batch.size() - first_bad;
  }
  batch.clear();
}

ibv_ah* RdmaEngine::Impl::peer_ah(const w::Message& m) {
  PeerKey k{m.gid, m.lid, (m.flags & w::kGlobal) != 0};
  if (auto it = peers.find(k); it != peers.end()) return it->second.raw();
  if (peers.size() >= cfg.max_peers) return nullptr;
  rdma::ConnectOptions o = opts;
  ibv_gid g{};
  std::memcpy(g.raw, m.gid.data(), 16);
  if (!k.global) o.gid_index = -1;
  auto ah = rdma::AddressHandle::create(pd, o, g, m.lid);
  if (!ah) {
    log().warn("rdma responder: no address handle for a prober: {}", ah.error().message);
    return nullptr;
  }
  return peers.emplace(k, std::move(*ah)).first->second.raw();
}

void RdmaEngine::Impl::on_ping(const w::Message& m, const rdma::WorkCompletion& cpl) {
  inc(c.pings_received);
  if (!cfg.respond) return;
  PongReq r{peer_ah(m), cpl.src_qp, m.qkey, m.session, m.seq, stamp_of(cpl)};
  if (!r.ah) {
    inc(c.responder_drops);
    return;
  }
  if (bl_head == bl_tail && post_pong(r)) return;
  if (bl_head - bl_tail >= backlog.size()) {
    inc(c.responder_drops);
    return;
  }
  backlog[bl_head++ % backlog.size()] = r;
}

void RdmaEngine::Impl::drain_backlog() {
  while (bl_tail != bl_head && post_pong(backlog[bl_tail % backlog.size()])) ++bl_tail;
}

Status RdmaEngine::Impl::on_recv(const rdma::WorkCompletion& cpl) {
  const uint32_t i = static_cast<uint32_t>(cpl.wr_id & ~kRecvBit);
  if (i >= recv_ring) return fail("rdma probe: receive completion with unknown wr_id {}", cpl.wr_id);
  ++recv_taken;
  c.recv_posted.fetch_sub(1, std::memory_order_relaxed);
  if (cpl.status == IBV_WC_WR_FLUSH_ERR)
    return fail("rdma probe: receive flushed: the QP on {} went into the error state", dev.name());
  queue_repost(i);
  if (cpl.status != IBV_WC_SUCCESS) {
    inc(c.recv_errors);
    return {};
  }
  const uint8_t* buf = recv_buf(i);
  w::Message m;
  if (cpl.byte_len < rdma::kGrhBytes || cpl.byte_len > recv_slot ||
      w::decode(std::span<const uint8_t>(buf + rdma::kGrhBytes, cpl.byte_len - rdma::kGrhBytes), m) !=
          w::ParseError::ok) {
    inc(c.garbage);
    return {};
  }
  switch (m.type) {
    case w::Type::ping:
      on_ping(m, cpl);
      break;
    case w::Type::pong:
    case w::Type::followup: {
      if (m.session != session) {
        inc(c.unknown_session);
        break;
      }
      RdmaMatch r = m.type == w::Type::pong
                        ? in_flight->on_pong(m.seq, stamp_of(cpl))
                        : in_flight->on_followup(m.seq, m.delay_ns, m.flags & w::kHardware);
      if (r == RdmaMatch::unknown)
        inc(c.unknown_probe);
      else if (r == RdmaMatch::late)
        inc(c.late);
      else if (r == RdmaMatch::duplicate)
        inc(c.duplicate);
      break;
    }
  }
  return {};
}

Status RdmaEngine::Impl::on_send(const rdma::WorkCompletion& cpl) {
  if (cpl.wr_id >= send_depth || tail == head)
    return fail("rdma probe: send completion with unknown wr_id {} ({} {}, {} sends outstanding)", cpl.wr_id,
                rdma::wc_opcode_name(cpl.opcode), rdma::wc_status_name(cpl.status), head - tail);
  const SendCtx s = sends[cpl.wr_id];
  ++tail;
  if (cpl.status == IBV_WC_WR_FLUSH_ERR)
    return fail("rdma probe: send flushed: the QP on {} went into the error state", dev.name());
  const bool ok = cpl.status == IBV_WC_SUCCESS;
  if (!ok) inc(c.send_errors);
  switch (s.kind) {
    case SendKind::ping:
      if (ok)
        in_flight->on_tx(s.seq, stamp_of(cpl));
      else
        in_flight->on_send_failed(s.seq);
      break;
    case SendKind::pong: {
      if (!ok) break;
      inc(c.pongs_sent);
      const ResponderDelay d = responder_delay(clock.clock, s.ping_rx, stamp_of(cpl), s.post_mono);
      w::Message m;
      m.type = w::Type::followup;
      m.flags = d.hardware ? w::kHardware : 0;
      m.session = s.session;
      m.seq = s.seq;
      m.delay_ns = d.ns;
      // The completion just freed a slot, so this always fits.
      if (!post(SendKind::followup, m, s.ah, s.qpn, s.qkey)) inc(c.send_errors);
      break;
    }
    case SendKind::followup:
      if (ok) inc(c.followups_sent);
      break;
  }
  return {};
}

Result<size_t> RdmaEngine::Impl::drain() {
  size_t total = 0;
  recv_taken = 0;
  const uint32_t ring_before = recv_ring;
  for (;;) {
    auto n = cq.poll(std::span<rdma::WorkCompletion>(completions));
    if (!n) return std::unexpected(n.error());
    for (size_t j = 0; j < *n; ++j) {
      const rdma::WorkCompletion& cpl = completions[j];
      auto st = (cpl.wr_id & kRecvBit) ? on_recv(cpl) : on_send(cpl);
      if (!st) return std::unexpected(st.error());
    }
    total += *n;
    drain_backlog();
    // Buffers go back before the next batch is read, so the receive queue never runs dry.
    if (auto st = flush_reposts(); !st) return std::unexpected(st.error());
    flush_sends();
    if (*n < completions.size()) break;
  }
  // A drain that took more than half the ring, or new peers (probers answered for the first
  // time): grow before the next burst can find the ring empty.
  if (total > 0) {
    const uint32_t want =
        std::max(recv_ring_after_drain(ring_before, recv_taken, recv_capacity), ring_for_peers());
    if (want > recv_ring)
      if (auto st = grow_recv(want); !st) return std::unexpected(st.error());
  }
  return total;
}

void RdmaEngine::Impl::resolve(RdmaSlot& s, RdmaOutcome o) {
  TargetState* t = target_of(s);
  RdmaProbeResult r;
  r.seq = s.seq;
  if (t) r.target = t->target.name;
  if (o == RdmaOutcome::answered) {
    r.answered = true;
    r.sample = compute_rdma_rtt(clock.clock, s.timing);
    inc(c.received);
    if (r.sample.weird) inc(c.weird);
    if (t) t->windows.at(s.deadline_unix_ns, cfg.window.count(), emitter(t)).add_answer(r.sample);
  } else {
    inc(c.lost);
    if (o == RdmaOutcome::evicted) inc(c.evicted);
    if (t) t->windows.at(s.deadline_unix_ns, cfg.window.count(), emitter(t)).add_lost();
  }
  if (on_probe && t) on_probe(r);
}

int64_t RdmaEngine::Impl::send_due(int64_t now, int64_t now_unix) {
  const int64_t interval = cfg.interval.count();
  int64_t next = now + kMaxSleepNs;
  for (size_t ti = 0; ti < targets.size(); ++ti) {
    TargetState& t = *targets[ti];
    if (t.retired || (cfg.count && t.sends >= cfg.count)) continue;
    int64_t due = t.phase_mono + static_cast<int64_t>(t.k) * interval;
    if (due <= now - 10 * interval) {
      // Far behind (the loop was starved): skip the missed sends rather than burst them out.
      t.k = static_cast<uint64_t>((now - t.phase_mono) / interval);
      due = t.phase_mono + static_cast<int64_t>(t.k) * interval;
    }
    while (due <= now && (!cfg.count || t.sends < cfg.count)) {
      // Keep half of the send queue for the responder's PONGs and follow-ups.
      if (outstanding() >= send_depth / 2) {
        flush_sends();
        return now;
      }
      w::Message m;
      m.type = w::Type::ping;
      m.session = session;
      m.seq = ++next_seq;
      m.qkey = cfg.qkey;
      if (t.target.global) {
        m.flags = w::kGlobal;
        std::memcpy(m.gid.data(), addr.gid.raw, 16);
      } else {
        m.lid = addr.lid;
      }
      const int64_t post_mono = mono_ns();
      in_flight->start(m.seq, static_cast<uint32_t>(ti), t.gen, post_mono, post_mono + cfg.timeout.count(),
                       now_unix + (post_mono - now) + cfg.timeout.count());
      if (!post(SendKind::ping, m, t.ah->raw(), t.target.qpn, t.target.qkey)) {
        in_flight->on_send_failed(m.seq);
        flush_sends();
        return now;
      }
      inc(c.sent);
      ++t.sends;
      ++t.k;
      due += interval;
    }
    if (!cfg.count || t.sends < cfg.count) next = std::min(next, due);
  }
  flush_sends();
  return next;
}

}  // namespace weft::probe
