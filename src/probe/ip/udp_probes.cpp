// UDP probes: batched sends (sendmmsg) with kernel transmit stamps from the error queue, and
// answers, follow-ups and batched follow-ups read in batches (recvmmsg).
#include <sys/socket.h>

#include <cstring>

#include "base/log.hpp"
#include "probe/ip/prober_impl.hpp"

namespace weft::probe {

void Prober::Impl::udp_flush_batch() {
  if (sbatch_n == 0) return;
  UdpSock& u = udp[sbatch_sock];
  const int sbatch_sock_sent = sbatch_sock;
  const int n = sbatch_n;
  sbatch_n = 0;
  const int64_t tx_rt = realtime_ns(), tx_mono = mono_ns();
  for (int i = 0; i < n; ++i) {
    const uint32_t tindex = static_cast<uint32_t>(sseq[i]);
    TargetState& t = *targets[tindex];
    Slot& s = new_slot(tindex, t, tx_mono);
    s.sock = static_cast<uint8_t>(sbatch_sock);
    sseq[i] = s.seq;
    wire::Packet p;
    p.type = wire::Type::probe;
    p.session = session;
    p.seq = s.seq;
    p.prober_tx_ns = tx_rt;
    wire::encode(p, std::span<uint8_t, wire::kSize>(sdata[i], wire::kSize));
    siov[i] = {sdata[i], wire::kSize};
    smsg[i] = {};
    smsg[i].msg_hdr.msg_name = t.addr.sa();
    smsg[i].msg_hdr.msg_namelen = t.addr.length;
    smsg[i].msg_hdr.msg_iov = &siov[i];
    smsg[i].msg_hdr.msg_iovlen = 1;
  }
  int done = 0;
  while (done < n) {
    int r = sendmmsg(u.fd.get(), smsg + done, static_cast<unsigned>(n - done), 0);
    if (r <= 0) {
      // This datagram failed (buffer full, no route...): it stays pending and will count as lost.
      if (!warned_send) {
        log().warn("prober: send to {} failed: {}", targets[table.at(sseq[done]).target]->addr_text,
                   std::strerror(errno));
        warned_send = true;
      }
      Counters::inc(ctr.send_errors);
      if (is_local_failure(errno))
        mark_unsent(table.at(sseq[done]), fmt::format("UDP send: {}", std::strerror(errno)));
      ++done;
      continue;
    }
    for (int i = done; i < done + r; ++i) {
      Slot& s = table.at(sseq[i]);
      s.tx_id = u.tx_counter;
      s.tx_id_valid = true;
      u.txmap[u.tx_counter & tx_mask] = s.seq;
      ++u.tx_counter;
    }
    u.unstamped += static_cast<uint64_t>(r);
    done += r;
  }
  drain_errqueue(sbatch_sock_sent);
}

void Prober::Impl::drain_errqueue(int sidx) {
  UdpSock& u = udp[sidx];
  for (;;) {
    const int r = tx_stamps.read(u.fd.get(), MSG_ERRQUEUE);
    if (r == 0) {
      u.unstamped = 0;  // all read (a stamp the driver gives later is read with its answer)
      return;
    }
    u.unstamped -= std::min(u.unstamped, static_cast<uint64_t>(r));
    for (int i = 0; i < r; ++i) {
      net::TxTimestamp ts;
      if (!net::parse_tx_timestamp(tx_stamps.header(static_cast<size_t>(i)), ts)) {
        if (tracing()) trace_icmp(sidx, tx_stamps.header(static_cast<size_t>(i)));  // a router's answer?
        continue;
      }
      const uint64_t seq = u.txmap[ts.id & tx_mask];
      Slot* s = table.find(seq);
      if (s && s->tx_id_valid && s->tx_id == ts.id && s->sock == sidx) s->timing.tx_kernel = ts.time;
    }
    // Fewer stamps than datagrams sent may mean some are not there yet: the next streaming
    // wake-up (unstamped != 0) or an answer whose stamp is missing reads them.
    if (r < kBatch) return;
  }
}

void Prober::Impl::udp_malformed(int i) {
  Counters::inc(ctr.malformed);
  if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
    window_at(*t, mono_ns()).add_malformed();
}

void Prober::Impl::udp_followups(int i, int64_t rx_mono) {
  const auto& h = udp_in.header(i);
  wire::Followups& f = followups_in;
  if ((h.msg_flags & MSG_TRUNC) || wire::decode_followups(udp_in.data(i), f) != wire::ParseError::ok) {
    udp_malformed(i);
    return;
  }
  if (f.session != session) {
    if (f.session == trace_session && tracing()) return;  // a trace probe's: no window counts it
    Counters::inc(ctr.unknown_session);
    if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
      window_at(*t, rx_mono).add_malformed();
    return;
  }
  udp_apply_followups(i, f, rx_mono);
}

// The entries of a follow-ups message for our session (on its own or carried by a reply).
void Prober::Impl::udp_apply_followups(int i, const wire::Followups& f, int64_t rx_mono) {
  for (size_t k = 0; k < f.count; ++k) {
    const wire::FollowupEntry& e = f.entries[k];
    if (e.seq >= next_seq) {  // one bad entry spoils the message: it cannot be ours
      Counters::inc(ctr.unknown_probe);
      if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
        window_at(*t, rx_mono).add_malformed();
      return;
    }
  }
  for (size_t k = 0; k < f.count; ++k)
    if (apply_followup(f.entries[k].seq, f.flags, f.entries[k].responder_rx_ns, f.entries[k].responder_tx_ns,
                       rx_mono))
      ready[n_ready++] = f.entries[k].seq;
}

void Prober::Impl::udp_datagram(int i, int64_t rx_mono) {
  const auto& h = udp_in.header(i);
  if (wire::is_followups(udp_in.data(i))) {
    udp_followups(i, rx_mono);
    return;
  }
  wire::Packet p;
  // A reply may carry follow-ups for earlier probes (wire.hpp); they are applied after the reply.
  const bool carries = wire::is_reply_followups(udp_in.data(i));
  const wire::ParseError err = carries ? wire::decode_reply_followups(udp_in.data(i), p, followups_in)
                                       : wire::decode(udp_in.data(i), p);
  if ((h.msg_flags & MSG_TRUNC) || err != wire::ParseError::ok || p.type == wire::Type::probe) {
    udp_malformed(i);
    return;
  }
  if (p.session != session) {
    if (p.session == trace_session && tracing()) {  // a trace probe reached the target
      trace_reply(p);
      return;
    }
    Counters::inc(ctr.unknown_session);
    if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
      window_at(*t, rx_mono).add_malformed();
    return;
  }
  if (p.seq >= next_seq) {
    Counters::inc(ctr.unknown_probe);
    if (TargetState* t = target_by_addr(udp_in.sender(i), udp_in.sender_length(i)))
      window_at(*t, rx_mono).add_malformed();
    return;
  }
  udp_reply_or_followup(i, p, rx_mono);
  if (carries) udp_apply_followups(i, followups_in, rx_mono);
}

// A reply or single follow-up (type 2 or 3) for our session and a sequence number we sent.
void Prober::Impl::udp_reply_or_followup(int i, const wire::Packet& p, int64_t rx_mono) {
  const auto& h = udp_in.header(i);
  Slot* s = table.find(p.seq);
  if (!s) {  // older than the table remembers: it can only be late, and its loss has gone out
    if (p.type == wire::Type::reply) Counters::inc(ctr.late);
    return;
  }
  TargetState* t = target_of(*s);
  if (p.type == wire::Type::reply) {
    switch (s->state) {
      case SlotState::pending: {
        net::parse_rx_time(h, s->timing.rx_kernel);
        s->timing.rx_user_mono = rx_mono;
        s->timing.has_responder = true;
        if (!s->has_followup) {  // a follow-up that came first already holds better times
          s->timing.responder_rx_ns = p.responder_rx_ns;
          s->timing.responder_tx_ns = p.responder_tx_ns;
          s->timing.responder_flags = p.flags;
        }
        s->state = SlotState::answered;
        if (s->has_followup || !(p.flags & wire::kFollowupComing))
          ready[n_ready++] = p.seq;
        else
          grace_push(p.seq);
        break;
      }
      case SlotState::answered:
      case SlotState::done:
        Counters::inc(ctr.duplicate);
        if (t) window_at(*t, rx_mono).add_duplicate();
        break;
      case SlotState::expired:
        Counters::inc(ctr.late);
        if (t) add_late_to_loss_window(*t, *s);
        break;
      case SlotState::empty:
        break;
    }
    return;
  }
  // Follow-up: the responder's kernel receive/send pair for this probe. One after the probe was
  // resolved is just too slow to use.
  if (apply_followup(p.seq, p.flags, p.responder_rx_ns, p.responder_tx_ns, rx_mono)) ready[n_ready++] = p.seq;
}

void Prober::Impl::udp_readable(int sidx, uint32_t events) {
  UdpSock& u = udp[sidx];
  if (events & EPOLLERR) drain_errqueue(sidx);
  if (!(events & EPOLLIN)) return;
  for (int rounds = 0; rounds < 16; ++rounds) {
    const int r = udp_in.read(u.fd.get());
    if (r == 0) return;
    const int64_t rx_mono = mono_ns();
    n_ready = 0;
    for (int i = 0; i < r; ++i) udp_datagram(i, rx_mono);
    if (n_ready > 0) {
      // The probes' own send timestamps were queued before their answers could exist.
      // (Neither drain_errqueue nor finalize touches `ready`.)
      bool missing = false;
      for (size_t j = 0; j < n_ready; ++j) {
        Slot* s = table.find(ready[j]);
        missing |= s && s->tx_id_valid && s->timing.tx_kernel.software_ns == 0 &&
                   s->timing.tx_kernel.hardware_ns == 0;
      }
      if (missing) drain_errqueue(sidx);
      for (size_t j = 0; j < n_ready; ++j) {
        Slot* s = table.find(ready[j]);
        if (s && s->state == SlotState::answered) finalize(*s);
      }
    }
    if (r < kBatch) return;
  }
}

}  // namespace weft::probe
