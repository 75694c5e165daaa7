// `weft msg bench --type shared-ring --senders N`: N sender processes into one receiver over the
// shared ring (msg/shared_ring.hpp). Modes check (random sizes, every byte compared per sender)
// and bandwidth (aggregate message rate at the receiver). The server prints one JSON line per run
// with what each sender got delivered and the holes it skipped; each sender prints its own line.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "base/clock.hpp"
#include "base/proc_stats.hpp"
#include "cli/cmd_msg.hpp"
#include "msg/shared_ring.hpp"
#include "msg/test_pattern.hpp"

namespace weft::msg_bench {

namespace {

// Each sender's messages have their own pattern, so the receiver checks which sender wrote what.
uint64_t sender_seed(uint64_t seed, uint32_t index) { return seed ^ (0x9e3779b97f4a7c15ull * (index + 1)); }

std::string join(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i]);
  return s;
}

Status run_sender(const BenchOptions& o, const Plan& plan) {
  const milliseconds t(o.timeout_ms);
  auto conn = open_run(o, plan);
  if (!conn) return std::unexpected(conn.error());
  Connection& c = **conn;
  // Scripts that kill a sender mid-stream wait for this line.
  fmt::print(stderr, "weft msg bench: connected (shared-ring sender {})\n", plan.index);
  std::fflush(stderr);
  const uint64_t seed = sender_seed(plan.seed, plan.index);
  std::vector<std::byte> buf(plan.max_message);
  pattern_fill(seed, 0, std::span(buf).first(plan.size));
  const int64_t cpu0 = self_cpu_ns(), t0 = mono_ns();
  for (uint64_t i = 0; i < plan.iters; ++i) {
    std::span<std::byte> m = std::span(buf).first(plan.size);
    if (plan.mode == "check") {
      m = std::span(buf).first(pattern_length(seed, i, plan.max_message));
      pattern_fill(seed, i, m);
    }
    if (auto s = c.send(m, t); !s)
      return in_context(s.error(), fmt::format("sender {} message {}", plan.index, i));
  }
  if (auto s = c.flush(t); !s) return s;
  const double secs = static_cast<double>(mono_ns() - t0) / 1e9, n = static_cast<double>(plan.iters);
  const Stats& st = c.stats();
  fmt::print(
      "{{\"type\":\"shared-ring\",\"side\":\"sender\",\"sender\":{},\"mode\":\"{}\",\"bytes\":{},\"sent\":{},"
      "\"secs\":{:.4f},\"msg_rate_mpps\":{:.6f},\"send_wrs_per_msg\":{:.3f},\"atomics_per_msg\":{:.3f},"
      "\"reads_per_msg\":{:.3f},\"cpu_ns_per_msg\":{:.0f},\"credit_waits\":{}}}\n",
      plan.index, plan.mode, plan.size, st.msgs_sent, secs, secs > 0 ? n / secs / 1e6 : 0,
      static_cast<double>(st.send_wrs) / n, static_cast<double>(st.atomics) / n,
      static_cast<double>(st.reads) / n, static_cast<double>(self_cpu_ns() - cpu0) / n, st.credit_waits);
  std::fflush(stdout);
  return {};
}

}  // namespace

Status run_shared_client(const BenchOptions& o, const Plan& base) {
  if (o.sender_index >= 0) {
    if (static_cast<uint32_t>(o.sender_index) >= o.senders)
      return fail("--sender-index {} is not below --senders {}", o.sender_index, o.senders);
    Plan p = base;
    p.index = static_cast<uint32_t>(o.sender_index);
    return run_sender(o, p);
  }
  // One process per sender: the fork happens before any RDMA resource exists.
  std::vector<pid_t> kids;
  for (uint32_t k = 1; k < o.senders; ++k) {
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) return fail_errno("fork", errno);
    if (pid == 0) {
      Plan p = base;
      p.index = k;
      auto s = run_sender(o, p);
      if (!s) fmt::print(stderr, "weft msg bench: {}\n", s.error().message);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(s ? 0 : 1);
    }
    kids.push_back(pid);
  }
  Plan p = base;
  p.index = 0;
  Status all = run_sender(o, p);
  for (pid_t pid : kids) {
    int st = 0;
    if (::waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      if (all) all = fail("a sender process failed (status {})", st);
  }
  return all;
}

Status serve_shared(rdma::SideChannel first, const Plan& plan, rdma::SideChannel& listener,
                    const BenchOptions& o) {
  const milliseconds t(o.timeout_ms);
  std::vector<std::optional<rdma::SideChannel>> slots(plan.senders);
  std::vector<uint64_t> iters(plan.senders, 0);  // senders may send different counts (a test kills one)
  slots[plan.index] = std::move(first);
  iters[plan.index] = plan.iters;
  for (uint32_t got = 1; got < plan.senders; ++got) {
    auto ch = listener.accept(t);
    if (!ch)
      return fail("waiting for shared-ring sender {} of {}: {}", got + 1, plan.senders, ch.error().message);
    auto bytes = ch->exchange_record({}, 4096, t);
    if (!bytes) return std::unexpected(bytes.error());
    auto p = Plan::decode(to_string_bytes(*bytes));
    std::string answer = "ok";
    if (!p)
      answer = p.error().message;
    else if (p->kind != plan.kind || p->mode != plan.mode || p->size != plan.size ||
             p->max_message != plan.max_message || p->slots != plan.slots || p->seed != plan.seed ||
             p->senders != plan.senders || p->wait != plan.wait)
      answer = fmt::format("sender {} has plan '{}', sender {} had '{}'", p->index, p->encode(), plan.index,
                           plan.encode());
    else if (slots[p->index])
      answer = fmt::format("two senders with index {}", p->index);
    if (auto a = ch->exchange_record(to_bytes(answer), 0, t); !a) return std::unexpected(a.error());
    if (answer != "ok") return fail("shared-ring: {}", answer);
    slots[p->index] = std::move(*ch);
    iters[p->index] = p->iters;
  }
  auto mo = connection_options(o, plan);
  if (!mo) return std::unexpected(mo.error());
  std::vector<rdma::SideChannel> chans;
  for (auto& s : slots) chans.push_back(std::move(*s));
  auto rx = open_shared_receiver(std::move(chans), *mo);
  if (!rx) return std::unexpected(rx.error());
  SharedRingReceiver& r = **rx;
  std::vector<uint64_t> verified(plan.senders, 0), delivered(plan.senders, 0);
  uint64_t want = 0;
  for (uint64_t n : iters) want += n;
  // From the moment every sender is set up (each starts sending as soon as its own set-up ends,
  // so the first ones may have a head start of one set-up) to the last message.
  const int64_t cpu0 = self_cpu_ns(), t0 = mono_ns();
  int64_t t1 = t0;
  Status run{};
  for (uint64_t total = 0; total < want;) {
    auto m = r.receive(t);
    if (!m) {
      run = std::unexpected(m.error());
      break;
    }
    t1 = mono_ns();
    ++total;
    const uint64_t i = delivered[m->sender]++;
    if (i >= iters[m->sender]) {
      run = fail("sender {}: message {} of {}", m->sender, i + 1, iters[m->sender]);
      break;
    }
    if (plan.mode == "check") {
      const uint64_t seed = sender_seed(plan.seed, m->sender);
      const uint32_t len = pattern_length(seed, i, plan.max_message);
      if (m->bytes.size() != len) {
        run = fail("sender {} message {}: {} bytes, expected {}", m->sender, i, m->bytes.size(), len);
        break;
      }
      if (size_t at = pattern_mismatch(seed, i, m->bytes); at != SIZE_MAX) {
        run = fail("sender {} message {}: byte {} differs", m->sender, i, at);
        break;
      }
      ++verified[m->sender];
    } else if (m->bytes.size() != plan.size) {
      run = fail("sender {} message {}: {} bytes, expected {}", m->sender, i, m->bytes.size(), plan.size);
      break;
    }
  }
  const auto& st = r.stats();
  const double secs = static_cast<double>(t1 - t0) / 1e9, n = static_cast<double>(st.delivered);
  fmt::print(
      "{{\"type\":\"shared-ring\",\"side\":\"receiver\",\"mode\":\"{}\",\"bytes\":{},\"senders\":{},"
      "\"delivered\":[{}],\"verified\":[{}],\"of\":[{}],\"holes\":{},\"hole_bytes\":{},\"gone\":{},\"secs\":{"
      ":."
      "4f},"
      "\"msg_rate_mpps\":{:.6f},\"bw_gbps\":{:.4f},\"recv_wrs_per_msg\":{:.3f},\"cpu_ns_per_msg\":{:.0f},"
      "\"error\":\"{}\"}}\n",
      plan.mode, plan.size, plan.senders, join(delivered), join(verified), join(iters), st.holes,
      st.hole_bytes, st.senders_gone, secs, secs > 0 ? n / secs / 1e6 : 0,
      secs > 0 ? static_cast<double>(st.bytes) * 8 / secs / 1e9 : 0,
      n > 0 ? static_cast<double>(r.recv_wrs()) / n : 0,
      n > 0 ? static_cast<double>(self_cpu_ns() - cpu0) / n : 0, run ? "" : run.error().message);
  std::fflush(stdout);
  return run;
}

}  // namespace weft::msg_bench
