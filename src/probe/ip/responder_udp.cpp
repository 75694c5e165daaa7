// The responder's UDP datapath: probes read in batches and answered at once, the replies' kernel
// send times turned into follow-ups (in a message per prober, or carried by the pair's next reply).
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <span>

#include "base/clock.hpp"
#include "net/timestamping.hpp"
#include "probe/ip/responder_impl.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

void Responder::Impl::flush(bool stamp_replies) {
  if (n_send == 0) return;
  const int n = n_send;
  n_send = 0;
  const int64_t tx_rt = realtime_ns();
  for (int i = 0; i < n; ++i) {
    TxEntry& e = staged[i];
    if (stamp_replies && e.reply) e.packet.responder_tx_ns = tx_rt;
    size_t len = wire::kSize;
    if (e.followups)
      len = wire::encode_followups(staged_followups[i], sdata[i]);
    else if (e.carries)
      len = wire::encode_reply_followups(e.packet, staged_followups[i], sdata[i]);
    else
      wire::encode(e.packet, std::span<uint8_t, wire::kSize>(sdata[i], wire::kSize));
    siov[i] = {sdata[i], len};
    smsg[i] = {};
    smsg[i].msg_hdr.msg_name = e.to.name();
    smsg[i].msg_hdr.msg_namelen = e.to.length;
    smsg[i].msg_hdr.msg_iov = &siov[i];
    smsg[i].msg_hdr.msg_iovlen = 1;
    size_t clen = write_source(e.source, sctrl[i], sizeof sctrl[i]);
    const bool no_stamp = followups_skip_ids && (!e.reply || !e.stamped);
    if (no_stamp) clen += net::write_no_tx_timestamp(sctrl[i] + clen, sizeof sctrl[i] - clen);
    smsg[i].msg_hdr.msg_control = clen ? sctrl[i] : nullptr;
    smsg[i].msg_hdr.msg_controllen = clen;
  }
  int done = 0;
  while (done < n) {
    int r = sendmmsg(udp.get(), smsg + done, static_cast<unsigned>(n - done), 0);
    if (r <= 0) {
      ++done;  // this one failed (buffer full, peer gone): skip it, it takes no OPT_ID
      continue;
    }
    for (int i = done; i < done + r; ++i) {
      TxEntry& e = staged[i];
      if (e.reply) inc(answered);
      if (e.followups || e.carries) inc(followups, staged_followups[i].count);
      if (e.carries) inc(carried, staged_followups[i].count);
      if (e.reply && !e.stamped) inc(shed);
      if (followups_skip_ids && (!e.reply || !e.stamped)) continue;  // took no OPT_ID number
      TxEntry& slot = tx_ring[tx_counter % kTxRing];
      slot = e;
      slot.id = tx_counter++;
      slot.valid = true;
    }
    done += r;
  }
}

void Responder::Impl::release_held(int64_t now) {
  if (held.held() == 0 && !held.full()) {
    next_held_due = INT64_MAX;
    return;
  }
  const int64_t hold = cfg.carry_hold.count(), horizon = now + cfg.max_coalesce.count();
  int64_t next = INT64_MAX;
  for (auto& pair : held.pairs()) {
    if (pair.count == 0) continue;
    if (pair.held_since + hold <= horizon || held.full())
      queue_held(pair);
    else
      next = std::min(next, pair.held_since + hold);
  }
  if (held.full()) held.clear();
  flush(false);
  next_held_due = next;
}

void Responder::Impl::udp_readable() {
  // Overload: when the last read found a backlog, answer without follow-ups (and without
  // transmit stamps) until it is gone, so that probes are answered rather than dropped; those
  // replies carry the user-space send time and the prober reports them as such. Only where
  // the kernel lets single datagrams go unstamped without taking an OPT_ID number.
  const bool shedding = followups_on && followups_skip_ids && backlog;
  int read_total = 0;
  for (int rounds = 0; rounds < 16; ++rounds) {
    const int r = udp_in.read(udp.get());
    if (r == 0) break;
    const int64_t rx_user = realtime_ns(), now_mono = mono_ns();
    for (int i = 0; i < r; ++i) {
      const auto& h = udp_in.header(static_cast<size_t>(i));
      wire::Packet p;
      if ((h.msg_flags & MSG_TRUNC) ||
          wire::decode(udp_in.data(static_cast<size_t>(i)), p) != wire::ParseError::ok ||
          p.type != wire::Type::probe) {
        inc(malformed);
        continue;
      }
      net::KernelTime rx;
      net::parse_rx_time(h, rx);
      TxEntry& e = queue(true);
      e.rx = rx;
      e.packet = p;
      e.packet.type = wire::Type::reply;
      e.stamped = !shedding;
      e.packet.flags = static_cast<uint8_t>((rx.software_ns ? wire::kRxKernel : 0) |
                                            (followups_on && !shedding ? wire::kFollowupComing : 0));
      e.packet.responder_rx_ns = rx.software_ns ? rx.software_ns : rx_user;
      e.to = PeerAddress::from(reinterpret_cast<const sockaddr*>(&udp_in.sender(static_cast<size_t>(i))),
                               h.msg_namelen);
      read_source(h, e.source);
      if (followups_on && !shedding && wire::replies_carry_followups_ok(p.session))
        carry_held(n_send - 1, now_mono);
      if (n_send == kBatch) flush(true);
    }
    flush(true);
    read_total += r;
    if (r < kBatch) break;
  }
  backlog = read_total >= kBacklog;
  if (followups_on) drain_errqueue();
}

void Responder::Impl::drain_errqueue() {
  int64_t now = 0;  // read at the first held follow-up (hold_followup)
  for (int rounds = 0; rounds < 16; ++rounds) {
    const int r = tx_stamps.read(udp.get(), MSG_ERRQUEUE);
    if (r <= 0) break;
    for (int i = 0; i < r; ++i) {
      net::TxTimestamp ts;
      if (!net::parse_tx_timestamp(tx_stamps.header(static_cast<size_t>(i)), ts)) continue;
      TxEntry& slot = tx_ring[ts.id % kTxRing];
      if (!slot.valid || slot.id != ts.id || !slot.reply) continue;
      slot.valid = false;
      const TxEntry sent = slot;  // a copy: sending may reuse the ring slot
      uint8_t flags = 0;
      int64_t rx_ns = 0, tx_ns = 0;
      if (followup_times(sent.rx, sent.packet.responder_rx_ns, ts.time, flags, rx_ns, tx_ns) &&
          !hold_followup(sent, flags, rx_ns, tx_ns, now))
        add_followup(sent, flags, rx_ns, tx_ns);
    }
    if (r < kBatch) break;
  }
  while (n_open > 0) queue_followups(n_open - 1);
  flush(false);
}

}  // namespace weft::probe
