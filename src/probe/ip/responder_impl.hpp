#pragma once
// The IP responder's state (Responder::Impl), shared by the files that implement it: set-up
// (responder_setup.cpp), the event loop (responder_loop.cpp), the UDP datapath with its
// follow-ups (responder_udp.cpp) and the TCP connections (responder_tcp.cpp). The helpers every
// UDP probe and follow-up passes through (staging a datagram, the follow-ups being filled, the
// pair table) are defined here, in the class, so that the datapath's file inlines them, as the
// prober's prober_impl.hpp does (bench/probe-callgrind.sh with RESPONDER=1 is the gate).
// Private to src/probe/ip: the public interface is probe/ip/responder.hpp.
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
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "net/epoll.hpp"
#include "net/recv_batch.hpp"
#include "net/socket.hpp"
#include "net/stream_timestamps.hpp"
#include "net/timestamping.hpp"
#include "probe/ip/held_followups.hpp"
#include "probe/ip/responder.hpp"
#include "probe/ip/stream_followups.hpp"
#include "probe/wire.hpp"

namespace weft::probe {

struct Responder::Impl {
  static constexpr int kBatch = 64;
  // epoll events taken per wake-up. A wake-up every 5 ms with 64 events capped TCP connect probes
  // at ~12,800 connection events a second (an accept and a close each): closed connections piled up
  // (issue 17). 1,024 a wake-up is ~200,000 a second.
  static constexpr int kEvents = 1024;
  static constexpr size_t kRecvBytes = 128;
  static constexpr size_t kTxRing = 8192;  // replies whose send timestamps may still come back
  static constexpr int kBacklog = 512;     // probes found waiting in one read that mean "behind"

  enum Kind : uint64_t { kWake = 1, kUdp = 2, kListen = 3, kConn = 4 };
  static uint64_t tag(Kind k, uint64_t v) { return net::event_tag(static_cast<uint8_t>(k), v); }

  static void inc(std::atomic<uint64_t>& c, uint64_t n = 1) {
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

  static bool read_source(const msghdr& h, SourceInfo& out) {
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

  static size_t write_source(const SourceInfo& s, char* buf, size_t cap) {
    if (s.level == 0) return 0;
    const size_t len = s.level == IPPROTO_IP ? sizeof(in_pktinfo) : sizeof(in6_pktinfo);
    if (CMSG_SPACE(len) > cap) return 0;
    std::memset(buf, 0, CMSG_SPACE(len));
    auto* c = reinterpret_cast<cmsghdr*>(buf);
    c->cmsg_level = s.level;
    c->cmsg_type = s.level == IPPROTO_IP ? IP_PKTINFO : IPV6_PKTINFO;
    c->cmsg_len = CMSG_LEN(len);
    std::memcpy(CMSG_DATA(c),
                s.level == IPPROTO_IP ? static_cast<const void*>(&s.v4) : static_cast<const void*>(&s.v6),
                len);
    return CMSG_SPACE(len);
  }

  static bool same_source(const SourceInfo& a, const SourceInfo& b) {
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
  static constexpr int kOpenFollowups = 8;  // probers served at once; more flushes the open ones early

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
  static constexpr size_t kHeldPairs = 1024;  // ~400 KB when all are in use

  // Hashes the flow 8 bytes at a time (issue 17: the per-byte FNV it replaces was ~40 multiplies
  // per reply and per follow-up on the responder's hot path). Only bytes that operator== compares
  // go in (the address's first `length` bytes, the source address), so equal keys hash alike.
  static uint64_t pair_hash(uint64_t session, const PeerAddress& to, const SourceInfo& source) {
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
    Fd fd;
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
  static bool followup_times(const net::KernelTime& rx, int64_t reply_rx_ns, const net::KernelTime& tx,
                             uint8_t& flags, int64_t& rx_ns, int64_t& tx_ns) {
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

  ResponderConfig cfg;
  net::Epoll ep;
  EventFd wake;
  Fd udp, listener;
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

  // The UDP datapath and its follow-ups (responder_udp.cpp).

  // Sends the queued datagrams. Replies get their user-space send time written just before.
  // Every reply takes the next OPT_ID number; follow-ups are sent without a transmit timestamp
  // (and take no number) where the kernel allows, else they take one and their time is ignored.
  void flush(bool stamp_replies);

  // Sends on their own the held send times no reply took within the hold (and, to batch them,
  // those due within one wake-up period); clears the table when it is full.
  void release_held(int64_t now);

  void udp_readable();

  // Turns the replies' kernel send times into follow-ups: one message per prober, sent when
  // 40 are in or the error queue is empty.
  void drain_errqueue();

  // TCP: connect probes and kept-open connections (responder_tcp.cpp).

  void close_conn(int fd);

  // Closes connections idle since before `idle_before` (all of them when `max` is 0, else at
  // most `max`, the longest idle first). Returns how many.
  size_t reap_idle(int64_t idle_before, size_t max);

  void accept_all();

  // Writes one whole frame on a kept-open connection; a frame written in part (or not at all)
  // leaves the stream out of step, so the caller closes it. A frame whose send time nobody needs
  // (a follow-up, a final reply) asks for no transmit stamp: it would only cost an error-queue read
  // and a wake-up.
  bool send_frame(Conn& c, const wire::Packet& p, bool stamp);

  void conn_event(int fd, uint32_t events);

  size_t read_stream_stamps(Conn& c);

  // The first probe frame on a connection: it is a kept-open one.
  void stream_setup(Conn& c);

  void conn_readable(Conn& c);

  // Sends the follow-ups due on one connection (see StreamEchoes::due); false when the connection
  // failed (the caller closes it).
  bool send_followups(Conn& c, int64_t now, bool before_reply);

  // Sends the follow-ups that are due on every connection with echoes waiting, and drops echoes
  // whose stamp never came (the prober has given up on them by then).
  void stream_followups(int64_t now);

  // The event loop (responder_loop.cpp).

  // While a stream flows, the UDP socket leaves the epoll set and is read on every wake-up instead
  // (each datagram and transmit stamp on a socket in an epoll set costs a callback; the loop
  // wakes on its own timer anyway). Back in the set when the load is light.
  void poll_udp(bool on);

  Status loop();

  // Set-up (responder_setup.cpp): binds the sockets; errors name the address and port.
  Status open(const ResponderConfig& c);
};

}  // namespace weft::probe
