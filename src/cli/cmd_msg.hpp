#pragma once
// What the two files of `weft msg bench` share: its options, the plan a client sends for each run,
// and the connection options a plan makes (cmd_msg.cpp: the 1:1 types; cmd_msg_shared.cpp: the
// N:1 shared ring).
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "msg/connection.hpp"

namespace weft::msg_bench {

using namespace weft::msg;
using std::chrono::milliseconds;

struct BenchOptions {
  bool server = false;
  std::string client;
  std::string bind = "0.0.0.0";
  uint16_t port = 47100;
  std::string device;
  std::string types = "all";
  std::string sizes = "64,4096,65536";
  std::string mode = "latency";
  std::string wait = "busy";
  uint64_t iters = 1000;
  uint64_t warmup = 100;
  uint32_t slots = 64;
  uint32_t max_message = 0;  // 0: the largest size (check: 65536)
  uint64_t seed = 1;
  int timeout_ms = 10000;
  bool json = false;
  // Set-up (side channel, plan, connection) has its own limit, so a short --timeout-ms (a test
  // that stops the peer and wants a quick timeout) does not also bound a set-up on loaded cores.
  int setup_timeout_ms = 20000;
  uint32_t senders = 1;              // shared-ring: senders into one receiver
  int sender_index = -1;             // shared-ring: run only this sender (-1: fork all of them)
  uint64_t abandon_at = UINT64_MAX;  // shared-ring tests: reserve this message's space, then die
  std::string cdf;  // latency: append every run's sorted samples here ("type wait size usec" lines)
};

// What the client asks the server to do for one run: "key=value" pairs separated by spaces.
struct Plan {
  std::string mode;
  Kind kind = Kind::send_recv;
  uint32_t size = 0, max_message = 0, slots = 0;
  uint64_t iters = 0, warmup = 0, seed = 0;
  std::string wait;
  uint32_t senders = 1, index = 0;  // shared-ring: how many senders, and which one this is

  std::string encode() const {
    return fmt::format(
        "mode={} type={} size={} max={} slots={} iters={} warmup={} seed={} wait={} senders={} "
        "index={}",
        mode, to_string(kind), size, max_message, slots, iters, warmup, seed, wait, senders, index);
  }
  static Result<Plan> decode(std::string_view s) {
    std::map<std::string, std::string, std::less<>> kv;
    while (!s.empty()) {
      auto sp = s.find(' ');
      auto tok = s.substr(0, sp);
      s = sp == std::string_view::npos ? std::string_view{} : s.substr(sp + 1);
      auto eq = tok.find('=');
      if (eq == std::string_view::npos) return fail("plan: '{}' is not key=value", tok);
      kv.emplace(std::string(tok.substr(0, eq)), std::string(tok.substr(eq + 1)));
    }
    Plan p;
    auto num = [&](const char* k, auto& out) -> Status {
      auto it = kv.find(k);
      if (it == kv.end()) return fail("plan: no {}", k);
      auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), out);
      if (r.ec != std::errc() || r.ptr != it->second.data() + it->second.size())
        return fail("plan: bad {}", k);
      return {};
    };
    for (auto [k, out] : {std::pair{"size", &p.size},
                          {"max", &p.max_message},
                          {"slots", &p.slots},
                          {"senders", &p.senders},
                          {"index", &p.index}})
      if (auto st = num(k, *out); !st) return std::unexpected(st.error());
    for (auto [k, out] : {std::pair{"iters", &p.iters}, {"warmup", &p.warmup}, {"seed", &p.seed}})
      if (auto st = num(k, *out); !st) return std::unexpected(st.error());
    if (!kv.contains("mode") || !kv.contains("type") || !kv.contains("wait"))
      return fail("plan: mode/type/wait missing");
    p.mode = kv.find("mode")->second;
    if (p.mode != "latency" && p.mode != "bandwidth" && p.mode != "check")
      return fail("plan: unknown mode {}", p.mode);
    auto k = parse_kind(kv.find("type")->second);
    if (!k) return std::unexpected(k.error());
    p.kind = *k;
    p.wait = kv.find("wait")->second;
    if (p.size > p.max_message) return fail("plan: size {} above max {}", p.size, p.max_message);
    if (p.senders == 0 || p.senders > 64 || p.index >= p.senders)
      return fail("plan: sender {} of {} (1..64 senders)", p.index, p.senders);
    if (p.senders > 1 && p.kind != Kind::shared_ring)
      return fail("plan: {} senders into one receiver needs --type shared-ring", p.senders);
    if (p.kind == Kind::shared_ring && p.mode == "latency")
      return fail("plan: shared-ring has no way back to a sender (--mode bandwidth or check)");
    return p;
  }
};

// What the server reports back after a run.
struct PeerReport {
  Stats stats;
  int64_t cpu_ns = 0;
  std::string error;
  uint64_t verified = 0;
};

// `e` with what the client was doing in front, its code kept: ECONNRESET (the peer is gone, from
// msg::Link) decides whether the client goes on with its next run.
inline std::unexpected<Error> in_context(const Error& e, std::string_view what) {
  return std::unexpected(Error{fmt::format("{}: {}", what, e.message), e.code});
}
inline bool server_gone(const Error& e) { return e.code == ECONNRESET; }

inline std::vector<std::byte> to_bytes(std::string_view s) {
  auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}
inline std::string to_string_bytes(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline Result<msg::Options> connection_options(const BenchOptions& o, const Plan& p) {
  msg::Options mo;
  mo.kind = p.kind;
  mo.max_message = p.max_message;
  mo.slots = p.slots;
  mo.device = o.device;
  auto w = rdma::parse_wait_mode(p.wait);
  if (!w) return std::unexpected(w.error());
  mo.wait = *w;
  mo.setup_timeout = milliseconds(o.setup_timeout_ms);
  mo.test_abandon_at = o.abandon_at;
  return mo;
}

// The client's side of one run: sends the plan, takes the server's answer, opens the connection.
inline Result<std::unique_ptr<Connection>> open_run(const BenchOptions& o, const Plan& plan) {
  const milliseconds t(o.setup_timeout_ms);
  auto ch = rdma::SideChannel::connect(o.client, o.port, t);
  if (!ch) return std::unexpected(ch.error());
  if (auto a = ch->exchange_record(to_bytes(plan.encode()), 0, t); !a) return std::unexpected(a.error());
  auto answer = ch->exchange_record({}, 4096, t);
  if (!answer) return std::unexpected(answer.error());
  if (to_string_bytes(*answer) != "ok")
    return fail("the server refused the run: {}", to_string_bytes(*answer));
  auto mo = connection_options(o, plan);
  if (!mo) return std::unexpected(mo.error());
  return open_connection(std::move(*ch), *mo);
}

// The shared ring (cmd_msg_shared.cpp). The server got `first` with its plan and answered ok; it
// accepts the other senders on `listener`, receives and reports.
Status serve_shared(rdma::SideChannel first, const Plan& plan, rdma::SideChannel& listener,
                    const BenchOptions& o);
// The client: --senders N processes (forked here) or the one --sender-index names.
Status run_shared_client(const BenchOptions& o, const Plan& base);

}  // namespace weft::msg_bench
