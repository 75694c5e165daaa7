// ICMP errors for a TCP connection (RFC 1122 4.2.3.9, RFC 5461, RFC 5927) and path MTU discovery
// (RFC 1191). The IP layer finds the connection by the quoted 4-tuple; what is checked here is the
// quoted sequence number, the one part of the quote a blind attacker does not know.
#include <algorithm>

#include "stack/tcp/connection.hpp"

namespace weft::stack::tcp {

namespace {
// RFC 1191 allows 68; Linux's min_pmtu (552) keeps a forged "fragmentation needed" from cutting a
// connection down to 28-byte segments (RFC 5927 7.2 suggests such a floor).
constexpr uint32_t kMinPathMtu = 552;
constexpr uint32_t kIpTcpHeaders = 40;

// RFC 1191 7: with no next-hop MTU in the message, the plateau below the quoted datagram's length.
uint32_t plateau_below(uint32_t len) {
  static constexpr uint32_t kPlateaus[] = {32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68};
  for (uint32_t p : kPlateaus)
    if (p < len) return p;
  return 68;
}
}  // namespace

bool Connection::icmp_error(wire::IcmpErrorKind kind, uint32_t seq, uint16_t mtu, uint16_t quoted_len) {
  Notify notify{*this};
  using K = wire::IcmpErrorKind;
  if (kind == K::none || state_ == State::closed || state_ == State::time_wait) return false;
  // RFC 5927 4.1 (and Linux's tcp_v4_err): only a segment in flight can have drawn the error.
  if (!(seq_le(snd_una_, seq) && seq_lt(seq, snd_max_))) {
    ++stats_.icmp_ignored;
    return false;
  }
  ++stats_.icmp_errors;
  if (kind == K::frag_needed) {
    if (!synchronized()) return true;  // a SYN is never too big; nothing to lower yet
    lower_path_mtu(mtu != 0 ? mtu : plateau_below(quoted_len));
    return true;
  }
  const bool unreachable = kind == K::net_unreachable || kind == K::host_unreachable ||
                           kind == K::proto_unreachable || kind == K::port_unreachable;
  if (state_ == State::syn_sent && unreachable) {
    // RFC 5461 4: a connect that draws an unreachable has no one to talk to; waiting out the SYN
    // retries (over two minutes) helps no one. Linux and the BSDs fail it at once.
    soft_error_ = kind;
    terminate(kind == K::port_unreachable ? CloseReason::refused : CloseReason::unreachable);
    return true;
  }
  // Soft error: the route may come back (RFC 1122 4.2.3.9 says to abort on 2-4; RFC 5927 4.1
  // recommends, as Linux does, treating those as soft too once synchronized, so a forged one with
  // a guessed sequence number cannot end a connection).
  soft_error_ = kind;
  return true;
}

void Connection::lower_path_mtu(uint32_t mtu) {
  mtu = std::max(mtu, kMinPathMtu);
  const uint32_t mss = mtu - kIpTcpHeaders - (ts_on_ ? 12 : 0);
  if (mss >= smss_) return;  // not smaller than what we send (an old or a forged message)
  smss_ = mss;
  ++stats_.pmtu_reductions;
  if (snd_max_ == snd_una_) return;
  // What is in flight in segments of the old size was dropped at the router: resend it in the new
  // size at once (Linux's tcp_simple_retransmit). Not a congestion signal (RFC 1191 6.5): cwnd and
  // ssthresh stay, and the dup ACKs or RACK marks this draws start no fast recovery.
  recover_ = snd_max_;
  if (rack_on()) {
    for (size_t i = 0; i < sent_.size(); ++i) {
      SentSeg& r = sent_[i];
      if (r.has(SentSeg::kSacked) || r.len() <= smss_) continue;
      r.flags = static_cast<uint8_t>((r.flags | SentSeg::kLost) & ~SentSeg::kRetrans);
      rack_maybe_lost_ = rack_any_lost_ = rack_any_marked_ = true;
    }
  } else {
    snd_nxt_ = snd_una_;  // go back, as after a timeout, skipping what was SACKed
  }
  output();
}

}  // namespace weft::stack::tcp
