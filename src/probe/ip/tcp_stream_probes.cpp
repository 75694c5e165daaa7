// TCP probes on one kept-open connection per target: request/echo frames timed like UDP.
#include <sys/socket.h>

#include "net/frame_reader.hpp"
#include "probe/ip/prober_impl.hpp"

namespace weft::probe {

// Request/echo on one connection per target, timed like UDP: the probe's kernel send stamp
// comes back on the connection's error queue under its byte offset (stream_timestamps.hpp), the
// answer's receive stamp with the read (one per read: frame_reader.hpp), and a responder that
// knows how sends its kernel times in a follow-up frame after the reply (two-step, as on UDP).
void Prober::Impl::keep_open_connect(uint32_t tindex, TargetState& t, int64_t now) {
  KeptOpen& c = *t.kept;
  auto fd = net::tcp_connect_start(bind_addr[t.sock], t.addr);
  c.reconnect_after_mono = now + std::max<int64_t>(interval_ns, 100'000'000);
  if (!fd) {
    if (is_local_failure(fd.error().code)) c.connect_local_error = fd.error().message;
    return;
  }
  c.connect_local_error.clear();
  linger lg{0, 0};  // a kept-open connection closes normally
  setsockopt(fd->get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  // Receive stamps from the start; transmit stamps once connected (OPT_ID needs a connection).
  (void)net::enable_timestamping(fd->get(), false);
  c.conn = std::move(*fd);
  c.connected = false;
  c.connect_started_mono = now;
  c.rlen = 0;
  if (!ep.add(c.conn.get(), EPOLLOUT | EPOLLIN, tag(kTcpConn, tindex))) close_conn(t);
}

void Prober::Impl::keep_open_send(uint32_t tindex, TargetState& t, int64_t now) {
  KeptOpen& c = *t.kept;
  if (c.conn.valid() && !c.connected) {
    if (now - c.connect_started_mono < timeout_ns) return;  // still connecting: not a probe yet
    close_conn(t);  // the handshake took longer than a probe may: this probe is lost
  }
  if (!c.conn.valid() && now >= c.reconnect_after_mono) keep_open_connect(tindex, t, now);
  const int64_t tx_rt = realtime_ns(), tx_mono = mono_ns();
  Slot& s = new_slot(tindex, t, tx_mono);
  if (!c.connected) {
    Counters::inc(ctr.send_errors);
    // No connection because this host could not open one: not the network's loss.
    if (!c.conn.valid() && !c.connect_local_error.empty()) mark_unsent(s, c.connect_local_error);
    return;  // lost at its deadline
  }
  wire::Packet p;
  p.type = wire::Type::probe;
  p.session = session;
  p.seq = s.seq;
  p.prober_tx_ns = tx_rt;
  uint8_t buf[wire::kSize];
  wire::encode(p, std::span<uint8_t, wire::kSize>(buf, wire::kSize));
  const uint32_t key = c.keys.next_key();
  // MSG_EOR: no later write joins this probe's packet (which carries one transmit stamp).
  ssize_t n = ::send(c.conn.get(), buf, sizeof buf, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_EOR);
  if (n != static_cast<ssize_t>(sizeof buf)) {
    Counters::inc(ctr.send_errors);
    close_conn(t);  // a partial frame would desynchronise the stream
    return;
  }
  if (c.tx_stamps) {
    c.tx_seq[c.keys.frames() % KeptOpen::kTxFrames] = s.seq;
    s.tx_id = key;
    s.tx_id_valid = true;
  }
  c.keys.wrote_frame();
}

// Reads the send stamps waiting on a kept-open connection into their probes' slots.
size_t Prober::Impl::keep_open_tx_stamps(uint32_t tindex) {
  if (tindex >= targets.size() || !targets[tindex]) return 0;
  TargetState& t = *targets[tindex];
  if (!t.kept) return 0;
  KeptOpen& c = *t.kept;
  if (!c.conn.valid() || !c.tx_stamps) return 0;
  return net::read_tx_timestamps(c.conn.get(), [&](const net::TxTimestamp& ts) {
    const int64_t frame = c.keys.frame_of(ts.id, KeptOpen::kTxFrames);
    if (frame < 0) return;
    Slot* s = table.find(c.tx_seq[static_cast<uint64_t>(frame) % KeptOpen::kTxFrames]);
    // The first stamp is when the probe left; a retransmission may stamp the same bytes again.
    if (s && s->tx_id_valid && s->tx_id == ts.id && s->target == tindex && s->target_gen == t.gen &&
        !s->timing.tx_kernel.software_ns && !s->timing.tx_kernel.hardware_ns)
      s->timing.tx_kernel = ts.time;
  });
}

void Prober::Impl::keep_open_event(uint32_t tindex, uint32_t events) {
  if (tindex >= targets.size() || !targets[tindex]) return;
  TargetState& t = *targets[tindex];
  if (!t.kept || !t.kept->conn.valid()) return;
  KeptOpen& c = *t.kept;
  if (!c.connected) {
    if (net::socket_error(c.conn.get()) != 0 || (events & (EPOLLERR | EPOLLHUP))) {
      close_conn(t);
      return;
    }
    c.connected = true;
    // Nothing written yet: the byte counter starts at the first probe.
    c.tx_stamps = net::enable_stream_timestamping(c.conn.get()).has_value();
    c.keys = {};
    (void)ep.modify(c.conn.get(), EPOLLIN, tag(kTcpConn, tindex));
  }
  size_t stamps = 0;
  if (events & EPOLLERR) stamps = keep_open_tx_stamps(tindex);
  // EPOLLERR with no stamp waiting is a real error: reading reports it and closes.
  if (!(events & (EPOLLIN | EPOLLHUP)) && !((events & EPOLLERR) && stamps == 0)) return;
  const bool open = net::read_frames<wire::kSize>(
      c.conn.get(), c.rbuf, sizeof c.rbuf, c.rlen,
      [&](std::span<const uint8_t, wire::kSize> frame, const net::KernelTime& kt) {
        return keep_open_frame(tindex, t, frame, kt);
      });
  if (!open) close_conn(t);
}

// One frame from a kept-open connection; false when the stream cannot be trusted any more.
bool Prober::Impl::keep_open_frame(uint32_t tindex, TargetState& t,
                                   std::span<const uint8_t, wire::kSize> frame, const net::KernelTime& kt) {
  const int64_t rx_mono = mono_ns();
  wire::Packet p;
  if (wire::decode(frame, p) != wire::ParseError::ok || p.type == wire::Type::probe) {
    Counters::inc(ctr.malformed);
    window_at(t, rx_mono).add_malformed();
    return false;  // a stream out of step cannot be trusted any more
  }
  if (p.session != session) {
    Counters::inc(ctr.unknown_session);
    return true;
  }
  Slot* s = p.seq < next_seq ? table.find(p.seq) : nullptr;
  if (p.seq >= next_seq || (s && (s->target != tindex || s->target_gen != t.gen))) {
    Counters::inc(ctr.unknown_probe);  // never sent, or sent to another target
    return true;
  }
  if (!s) {  // older than the table remembers: a reply can only be late (its loss has gone out)
    if (p.type == wire::Type::reply) Counters::inc(ctr.late);
    return true;
  }
  if (p.type == wire::Type::followup) {
    if (apply_followup(p.seq, p.flags, p.responder_rx_ns, p.responder_tx_ns, rx_mono)) finalize(*s);
    return true;
  }
  switch (s->state) {
    case SlotState::pending:
      // kt is empty when this reply was read together with a later frame (frame_reader.hpp):
      // its arrival time is then not known to the kernel's precision, and the RTT is user time.
      s->timing.rx_kernel = kt;
      s->timing.rx_user_mono = rx_mono;
      s->timing.has_responder = true;
      if (!s->has_followup) {
        s->timing.responder_rx_ns = p.responder_rx_ns;
        s->timing.responder_tx_ns = p.responder_tx_ns;
        s->timing.responder_flags = p.flags;
      }
      s->state = SlotState::answered;
      // A reply without "follow-up coming" (an older responder, or one out of room) is final.
      if (s->has_followup || !(p.flags & wire::kFollowupComing))
        finalize(*s);
      else
        grace_push(p.seq);
      break;
    case SlotState::expired:
      Counters::inc(ctr.late);
      add_late_to_loss_window(t, *s);
      break;
    case SlotState::answered:
    case SlotState::done:
      Counters::inc(ctr.duplicate);
      window_at(t, rx_mono).add_duplicate();
      break;
    case SlotState::empty:
      break;
  }
  return true;
}

}  // namespace weft::probe
