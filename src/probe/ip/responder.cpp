// The responder's event loop.
//
// UDP: read probes in batches (recvmmsg) with their kernel receive times, answer each at once
// with a reply carrying that receive time and the user-space time just before the send
// (sendmmsg), from the address the probe was sent to (IP_PKTINFO). The kernel then reports the
// reply's true send time on the error queue; it goes back to the prober in a follow-up, so the
// prober can take the responder's whole processing time out of the RTT. Replies and follow-ups
// are matched to their send timestamps by the socket's OPT_ID counter. The send times of one
// wake-up's replies to one prober travel together in one follow-ups message (wire.hpp, type 4):
// a datagram per prober per wake-up, not one per probe. To probers that ask, a busy pair's send
// times wait for the pair's next reply and ride in it (held_followups.hpp), so that a mesh, where
// each pair is its own flow, does not pay a third datagram per probe.
// TCP: accept every connection (connect probes close it at once); on kept-open ones echo each
// 48-byte probe frame as a reply, in the same two steps as UDP for probers that read follow-ups
// (wire::stream_followups_ok): the reply carries the probe's kernel receive time and the
// user-space send time, and a follow-up frame with the reply's kernel send time comes later on
// the same connection (stream_followups.hpp explains why it waits).
// Garbage is counted and dropped; nothing a peer sends can make the loop block or allocate
// per packet.
#include "probe/ip/responder.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "net/address.hpp"
#include "net/epoll.hpp"
#include "net/frame_reader.hpp"
#include "net/recv_batch.hpp"
#include "net/socket.hpp"
#include "net/stream_timestamps.hpp"
#include "net/timestamping.hpp"
#include "probe/ip/held_followups.hpp"
#include "probe/ip/stream_followups.hpp"
#include "probe/ip/wake_coalescer.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

namespace {

constexpr int kBatch = 64;
// epoll events taken per wake-up. A wake-up every 5 ms with 64 events capped TCP connect probes
// at ~12,800 connection events a second (an accept and a close each): closed connections piled up
// (issue 17). 1,024 a wake-up is ~200,000 a second.
constexpr int kEvents = 1024;
constexpr size_t kRecvBytes = 128;
constexpr size_t kTxRing = 8192;  // replies whose send timestamps may still come back
constexpr int kBacklog = 512;     // probes found waiting in one read that mean "behind"

enum Kind : uint64_t { kWake = 1, kUdp = 2, kListen = 3, kConn = 4 };
uint64_t tag(Kind k, uint64_t v) { return net::event_tag(static_cast<uint8_t>(k), v); }

void inc(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// The control message that makes a reply leave from the address the probe came to.
struct SourceInfo {
  int level = 0;  // 0 = none
  union {
    in_pktinfo v4;
    in6_pktinfo v6;
  };
  SourceInfo() : v6{} {}
};

bool read_source(const msghdr& h, SourceInfo& out) {
  out.level = 0;
  for (auto* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in_pktinfo))) {
      in_pktinfo pi;
      std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
      out.level = IPPROTO_IP;
      out.v4 = {};
      out.v4.ipi_spec_dst = pi.ipi_addr;  // send from the address the probe was sent to
      return true;
    }
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
        c->cmsg_len >= CMSG_LEN(sizeof(in6_pktinfo))) {
      std::memcpy(&out.v6, CMSG_DATA(c), sizeof out.v6);
      out.level = IPPROTO_IPV6;
      if (IN6_IS_ADDR_V4MAPPED(&out.v6.ipi6_addr)) out.v6.ipi6_ifindex = 0;
      return true;
    }
  }
  return false;
}

size_t write_source(const SourceInfo& s, char* buf, size_t cap) {
  if (s.level == 0) return 0;
  const size_t len = s.level == IPPROTO_IP ? sizeof(in_pktinfo) : sizeof(in6_pktinfo);
  if (CMSG_SPACE(len) > cap) return 0;
  std::memset(buf, 0, CMSG_SPACE(len));
  auto* c = reinterpret_cast<cmsghdr*>(buf);
  c->cmsg_level = s.level;
  c->cmsg_type = s.level == IPPROTO_IP ? IP_PKTINFO : IPV6_PKTINFO;
  c->cmsg_len = CMSG_LEN(len);
  std::memcpy(CMSG_DATA(c),
              s.level == IPPROTO_IP ? static_cast<const void*>(&s.v4) : static_cast<const void*>(&s.v6), len);
  return CMSG_SPACE(len);
}

bool same_source(const SourceInfo& a, const SourceInfo& b) {
  if (a.level != b.level) return false;
  if (a.level == IPPROTO_IP) return a.v4.ipi_spec_dst.s_addr == b.v4.ipi_spec_dst.s_addr;
  if (a.level == IPPROTO_IPV6)
    return std::memcmp(&a.v6.ipi6_addr, &b.v6.ipi6_addr, sizeof a.v6.ipi6_addr) == 0 &&
           a.v6.ipi6_ifindex == b.v6.ipi6_ifindex;
  return true;
}

// A prober's UDP address in the 28 bytes of a sockaddr_in6 (an IPv4 one fits too) rather than the
// 128 of a sockaddr_storage: the TX ring holds kTxRing of them, and at 232 bytes an entry the ring
// was 1.9 MB of the responder's memory; 128 bytes an entry is 1 MB (issue 17, RSS).
struct PeerAddress {
  sockaddr_in6 sa{};
  socklen_t length = 0;

  static PeerAddress from(const sockaddr* a, socklen_t len) {
    PeerAddress p;
    p.length = std::min<socklen_t>(len, sizeof p.sa);
    std::memcpy(&p.sa, a, p.length);
    return p;
  }
  sockaddr* name() { return reinterpret_cast<sockaddr*>(&sa); }
  // The whole of `sa`: from() leaves the bytes past `length` zero and nothing else writes them, so
  // this is the first `length` bytes' comparison, with a constant size the compiler inlines (a
  // memcmp call of variable length cost ~40 instructions a reply, issue 17).
  bool operator==(const PeerAddress& o) const {
    return length == o.length && std::memcmp(&sa, &o.sa, sizeof sa) == 0;
  }
};

// 128 bytes (see PeerAddress): kTxRing of them are the bulk of the responder's own memory.
struct TxEntry {
  uint32_t id = 0;
  // One-bit flags: five bools would push the entry past 128 bytes.
  bool reply : 1 = false;      // false: a follow-up (its own send time is of no use)
  bool followups : 1 = false;  // the follow-ups message staged at the same index (not a Packet)
  bool carries : 1 = false;    // a reply carrying the follow-ups message staged at the same index
  bool stamped : 1 = true;     // a reply whose kernel send time is wanted (for its follow-up)
  bool valid : 1 = false;
  wire::Packet packet;
  net::KernelTime rx;
  PeerAddress to;
  SourceInfo source;
};
static_assert(sizeof(TxEntry) <= 128, "the TX ring's entries grew: RSS");

// A follow-ups message being filled during one wake-up for one prober (session and address).
struct OpenFollowups {
  wire::Followups msg;
  PeerAddress to;
  SourceInfo source;
};
constexpr int kOpenFollowups = 8;  // probers served at once; more flushes the open ones early

// One flow for carried follow-ups (held_followups.hpp): a prober's session, its address, and the
// address it probed (a reply leaves from there, so only a reply from there may carry them).
struct PairKey {
  uint64_t session = 0;
  PeerAddress to;
  SourceInfo source;
  bool operator==(const PairKey& o) const {
    return session == o.session && to == o.to && same_source(source, o.source);
  }
};
constexpr size_t kHeldPairs = 1024;  // ~400 KB when all are in use

// Hashes the flow 8 bytes at a time (issue 17: the per-byte FNV it replaces was ~40 multiplies
// per reply and per follow-up on the responder's hot path). Only bytes that operator== compares
// go in (the address's first `length` bytes, the source address), so equal keys hash alike.
uint64_t pair_hash(uint64_t session, const PeerAddress& to, const SourceInfo& source) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = session * kMul;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {  // fixed-size copies compile to loads, not calls to memcpy
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = (h ^ w) * kMul;
    }
    if (i == n) return;
    uint64_t w = 0;  // the tail: 4 bytes (an IPv4 address, sockaddr_in6's scope id) and any rest
    if (i + 4 <= n) {
      uint32_t half;
      std::memcpy(&half, b + i, 4);
      w = half;
      i += 4;
    }
    for (int shift = 32; i < n; ++i, shift += 8) w |= uint64_t{b[i]} << shift;
    h = (h ^ w) * kMul;
  };
  mix(&to.sa, std::min<size_t>(to.length, sizeof to.sa));
  if (source.level == IPPROTO_IP) mix(&source.v4.ipi_spec_dst, sizeof source.v4.ipi_spec_dst);
  if (source.level == IPPROTO_IPV6) mix(&source.v6.ipi6_addr, sizeof source.v6.ipi6_addr);
  // The table indexes by the low bits, which a multiply fills only from the words' low bytes (the
  // address family): fold the high half down (splitmix64's finaliser).
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

struct Conn {
  net::Fd fd;
  uint8_t buf[wire::kSize * 32];
  size_t len = 0;
  bool kept_open = false;      // a probe frame came: set up for echoing (see stream_setup)
  bool tx_stamps = false;      // transmit stamps (OPT_ID by byte) are on
  bool listed = false;         // in Impl::echo_conns (has echoes waiting for their follow-ups)
  int64_t last_active_ns = 0;  // accepted, or last read (for the idle timeout)
  net::FrameTxKeys<wire::kSize> keys;
  StreamEchoes echoes;
};

// The responder's send times for one echo, as a follow-up carries them: the NIC's pair when both
// ends have one, else the kernel send time with the receive time the reply carried. False when
// the kernel gave no send time. Shared by UDP and kept-open TCP.
bool followup_times(const net::KernelTime& rx, int64_t reply_rx_ns, const net::KernelTime& tx, uint8_t& flags,
                    int64_t& rx_ns, int64_t& tx_ns) {
  if (rx.hardware_ns && tx.hardware_ns) {  // both NIC times: the NIC's own clock
    flags = wire::kRxHardware | wire::kTxHardware;
    rx_ns = rx.hardware_ns;
    tx_ns = tx.hardware_ns;
    return true;
  }
  if (!tx.software_ns) return false;
  flags = static_cast<uint8_t>(wire::kTxKernel | (rx.software_ns ? wire::kRxKernel : 0));
  rx_ns = reply_rx_ns;  // the receive time stays what the reply carried
  tx_ns = tx.software_ns;
  return true;
}

}  // namespace

struct Responder::Impl {
  ResponderConfig cfg;
  net::Epoll ep;
  net::EventFd wake;
  net::Fd udp, listener;
  uint16_t udp_port = 0, tcp_port = 0;
  uint32_t tx_counter = 0;
  std::vector<TxEntry> tx_ring;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::vector<int> echo_conns;  // connections with echoes waiting for follow-ups (reserved: no allocation)
  int64_t next_stream_followup = INT64_MAX;  // when stream_followups() has work
  bool stream_nostamp_ok = true;             // per-send "no transmit stamp" works on TCP here
  std::atomic<bool> stop_flag{false};
  std::atomic<uint64_t> answered{0}, malformed{0}, tcp_accepted{0}, tcp_refused{0}, tcp_reaped{0},
      followups{0}, carried{0}, shed{0}, unstamped{0}, wakeups{0}, streaming_wakeups{0};
  size_t conn_cap = 0;  // max_tcp_connections within half the descriptor limit (open())
  int64_t next_reap_ns = 0;
  int64_t refused_logged_ns = 0;

  net::RecvBatch<kBatch, kRecvBytes, net::kControlBytes> udp_in;
  net::RecvBatch<kBatch, 0, net::kErrQueueControlBytes> tx_stamps;

  mmsghdr smsg[kBatch];
  iovec siov[kBatch];
  uint8_t sdata[kBatch][wire::kMaxReplyFollowupsSize];
  alignas(cmsghdr) char sctrl[kBatch][128];
  TxEntry staged[kBatch];                    // datagrams queued for the next sendmmsg
  wire::Followups staged_followups[kBatch];  // where staged[i].followups
  OpenFollowups open_followups[kOpenFollowups];
  int n_open = 0;
  HeldFollowups<PairKey> held{kHeldPairs};  // send times held for the pair's next reply
  int64_t next_held_due = INT64_MAX;        // when release_held() has work
  bool followups_skip_ids = false;
  bool followups_on = true;  // and the socket has transmit timestamps
  bool backlog = false;      // the last read found at least kBacklog probes waiting
  bool udp_polled = false;   // the UDP socket is out of the epoll set (see poll_udp)
  int n_send = 0;

  // Queues a datagram for the next sendmmsg.
  TxEntry& queue(bool reply) {
    TxEntry& e = staged[n_send++];
    e.reply = reply;
    e.followups = false;
    e.carries = false;
    e.stamped = true;
    e.valid = false;
    return e;
  }

  // Stages open follow-ups message `i` for sending and closes it.
  void queue_followups(int i) {
    OpenFollowups& o = open_followups[i];
    if (n_send == kBatch) flush(false);
    const int at = n_send;
    TxEntry& e = queue(false);
    e.followups = true;
    e.to = o.to;
    e.source = o.source;
    staged_followups[at] = o.msg;
    if (i != n_open - 1) std::swap(open_followups[i], open_followups[n_open - 1]);
    --n_open;
  }

  // Adds one reply's responder times to the follow-ups message for its prober.
  void add_followup(const TxEntry& sent, uint8_t flags, int64_t rx_ns, int64_t tx_ns) {
    int i = 0;
    while (i < n_open &&
           !(open_followups[i].msg.session == sent.packet.session && open_followups[i].msg.flags == flags &&
             open_followups[i].to == sent.to && same_source(open_followups[i].source, sent.source)))
      ++i;
    if (i == n_open) {
      if (n_open == kOpenFollowups) queue_followups(0);
      i = n_open++;
      OpenFollowups& o = open_followups[i];
      o.msg.flags = flags;
      o.msg.count = 0;
      o.msg.session = sent.packet.session;
      o.to = sent.to;
      o.source = sent.source;
    }
    OpenFollowups& o = open_followups[i];
    o.msg.entries[o.msg.count++] = {sent.packet.seq, rx_ns, tx_ns};
    if (o.msg.count == wire::kMaxFollowups) queue_followups(i);
  }

  // Sends the queued datagrams. Replies get their user-space send time written just before.
  // Every reply takes the next OPT_ID number; follow-ups are sent without a transmit timestamp
  // (and take no number) where the kernel allows, else they take one and their time is ignored.
  void flush(bool stamp_replies) {
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

  // A reply staged at `at` to a prober that reads carried follow-ups: it takes along what its pair
  // holds, and the pair notes when it last had a reply (is it busy enough to hold for?).
  void carry_held(int at, int64_t now_mono) {
    TxEntry& e = staged[at];
    const PairKey key{e.packet.session, e.to, e.source};
    auto* pair = held.find_or_add(key, pair_hash(key.session, key.to, key.source));
    if (!pair) return;  // full: release_held() clears it at the end of this wake-up
    pair->prev_reply_mono = pair->last_reply_mono;
    pair->last_reply_mono = now_mono;
    if (pair->count == 0) return;
    held.take(*pair, staged_followups[at]);
    staged_followups[at].session = key.session;
    e.carries = true;
  }

  // Stages what `pair` holds as a follow-ups message of its own.
  void queue_held(HeldFollowups<PairKey>::Pair& pair) {
    if (n_send == kBatch) flush(false);
    const int at = n_send;
    TxEntry& e = queue(false);
    e.followups = true;
    e.to = pair.key.to;
    e.source = pair.key.source;
    held.take(pair, staged_followups[at]);
    staged_followups[at].session = pair.key.session;
  }

  // Holds one reply's send times for the pair's next reply to carry. False (send it now, as
  // before) when the pair is not busy: its last two replies were further apart than the hold.
  // `now` is the error-queue drain's monotonic time, read at its first hold (0 until then): one
  // clock read per drain rather than per follow-up; a drain takes microseconds against the hold.
  bool hold_followup(const TxEntry& sent, uint8_t flags, int64_t rx_ns, int64_t tx_ns, int64_t& now) {
    if (!wire::replies_carry_followups_ok(sent.packet.session)) return false;
    const PairKey key{sent.packet.session, sent.to, sent.source};
    auto* pair = held.find(key, pair_hash(key.session, key.to, key.source));
    if (!pair || pair->prev_reply_mono == 0 ||
        pair->last_reply_mono - pair->prev_reply_mono > cfg.carry_hold.count())
      return false;
    if (pair->count > 0 && pair->flags != flags) queue_held(*pair);  // one set of sources a message
    if (now == 0) now = mono_ns();
    held.hold(*pair, {sent.packet.seq, rx_ns, tx_ns}, flags, now);
    next_held_due = std::min(next_held_due, now + cfg.carry_hold.count());
    if (pair->count == HeldFollowups<PairKey>::kMaxEntries) queue_held(*pair);
    return true;
  }

  // Sends on their own the held send times no reply took within the hold (and, to batch them,
  // those due within one wake-up period); clears the table when it is full.
  void release_held(int64_t now) {
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

  void udp_readable() {
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

  // Turns the replies' kernel send times into follow-ups: one message per prober, sent when
  // 40 are in or the error queue is empty.
  void drain_errqueue() {
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

  void close_conn(int fd) {
    ep.remove(fd);
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    if (it->second->listed) echo_conns.erase(std::find(echo_conns.begin(), echo_conns.end(), fd));
    conns.erase(it);  // closes it
  }

  // Closes connections idle since before `idle_before` (all of them when `max` is 0, else at
  // most `max`, the longest idle first). Returns how many.
  size_t reap_idle(int64_t idle_before, size_t max) {
    size_t closed = 0;
    if (max == 0) {
      for (auto it = conns.begin(); it != conns.end();) {
        const int fd = it->first;
        const bool idle = it->second->last_active_ns < idle_before && !it->second->listed;
        ++it;  // close_conn erases fd's entry
        if (idle) {
          close_conn(fd);
          ++closed;
        }
      }
    } else {
      for (; closed < max; ++closed) {
        int oldest = -1;
        int64_t oldest_ns = idle_before;
        for (const auto& [fd, c] : conns)
          if (c->last_active_ns < oldest_ns && !c->listed) {
            oldest = fd;
            oldest_ns = c->last_active_ns;
          }
        if (oldest < 0) break;
        close_conn(oldest);
      }
    }
    inc(tcp_reaped, closed);
    return closed;
  }

  void accept_all() {
    bool replaced_tried = false;
    for (int i = 0; i < 256; ++i) {
      int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors (the cap leaves room, but other parts of the process use them too):
        // the connection stays in the backlog; nothing to do until one closes.
        return;
      }
      inc(tcp_accepted);
      const int64_t now = mono_ns();
      if (conns.size() >= conn_cap) {
        // One scan per accept burst: a flood of connections cannot make each accept cost O(n).
        if (!replaced_tried) {
          replaced_tried = true;
          reap_idle(now - 5'000'000'000, 16);
        }
        if (conns.size() >= conn_cap) {
          ::close(fd);
          inc(tcp_refused);
          if (now - refused_logged_ns > 60'000'000'000) {
            refused_logged_ns = now;
            log().warn(
                "responder: {} TCP connections open (the cap) and none idle for 5 s: refusing new ones",
                conns.size());
          }
          continue;
        }
      }
      auto c = std::make_unique<Conn>();
      c->fd.reset(fd);
      c->last_active_ns = now;
      // Receive stamps before any data can come; the rest only once it is a kept-open connection
      // (connect probes are reset at once and cost no more system calls than that).
      (void)net::enable_timestamping(fd, false);
      if (!ep.add(fd, EPOLLIN | EPOLLRDHUP, tag(kConn, static_cast<uint64_t>(fd)))) continue;
      conns.emplace(fd, std::move(c));
    }
  }

  // Writes one whole frame on a kept-open connection; a frame written in part (or not at all)
  // leaves the stream out of step, so the caller closes it. A frame whose send time nobody needs
  // (a follow-up, a final reply) asks for no transmit stamp: it would only cost an error-queue read
  // and a wake-up.
  bool send_frame(Conn& c, const wire::Packet& p, bool stamp) {
    uint8_t out[wire::kSize];
    wire::encode(p, std::span<uint8_t, wire::kSize>(out, wire::kSize));
    iovec iov{out, sizeof out};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char ctrl[64];
    if (!stamp && c.tx_stamps && stream_nostamp_ok) {
      mh.msg_control = ctrl;
      mh.msg_controllen = net::write_no_tx_timestamp(ctrl, sizeof ctrl);
    }
    // MSG_EOR: nothing written later joins this frame's packet (autocorking would merge a burst
    // of frames, and a packet carries one transmit stamp, the last request's).
    constexpr int kFlags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_EOR;
    ssize_t n = ::sendmsg(c.fd.get(), &mh, kFlags);
    if (n < 0 && errno == EINVAL && mh.msg_controllen != 0) {  // a kernel without per-send flags on TCP
      stream_nostamp_ok = false;
      mh.msg_control = nullptr;
      mh.msg_controllen = 0;
      n = ::sendmsg(c.fd.get(), &mh, kFlags);
    }
    if (n != static_cast<ssize_t>(sizeof out)) return false;
    c.keys.wrote_frame();  // every byte moves the OPT_ID counter, stamped or not
    return true;
  }

  void conn_event(int fd, uint32_t events) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (events & EPOLLIN) c.last_active_ns = mono_ns();
    size_t stamps = 0;
    if ((events & EPOLLERR) && c.tx_stamps) {
      stamps = read_stream_stamps(c);
      next_stream_followup = std::min(next_stream_followup, c.echoes.next_due());
    }
    // EPOLLERR with no stamp waiting is a real error: reading reports it and closes.
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) || ((events & EPOLLERR) && stamps == 0))
      conn_readable(c);
  }

  size_t read_stream_stamps(Conn& c) {
    return net::read_tx_timestamps(c.fd.get(),
                                   [&](const net::TxTimestamp& ts) { c.echoes.stamped(ts.id, ts.time); });
  }

  // The first probe frame on a connection: it is a kept-open one.
  void stream_setup(Conn& c) {
    c.kept_open = true;
    // Each frame its own packet: Nagle would hold a follow-up until the reply is acknowledged
    // (the prober's delayed ACK: tens of ms) and merge frames, which share one transmit stamp.
    int one = 1;
    setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Nothing has been written yet: the OPT_ID byte counter starts at the first reply.
    c.tx_stamps = cfg.followups && net::enable_stream_timestamping(c.fd.get()).has_value();
  }

  void conn_readable(Conn& c) {
    const int fd = c.fd.get();
    bool echoed = false;
    const bool open = net::read_frames<wire::kSize>(
        fd, c.buf, sizeof c.buf, c.len,
        [&](std::span<const uint8_t, wire::kSize> frame, const net::KernelTime& rx) {
          wire::Packet p;
          if (wire::decode(frame, p) != wire::ParseError::ok || p.type != wire::Type::probe) {
            inc(malformed);  // a stream out of step cannot be trusted any more
            return false;
          }
          if (!c.kept_open) stream_setup(c);
          // Two-step only for a prober that reads follow-up frames, and while there is room to
          // remember the echo (bounded); otherwise the reply is final, with its user send time.
          const bool two_step = c.tx_stamps && wire::stream_followups_ok(p.session) && !c.echoes.full();
          p.type = wire::Type::reply;
          p.flags = static_cast<uint8_t>((rx.software_ns ? wire::kRxKernel : 0) |
                                         (two_step ? wire::kFollowupComing : 0));
          p.responder_rx_ns = rx.software_ns ? rx.software_ns : realtime_ns();
          // Waiting follow-ups go before this reply, never right after it (stream_followups.hpp).
          if (!c.echoes.empty() && !send_followups(c, mono_ns(), true)) return false;
          const uint32_t key = c.keys.next_key();
          p.responder_tx_ns = realtime_ns();
          if (!send_frame(c, p, two_step)) return false;
          inc(answered);
          if (two_step) {
            StreamEcho e;
            e.key = key;
            e.session = p.session;
            e.seq = p.seq;
            e.prober_tx_ns = p.prober_tx_ns;
            e.rx = rx;
            e.reply_rx_ns = p.responder_rx_ns;
            e.sent_mono = mono_ns();
            c.echoes.push(e);
            echoed = true;
          }
          return true;
        });
    if (!open) {
      close_conn(fd);
      return;
    }
    if (echoed) {
      // The kernel usually has the replies' send stamps already (a driver stamps as it takes the
      // packet): reading them now times the follow-ups from the replies, not from a later wake-up.
      read_stream_stamps(c);
      if (!c.listed) {
        c.listed = true;
        echo_conns.push_back(fd);
      }
    }
    if (c.listed) next_stream_followup = std::min(next_stream_followup, c.echoes.next_due());
  }

  // Sends the follow-ups due on one connection (see StreamEchoes::due); false when the connection
  // failed (the caller closes it).
  bool send_followups(Conn& c, int64_t now, bool before_reply) {
    if (c.echoes.waiting_for_stamp()) read_stream_stamps(c);
    while (const StreamEcho* e = c.echoes.due(now, before_reply)) {
      wire::Packet f;
      f.type = wire::Type::followup;
      f.session = e->session;
      f.seq = e->seq;
      f.prober_tx_ns = e->prober_tx_ns;
      const bool have =
          followup_times(e->rx, e->reply_rx_ns, e->tx, f.flags, f.responder_rx_ns, f.responder_tx_ns);
      c.echoes.pop();
      if (!have) {  // no send stamp came: nothing to tell
        inc(unstamped);
        continue;
      }
      if (!send_frame(c, f, false)) return false;
      inc(followups);
    }
    return true;
  }

  // Sends the follow-ups that are due on every connection with echoes waiting, and drops echoes
  // whose stamp never came (the prober has given up on them by then).
  void stream_followups(int64_t now) {
    if (now < next_stream_followup) return;
    next_stream_followup = INT64_MAX;
    for (size_t i = 0; i < echo_conns.size();) {
      const int fd = echo_conns[i];
      Conn& c = *conns.find(fd)->second;
      if (!send_followups(c, now, false)) {
        close_conn(fd);  // takes it off echo_conns: look at index i again
        continue;
      }
      if (c.echoes.empty()) {
        c.listed = false;
        echo_conns[i] = echo_conns.back();
        echo_conns.pop_back();
        continue;
      }
      next_stream_followup = std::min(next_stream_followup, c.echoes.next_due());
      ++i;
    }
  }

  // While a stream flows, the UDP socket leaves the epoll set and is read on every wake-up instead
  // (each datagram and transmit stamp on a socket in an epoll set costs a callback; the loop
  // wakes on its own timer anyway). Back in the set when the load is light.
  void poll_udp(bool on) {
    if (on == udp_polled || !udp.valid()) return;
    udp_polled = on;
    if (on)
      ep.remove(udp.get());
    else
      (void)ep.add(udp.get(), EPOLLIN, tag(kUdp, 0));
  }

  Status loop() {
    std::vector<epoll_event> event_buf(kEvents);  // once per run(): 12 KB is too much for the stack
    epoll_event* events = event_buf.data();
    CoalescingWait waiter(cfg.coalesce.count(), cfg.max_coalesce.count());
    while (!stop_flag.load(std::memory_order_relaxed)) {
      // stop() is noticed within 100 ms; a polled UDP socket is read at the end of each period.
      const int64_t deadline = std::min({mono_ns() + 100'000'000, next_stream_followup, next_held_due});
      auto n = waiter.wait(ep, events, kEvents,
                           udp_polled ? std::min(deadline, waiter.next_wake_ns()) : deadline, udp_polled);
      if (!n) return std::unexpected(n.error());
      for (int i = 0; i < *n; ++i) {
        const uint64_t d = events[i].data.u64;
        const auto kind = static_cast<Kind>(net::event_kind(d));
        const uint64_t v = net::event_value(d);
        switch (kind) {
          case kWake:
            wake.drain();
            break;
          case kUdp:
            if (events[i].events & EPOLLIN)
              udp_readable();
            else
              drain_errqueue();
            break;
          case kListen:
            accept_all();
            break;
          case kConn:
            conn_event(static_cast<int>(v), events[i].events);
            break;
        }
      }
      const int64_t now = mono_ns();
      stream_followups(now);
      if (now >= next_reap_ns && !conns.empty()) {
        next_reap_ns = now + 1'000'000'000;
        reap_idle(now - cfg.tcp_idle_timeout.count(), 0);
      }
      inc(wakeups);
      if (udp_polled) {
        inc(streaming_wakeups);
        udp_readable();  // drains the error queue too
      }
      if (now >= next_held_due || held.full()) release_held(mono_ns());
      waiter.handled(2 * answered.load(std::memory_order_relaxed));  // each answer: a datagram in, one out
      poll_udp(waiter.streaming());
    }
    return {};
  }

  Status open(const ResponderConfig& c) {
    cfg = c;
    tx_ring.resize(kTxRing);
    // Half the descriptors at most, the rest for this host's own probes and everything else.
    conn_cap = std::max<size_t>(1, std::min<size_t>(c.max_tcp_connections, net::raise_fd_limit() / 2));
    echo_conns.reserve(conn_cap);
    followups_skip_ids = net::untimestamped_sends_skip_ids();
    followups_on = c.followups;
    log().debug("responder: follow-ups are sent {} a transmit timestamp of their own",
                followups_skip_ids ? "without" : "with");
    auto ep_r = net::Epoll::create();
    if (!ep_r) return std::unexpected(ep_r.error());
    ep = std::move(*ep_r);
    auto w = net::EventFd::create();
    if (!w) return std::unexpected(w.error());
    wake = std::move(*w);
    if (auto st = ep.add(wake.fd(), EPOLLIN, tag(kWake, 0)); !st) return st;
    if (c.serve_udp) {
      auto addr = net::SocketAddress::parse_ip(c.listen_address, c.udp_port);
      if (!addr) return fail("responder: listen address: {}", addr.error().message);
      auto fd = net::udp_socket(*addr);
      if (!fd) return fail("responder: {}", fd.error().message);
      // On a wildcard address, replies must leave from the address each probe was sent to.
      if (addr->is_unspecified()) {
        if (auto st = net::enable_pktinfo(fd->get(), addr->family()); !st)
          return fail("responder: {}: {}", addr->to_string(), st.error().message);
      }
      if (auto st = net::enable_timestamping(fd->get(), c.followups); !st) {
        log().warn("responder: kernel timestamps unavailable ({}), using the user-space clock",
                   st.error().message);
        followups_on = false;
      }
      udp = std::move(*fd);
      auto local = net::local_address(udp.get());
      udp_port = local ? local->port() : c.udp_port;
      if (auto st = ep.add(udp.get(), EPOLLIN, tag(kUdp, 0)); !st) return st;
    }
    if (c.serve_tcp) {
      auto addr = net::SocketAddress::parse_ip(c.listen_address, c.tcp_port);
      if (!addr) return fail("responder: listen address: {}", addr.error().message);
      auto fd = net::tcp_listener(*addr, 4096);
      if (!fd) return fail("responder: {}", fd.error().message);
      if (c.defer_accept) {
        // Seconds before an accepted-but-silent connection is handed over anyway (responder.hpp).
        int secs = 5;
        if (setsockopt(fd->get(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs) != 0)
          log().warn("responder: TCP_DEFER_ACCEPT: {}: every connect probe will be accepted",
                     std::strerror(errno));
      }
      listener = std::move(*fd);
      auto local = net::local_address(listener.get());
      tcp_port = local ? local->port() : c.tcp_port;
      if (auto st = ep.add(listener.get(), EPOLLIN, tag(kListen, 0)); !st) return st;
    }
    if (!c.serve_udp && !c.serve_tcp) return fail("responder: nothing to serve (neither UDP nor TCP)");
    net::raise_fd_limit();
    return {};
  }
};

Responder::Responder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Responder::~Responder() = default;

Result<std::unique_ptr<Responder>> Responder::create(const ResponderConfig& config) {
  auto impl = std::make_unique<Impl>();
  if (auto st = impl->open(config); !st) return std::unexpected(st.error());
  return std::unique_ptr<Responder>(new Responder(std::move(impl)));
}

Status Responder::run() { return impl_->loop(); }

void Responder::stop() {
  impl_->stop_flag.store(true);
  impl_->wake.signal();
}

ResponderCounters Responder::counters() const {
  auto l = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  ResponderCounters out;
  out.answered = l(impl_->answered);
  out.malformed = l(impl_->malformed);
  out.tcp_accepted = l(impl_->tcp_accepted);
  out.tcp_refused = l(impl_->tcp_refused);
  out.tcp_reaped = l(impl_->tcp_reaped);
  out.followups = l(impl_->followups);
  out.carried = l(impl_->carried);
  out.shed = l(impl_->shed);
  out.unstamped = l(impl_->unstamped);
  out.wakeups = l(impl_->wakeups);
  out.streaming_wakeups = l(impl_->streaming_wakeups);
  return out;
}

uint16_t Responder::udp_port() const { return impl_->udp_port; }
uint16_t Responder::tcp_port() const { return impl_->tcp_port; }

}  // namespace weft::probe
