#include "tcp_script.hpp"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "stack/clock.hpp"
#include "stack/tcp/connection.hpp"
#include "stack/wire/frame.hpp"

namespace weft::stack::test {

namespace {
using wire::TcpHeader;
using namespace wire::tcpflag;

uint8_t pattern(uint32_t offset, bool from_peer) {
  return static_cast<uint8_t>(offset * (from_peer ? 7 : 13) + (from_peer ? 3 : 5));
}

struct Sent {
  int64_t t_ns;
  TcpHeader h;
  std::vector<uint8_t> payload;
};

// The device side: every segment the connection sends is built into a frame and parsed back.
class Capture : public tcp::SegmentSink {
 public:
  explicit Capture(const Clock& c) : clock_(c) {}
  void send_segment(const tcp::FourTuple& t, const TcpHeader& h, wire::Bytes p1, wire::Bytes p2) override {
    std::vector<uint8_t> payload(p1.begin(), p1.end());
    payload.insert(payload.end(), p2.begin(), p2.end());
    wire::L2L3 l;
    l.src_mac = {{2, 0, 0, 0, 0, 1}};
    l.dst_mac = {{2, 0, 0, 0, 0, 2}};
    l.ip.src = t.local_ip;
    l.ip.dst = t.remote_ip;
    std::vector<uint8_t> frame(70000);
    const size_t n = wire::build_tcp_frame(frame, l, h, payload);
    wire::ParsedFrame f;
    if (n == 0 || wire::parse_frame(wire::Bytes(frame.data(), n), f) != wire::ParseError::ok ||
        f.kind != wire::FrameKind::tcp) {
      broken = true;
      return;
    }
    sent.push_back(
        {clock_.now_ns(), f.tcp.h, std::vector<uint8_t>(f.tcp.payload.begin(), f.tcp.payload.end())});
  }
  std::deque<Sent> sent;
  bool broken = false;

 private:
  const Clock& clock_;
};

struct Spec {
  uint8_t flags = 0;
  uint32_t start = 0, end = 0, len = 0;
  std::optional<uint32_t> ack;
  std::optional<uint16_t> win;
  uint16_t urg = 0;
  std::optional<uint8_t> fill;  // `fill B`: an injected payload of bytes B instead of the pattern
  std::optional<wire::TcpOptions> opts;
  bool ts_val_any = false;
};

std::string flags_str(uint8_t f) {
  std::string s;
  if (f & syn) s += 'S';
  if (f & fin) s += 'F';
  if (f & rst) s += 'R';
  if (f & psh) s += 'P';
  if (f & urg) s += 'U';
  if (f & ack) s += '.';
  return s.empty() ? "none" : s;
}

class Runner {
 public:
  std::string run(const std::string& script) {
    std::istringstream in(script);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      std::istringstream ls(line);
      std::string time;
      if (!(ls >> time)) continue;
      std::string err = step(time, ls);
      if (err.empty() && cap_.broken) err = "the stack sent a segment the wire layer cannot build or parse";
      if (!err.empty()) return fmt::format("line {}: `{}`: {}", lineno, line, err);
    }
    if (!cap_.sent.empty()) return "at the end: unexpected " + describe(cap_.sent.front());
    return "";
  }

 private:
  std::string describe(const Sent& s) {
    const uint32_t seq = s.h.seq - iss_;
    return fmt::format("{:.3f} > {} {}:{}({}) ack {} win {}{}", s.t_ns / 1e9, flags_str(s.h.flags), seq,
                       seq + s.payload.size(), s.payload.size(), (s.h.flags & ack) ? s.h.ack - peer_iss_ : 0,
                       s.h.window,
                       s.h.options.has_timestamps ? fmt::format(" TS ecr {}", s.h.options.ts_ecr) : "");
  }

  void run_until(int64_t t) {
    for (int guard = 0; conn_ && guard < 100000 && conn_->next_deadline() <= t; ++guard) {
      clock_.set(std::max(clock_.now_ns(), conn_->next_deadline()));
      conn_->poll();
    }
    clock_.set(std::max(clock_.now_ns(), t));
  }

  std::string step(const std::string& time, std::istringstream& ls) {
    double secs = 0;
    try {
      secs = std::stod(time[0] == '+' ? time.substr(1) : time);
    } catch (...) {
      return "bad time";
    }
    const int64_t t = (time[0] == '+' ? last_t_ : 0) + static_cast<int64_t>(std::llround(secs * 1e9));
    last_t_ = t;
    std::string ev;
    ls >> ev;
    if (ev != ">" && ev != "config") {
      run_until(t);
      if (!cap_.sent.empty()) return "unexpected " + describe(cap_.sent.front());
    }
    if (ev == "<") return inject(ls);
    if (ev == ">") {
      run_until(t);
      return expect(ls, t);
    }
    if (ev == "config") return config(ls);
    if (ev == "connect") {
      make_conn();
      conn_->connect();
      return "";
    }
    if (!conn_) return "no connection yet";
    long n = 0;
    std::string word;
    if (ev == "send") {
      ls >> n;
      std::vector<uint8_t> b(static_cast<size_t>(n));
      for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(static_cast<uint32_t>(app_sent_ + i), false);
      const size_t took = conn_->send(b);
      app_sent_ += took;
      return took == b.size() ? "" : fmt::format("send took {} of {}", took, n);
    }
    if (ev == "recv") {
      // recv N [without K] [more]: N bytes, the stream's byte at offset K left out (an urgent
      // byte); `more`: more may be readable (otherwise exactly N are).
      ls >> n;
      long skip = -1;
      bool more = false;
      while (ls >> word) {
        if (word == "more")
          more = true;
        else if (word != "without" || !(ls >> skip))
          return "want recv N [without OFFSET] [more]";
      }
      std::vector<uint8_t> b(static_cast<size_t>(n) + (more ? 0 : 1));
      const size_t got = conn_->recv(b);
      if (got != static_cast<size_t>(n)) return fmt::format("recv got {} bytes, expected {}", got, n);
      for (size_t i = 0; i < got; ++i) {
        if (static_cast<long>(app_read_) == skip) ++app_read_;
        if (b[i] != pattern(static_cast<uint32_t>(app_read_), true))
          return fmt::format("recv: byte {} of the stream is wrong", app_read_);
        ++app_read_;
      }
      return "";
    }
    if (ev == "oob") {  // oob V: the last urgent byte is the stream's byte at offset V
      ls >> n;
      const auto b = conn_->oob_byte();
      if (!b) return "no urgent byte";
      return *b == pattern(static_cast<uint32_t>(n), true) ? "" : "the urgent byte is another";
    }
    if (ev == "icmp") return icmp(ls);
    if (ev == "mss") {
      ls >> n;
      return conn_->send_mss() == static_cast<uint32_t>(n) ? "" : fmt::format("mss is {}", conn_->send_mss());
    }
    if (ev == "close") return conn_->close(), "";
    if (ev == "abort") return conn_->abort(), "";
    if (ev == "nagle") {
      ls >> word;
      conn_->set_nagle(word == "on");
      return "";
    }
    if (ev == "state") {
      ls >> word;
      return word == tcp::to_string(conn_->state())
                 ? ""
                 : fmt::format("state is {}", tcp::to_string(conn_->state()));
    }
    if (ev == "reason") {
      ls >> word;
      return word == tcp::to_string(conn_->close_reason())
                 ? ""
                 : fmt::format("close reason is {}", tcp::to_string(conn_->close_reason()));
    }
    if (ev == "cwnd" || ev == "ssthresh" || ev == "rto_ms" || ev == "pipe") {
      ls >> n;
      const long v = ev == "cwnd"       ? conn_->cwnd()
                     : ev == "ssthresh" ? conn_->ssthresh()
                     : ev == "pipe"     ? conn_->pipe()
                                        : static_cast<long>(conn_->rto().rto_ns() / 1'000'000);
      return v == n ? "" : fmt::format("{} is {}", ev, v);
    }
    if (ev == "stat") {
      ls >> word >> n;
      const auto& s = conn_->stats();
      const long v = word == "retransmits"         ? static_cast<long>(s.retransmits)
                     : word == "fast_retransmits"  ? static_cast<long>(s.fast_retransmits)
                     : word == "early_retransmits" ? static_cast<long>(s.early_retransmits)
                     : word == "timeouts"          ? static_cast<long>(s.timeouts)
                     : word == "challenge_acks"    ? static_cast<long>(s.challenge_acks)
                     : word == "paws_drops"        ? static_cast<long>(s.paws_drops)
                     : word == "window_probes"     ? static_cast<long>(s.window_probes)
                     : word == "tail_loss_probes"  ? static_cast<long>(s.tail_loss_probes)
                     : word == "out_of_order"      ? static_cast<long>(s.out_of_order)
                     : word == "sack_retransmits"  ? static_cast<long>(s.sack_retransmits)
                     : word == "sacked_bytes"      ? static_cast<long>(s.sacked_bytes)
                     : word == "rack_lost"         ? static_cast<long>(s.rack_lost)
                     : word == "lost_retransmits"  ? static_cast<long>(s.lost_retransmits)
                     : word == "icmp_errors"       ? static_cast<long>(s.icmp_errors)
                     : word == "icmp_ignored"      ? static_cast<long>(s.icmp_ignored)
                     : word == "pmtu_reductions"   ? static_cast<long>(s.pmtu_reductions)
                     : word == "dsacks_sent"       ? static_cast<long>(s.dsacks_sent)
                     : word == "dsacks_received"   ? static_cast<long>(s.dsacks_received)
                     : word == "spurious_undone"   ? static_cast<long>(s.spurious_undone)
                                                   : -1;
      return v == n ? "" : fmt::format("stat {} is {}", word, v);
    }
    return "unknown event " + ev;
  }

  std::string config(std::istringstream& ls) {
    if (conn_) return "config after the connection exists";
    std::string kv;
    while (ls >> kv) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos) return "config wants KEY=VALUE";
      const std::string k = kv.substr(0, eq);
      if (k == "cc") {
        const std::string a = kv.substr(eq + 1);
        if (a != "reno" && a != "cubic") return "cc is reno or cubic";
        cfg_.congestion_control = a == "cubic" ? tcp::CcAlgorithm::cubic : tcp::CcAlgorithm::reno;
        continue;
      }
      const long long v = std::stoll(kv.substr(eq + 1), nullptr, 0);
      if (k == "mss")
        cfg_.mss = static_cast<uint16_t>(v);
      else if (k == "rcvbuf")
        cfg_.recv_buffer = static_cast<uint32_t>(v);
      else if (k == "sndbuf")
        cfg_.send_buffer = static_cast<uint32_t>(v);
      else if (k == "ws")
        cfg_.window_scaling = v != 0;
      else if (k == "ts")
        cfg_.timestamps = v != 0;
      else if (k == "delack")
        cfg_.delayed_ack = v != 0;
      else if (k == "nagle")
        cfg_.nagle = v != 0;
      else if (k == "sack")
        cfg_.sack = v != 0;
      else if (k == "tlp")
        cfg_.tail_loss_probe = v != 0;
      else if (k == "rack")
        cfg_.rack = v != 0;
      else if (k == "iw")
        cfg_.initial_cwnd_segments = static_cast<uint32_t>(v);
      else if (k == "oob_inline")
        cfg_.oob_inline = v != 0;
      else if (k == "keepalive")
        cfg_.keepalive = v != 0;
      else if (k == "keepalive_idle_ms")
        cfg_.keepalive_idle_ns = v * kMs;
      else if (k == "keepalive_intvl_ms")
        cfg_.keepalive_interval_ns = v * kMs;
      else if (k == "keepalive_probes")
        cfg_.keepalive_probes = static_cast<int>(v);
      else if (k == "max_retransmits")
        cfg_.max_retransmits = static_cast<int>(v);
      else if (k == "syn_retries")
        cfg_.syn_retries = static_cast<int>(v);
      else if (k == "msl_ms")
        cfg_.msl_ns = v * kMs;
      else if (k == "iss")
        iss_ = static_cast<uint32_t>(v);
      else if (k == "peer_iss")
        peer_iss_ = static_cast<uint32_t>(v);
      else
        return "unknown config " + k;
    }
    return "";
  }

  void make_conn() {
    const tcp::FourTuple t{wire::Ipv4Addr::of(192, 0, 2, 1), 8080, wire::Ipv4Addr::of(192, 0, 2, 2), 40000};
    conn_ = std::make_unique<tcp::Connection>(cfg_, clock_, cap_, t, iss_);
  }

  // FLAGS START:END(LEN) [ack N] [win W] [<OPTIONS>]
  std::string parse_spec(std::istringstream& ls, Spec& s, bool outbound) {
    std::string flags, range;
    if (!(ls >> flags >> range)) return "want FLAGS START:END(LEN)";
    for (char c : flags) {
      switch (c) {
        case 'S':
          s.flags |= syn;
          break;
        case 'F':
          s.flags |= fin;
          break;
        case 'R':
          s.flags |= rst;
          break;
        case 'P':
          s.flags |= psh;
          break;
        case '.':
          s.flags |= ack;
          break;
        case 'U':
          s.flags |= urg;
          break;
        default:
          return fmt::format("bad flag {}", c);
      }
    }
    unsigned long long a = 0, b = 0, n = 0;
    if (std::sscanf(range.c_str(), "%llu:%llu(%llu)", &a, &b, &n) != 3 || b - a != n)
      return "bad START:END(LEN)";
    s.start = static_cast<uint32_t>(a);
    s.end = static_cast<uint32_t>(b);
    s.len = static_cast<uint32_t>(n);
    std::string w;
    while (ls >> w) {
      if (w == "ack") {
        long long v;
        ls >> v;
        s.ack = static_cast<uint32_t>(v);
      } else if (w == "fill") {
        long v;
        ls >> v;
        s.fill = static_cast<uint8_t>(v);
      } else if (w == "urg") {
        long v;
        ls >> v;
        s.urg = static_cast<uint16_t>(v);
      } else if (w == "win") {
        long v;
        ls >> v;
        s.win = static_cast<uint16_t>(v);
      } else if (w[0] == '<') {
        std::string rest = w.substr(1), more;
        while (rest.find('>') == std::string::npos && ls >> more) rest += " " + more;
        rest = rest.substr(0, rest.find('>'));
        wire::TcpOptions o;
        std::istringstream os(rest);
        std::string item;
        while (std::getline(os, item, ',')) {
          std::istringstream is(item);
          std::string k;
          is >> k;
          if (k == "mss") {
            is >> o.mss;
            o.has_mss = true;
          } else if (k == "wscale") {
            int v;
            is >> v;
            o.wscale = static_cast<uint8_t>(v);
            o.has_wscale = true;
          } else if (k == "sackOK") {
            o.sack_permitted = true;
          } else if (k == "TS") {
            std::string val, ecr, e;
            is >> w >> val >> e >> ecr;
            o.has_timestamps = true;
            if (val == "*" && outbound)
              s.ts_val_any = true;
            else
              o.ts_val = static_cast<uint32_t>(std::stoul(val));
            o.ts_ecr = static_cast<uint32_t>(std::stoul(ecr));
          } else if (k == "sack") {
            std::string blk;
            while (is >> blk && o.sack_count < wire::kMaxSackBlocks) {
              unsigned long l = 0, r = 0;
              std::sscanf(blk.c_str(), "%lu:%lu", &l, &r);
              // Blocks acknowledge the other side's data: ours (outbound) or the stack's.
              const uint32_t base = outbound ? peer_iss_ : iss_;
              o.sack[o.sack_count++] = {static_cast<uint32_t>(l) + base, static_cast<uint32_t>(r) + base};
            }
          } else if (k != "nop" && !k.empty()) {
            return "unknown option " + k;
          }
        }
        s.opts = o;
      } else {
        return "unexpected word " + w;
      }
    }
    return "";
  }

  std::string inject(std::istringstream& ls) {
    Spec s;
    if (auto e = parse_spec(ls, s, false); !e.empty()) return e;
    TcpHeader h;
    h.src_port = 40000;
    h.dst_port = 8080;
    h.seq = s.start + peer_iss_;
    h.ack = s.ack ? *s.ack + iss_ : 0;
    h.flags = s.flags;
    h.window = s.win.value_or(65535);
    h.urgent = s.urg;
    if (s.opts) h.options = *s.opts;
    std::vector<uint8_t> payload(s.len);
    // Stream offset of the first byte: relative seq minus the SYN's one.
    for (uint32_t i = 0; i < s.len; ++i) payload[i] = s.fill ? *s.fill : pattern(s.start - 1 + i, true);
    wire::L2L3 l;
    l.src_mac = {{2, 0, 0, 0, 0, 2}};
    l.dst_mac = {{2, 0, 0, 0, 0, 1}};
    l.ip.src = wire::Ipv4Addr::of(192, 0, 2, 2);
    l.ip.dst = wire::Ipv4Addr::of(192, 0, 2, 1);
    std::vector<uint8_t> frame(70000);
    const size_t n = wire::build_tcp_frame(frame, l, h, payload);
    wire::ParsedFrame f;
    if (n == 0 || wire::parse_frame(wire::Bytes(frame.data(), n), f) != wire::ParseError::ok)
      return "cannot build the segment";
    if (!conn_) {
      if (!(s.flags & syn) || (s.flags & ack)) return "the first segment from the peer must be a SYN";
      make_conn();
      conn_->accept_syn(f.tcp);
      return "";
    }
    conn_->input(f.tcp);
    return "";
  }

  // icmp KIND SEQ [mtu N] [len L]: an ICMP error quoting a segment of ours with relative sequence
  // number SEQ (a router's next-hop MTU N, the quoted datagram's length L).
  std::string icmp(std::istringstream& ls) {
    std::string kind, w;
    long long seq = 0;
    if (!(ls >> kind >> seq)) return "want icmp KIND SEQ";
    long mtu = 0, len = 0;
    while (ls >> w) {
      if (w == "mtu")
        ls >> mtu;
      else if (w == "len")
        ls >> len;
      else
        return "unexpected word " + w;
    }
    using K = wire::IcmpErrorKind;
    const K k = kind == "net_unreachable"     ? K::net_unreachable
                : kind == "host_unreachable"  ? K::host_unreachable
                : kind == "proto_unreachable" ? K::proto_unreachable
                : kind == "port_unreachable"  ? K::port_unreachable
                : kind == "frag_needed"       ? K::frag_needed
                : kind == "time_exceeded"     ? K::time_exceeded
                                              : K::none;
    if (k == K::none) return "unknown ICMP error " + kind;
    conn_->icmp_error(k, static_cast<uint32_t>(seq) + iss_, static_cast<uint16_t>(mtu),
                      static_cast<uint16_t>(len));
    return "";
  }

  std::string expect(std::istringstream& ls, int64_t t) {
    Spec s;
    if (auto e = parse_spec(ls, s, true); !e.empty()) return e;
    if (cap_.sent.empty()) return "the stack sent nothing";
    const Sent got = cap_.sent.front();
    cap_.sent.pop_front();
    const std::string g = describe(got);
    if (std::llabs(got.t_ns - t) > 2 * kMs) return "sent at another time: " + g;
    if (got.h.flags != s.flags) return "flags differ: " + g;
    if (got.h.seq - iss_ != s.start || got.payload.size() != s.len) return "sequence differs: " + g;
    if (s.ack && got.h.ack - peer_iss_ != *s.ack) return "ack differs: " + g;
    if (s.win && got.h.window != *s.win) return "window differs: " + g;
    if (s.opts) {
      wire::TcpOptions want = *s.opts;
      if (s.ts_val_any) want.ts_val = got.h.options.ts_val;
      if (!(want == got.h.options))
        return fmt::format("options differ: {} (mss {} ws {}/{} sackOK {} TS {} ecr {} sacks {})", g,
                           got.h.options.mss, got.h.options.has_wscale, got.h.options.wscale,
                           got.h.options.sack_permitted, got.h.options.has_timestamps, got.h.options.ts_ecr,
                           got.h.options.sack_count);
    }
    for (size_t i = 0; i < got.payload.size(); ++i)
      if (got.payload[i] != pattern(s.start - 1 + static_cast<uint32_t>(i), false))
        return fmt::format("payload byte {} differs", i);
    return "";
  }

  tcp::Config cfg_ = [] {
    tcp::Config c;
    c.tail_loss_probe = false;  // see tcp_script.hpp: scripts turn it on with `config tlp=1`
    c.sack = false;             // and `config sack=1`
    c.rack = false;             // and `config rack=1` (with sack=1)
    c.congestion_control = tcp::CcAlgorithm::reno;  // and `config cc=cubic`
    return c;
  }();
  VirtualClock clock_;
  Capture cap_{clock_};
  std::unique_ptr<tcp::Connection> conn_;
  uint32_t iss_ = 1'000'000;
  uint32_t peer_iss_ = 5'000'000;
  int64_t last_t_ = 0;
  size_t app_sent_ = 0;
  size_t app_read_ = 0;
};
}  // namespace

std::string run_tcp_script(const std::string& script) { return Runner().run(script); }

}  // namespace weft::stack::test
