// `weft rdma pingpong --server | --client HOST`: one message bounces between two processes over
// an RC or UD queue pair, waiting for completions by busy polling, a completion channel or epoll.
// The client prints the round-trip times as one JSON object. Set-up goes over a TCP side channel.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/clock.hpp"
#include "base/histogram.hpp"
#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
#include "cli/rdma_side_channel.hpp"
#include "net/socket.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_waiter.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/side_channel.hpp"

namespace {

using namespace weft;
using namespace weft::rdma;
using std::chrono::milliseconds;

struct Options {
  bool server = false;
  std::string client;  // host to connect to
  std::string bind = "0.0.0.0";
  uint16_t port = 47010;
  std::string device;
  std::string qp = "rc";
  std::string wait = "busy";
  int iters = 1000;
  uint32_t size = 64;
  int timeout_ms = 5000;
};

// Tags for the waiter's poller: the side channel's socket, so a peer that dies ends the wait.
constexpr uint64_t kSideChannelTag = 1;

// The value of `key` in a "k=v k=v" record ("" when absent).
std::string_view field(std::string_view record, std::string_view key) {
  for (size_t at = 0; at < record.size();) {
    size_t end = record.find(' ', at);
    if (end == std::string_view::npos) end = record.size();
    const std::string_view tok = record.substr(at, end - at);
    if (tok.size() > key.size() && tok.starts_with(key) && tok[key.size()] == '=')
      return tok.substr(key.size() + 1);
    at = end + 1;
  }
  return {};
}

// Both ends send the test they were started for before any verbs: a size, count or QP type that
// differs is said on both sides, naming both values (exit 2), instead of surfacing as completion
// errors (a larger message than the peer's receive) or a timeout (fewer rounds). The wait mode
// is each end's own business and is not compared.
Status agree_on_test(SideChannel& chan, const Options& o, milliseconds timeout, bool& usage) {
  const std::string mine = fmt::format("size={} iters={} qp={}", o.size, o.iters, o.qp);
  auto theirs = chan.exchange_record(std::as_bytes(std::span(mine)), 256, timeout);
  if (!theirs) return std::unexpected(theirs.error());
  const std::string peer(reinterpret_cast<const char*>(theirs->data()), theirs->size());
  std::string diff;
  for (std::string_view key : {"size", "iters", "qp"})
    if (field(mine, key) != field(peer, key))
      diff += fmt::format("{}{}: here {}, peer {}", diff.empty() ? "" : "; ", key, field(mine, key),
                          field(peer, key).empty() ? "(none)" : field(peer, key));
  if (diff.empty()) return {};
  usage = true;
  return fail("the {} runs another test: {}", o.server ? "client" : "server", diff);
}

// What the round loops work with, made by run() (which owns the verbs objects).
struct Rounds {
  const Options& o;
  QueuePair& qp;
  CompletionWaiter& waiter;
  SideChannel& chan;
  RecvWr& recv;
  SendWr& send;
  uint8_t* out;       // what we send
  const uint8_t* in;  // where the peer's message lands (after a GRH on UD)
  milliseconds timeout() const { return milliseconds(o.timeout_ms); }
};

// Client: waits for the receive (and the send's completion) of this round, then reposts the receive.
Status round_done(Rounds& r) {
  bool got_recv = false, got_send = false;
  std::array<ibv_wc, 4> wcs;
  while (!got_recv || !got_send) {
    auto n = r.waiter.wait(wcs, r.timeout());
    if (!n) return std::unexpected(n.error());
    if (*n == 0 && r.waiter.fd_ready()) {
      // The side channel woke us: the peer died, or it is done and already waits at the barrier.
      char b;
      if (::recv(r.chan.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
        return fail("pingpong: the peer closed the side channel");
      if (auto s = r.waiter.poller()->unwatch_fd(r.chan.fd()); !s) return s;
      continue;
    }
    if (*n == 0)
      return fail("pingpong: no completion within {} ms ({} {})", r.o.timeout_ms, r.o.qp, r.o.wait);
    for (int i = 0; i < *n; ++i) {
      if (auto s = check_completion(wcs[static_cast<size_t>(i)]); !s) return s;
      (wcs[static_cast<size_t>(i)].opcode == IBV_WC_RECV ? got_recv : got_send) = true;
    }
  }
  return r.qp.post_recv(r.recv);
}

// Client: --iters pings, each stamped from its post to its echo, the echo's bytes checked.
Result<LogHistogram> client_rounds(Rounds& r) {
  LogHistogram rtt;
  const uint32_t size = r.o.size;
  for (int i = 0; i < r.o.iters; ++i) {
    r.out[0] = static_cast<uint8_t>(i);
    r.out[size - 1] = static_cast<uint8_t>(i * 3);
    const int64_t t0 = mono_ns();
    if (auto s = r.qp.post_send(r.send); !s) return std::unexpected(s.error());
    if (auto s = round_done(r); !s) return std::unexpected(s.error());
    rtt.add(mono_ns() - t0);
    if (r.in[0] != r.out[0] || r.in[size - 1] != r.out[size - 1])
      return fail("pingpong: round {} came back with other bytes", i);
  }
  return rtt;
}

// Server: echoes --iters pings (each one's bytes sent back), then waits for the client's barrier.
Status serve_rounds(Rounds& r) {
  std::array<ibv_wc, 4> wcs;
  for (int i = 0; i < r.o.iters; ++i) {
    bool got = false;
    while (!got) {
      auto n = r.waiter.wait(wcs, r.timeout());
      if (!n) return std::unexpected(n.error());
      if (*n == 0) return fail("pingpong server: no ping within {} ms (round {})", r.o.timeout_ms, i);
      for (int k = 0; k < *n; ++k) {
        if (auto s = check_completion(wcs[static_cast<size_t>(k)]); !s) return s;
        got |= wcs[static_cast<size_t>(k)].opcode == IBV_WC_RECV;
      }
    }
    std::memcpy(r.out, r.in, r.o.size);
    if (auto s = r.qp.post_recv(r.recv); !s) return s;
    // The send's completion is taken with the next round's receive (or drained below).
    if (auto s = r.qp.post_send(r.send); !s) return s;
  }
  // Drain the last send's completion so the client has it before we tear down.
  (void)r.waiter.wait(wcs, r.timeout());
  (void)r.chan.barrier(r.timeout());
  fmt::print("{{\"role\":\"server\",\"qp\":\"{}\",\"wait\":\"{}\",\"iters\":{},\"size\":{}}}\n", r.o.qp,
             r.o.wait, r.o.iters, r.o.size);
  return {};
}

void print_client(const Options& o, const std::string& device, const LogHistogram& rtt) {
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  fmt::print(
      "{{\"role\":\"client\",\"device\":\"{}\",\"qp\":\"{}\",\"wait\":\"{}\",\"iters\":{},\"size\":{},"
      "\"rtt_us\":{{\"min\":{:.1f},\"p50\":{:.1f},\"p90\":{:.1f},\"p99\":{:.1f},\"max\":{:.1f},\"mean\":{:."
      "1f}}}}}\n",
      device, o.qp, o.wait, o.iters, o.size, us(rtt.min()), us(rtt.percentile(0.5)), us(rtt.percentile(0.9)),
      us(rtt.percentile(0.99)), us(rtt.max()), us(rtt.mean()));
}

// `usage` is set when the error is the user's arguments (exit 2), not the network's or the device's.
Status run(const Options& o, bool& usage) {
  auto qp_type = parse_qp_type(o.qp);
  if (!qp_type) return std::unexpected(qp_type.error());
  auto mode = parse_wait_mode(o.wait);
  if (!mode) return std::unexpected(mode.error());
  const bool ud = *qp_type == QpType::ud;
  const milliseconds timeout(o.timeout_ms);

  // The device first: a UD size above its MTU would otherwise only show as a receive that never
  // comes (rxe drops the oversized datagram).
  auto dev = Device::open(o.device);
  if (!dev) return std::unexpected(dev.error());
  if (ud) {
    auto port = dev->port(1);
    if (!port) return std::unexpected(port.error());
    if (auto s = weft::cli::check_ud_size(o.size, 128u << static_cast<int>(port->active_mtu), dev->name());
        !s) {
      usage = true;
      return s;
    }
  }

  // Side channel first: its local address picks the GID, and a missing peer fails before verbs.
  auto opened = weft::cli::open_side_channel({o.server, o.bind, o.client, o.port, timeout}, "pingpong");
  if (!opened) return std::unexpected(opened.error());
  std::optional<SideChannel> chan(std::move(*opened));
  if (auto s = agree_on_test(*chan, o, timeout, usage); !s) return s;
  auto addr = weft::cli::side_channel_ipv4(*chan, "pingpong");
  if (!addr) return std::unexpected(addr.error());

  auto gid = dev->roce_v2_gid(*addr);
  if (!gid) return std::unexpected(gid.error());
  ConnectOptions co;
  co.gid_index = static_cast<int>(gid->index);
  auto pd = ProtectionDomain::create(*dev);
  if (!pd) return std::unexpected(pd.error());
  auto cq = CompletionQueue::create(*dev, 64, *mode);
  if (!cq) return std::unexpected(cq.error());
  QpOptions qo;
  qo.type = *qp_type;
  auto qp = QueuePair::create(*pd, *cq, *cq, qo);
  if (!qp) return std::unexpected(qp.error());
  // [0, size): what we send; [recv_off, ...): where receives land (after a GRH on UD).
  const uint32_t recv_off = 4096 * ((o.size + 4095) / 4096);
  const uint32_t recv_len = o.size + (ud ? kGrhBytes : 0);
  auto mr = MemoryRegion::allocate(*pd, recv_off + recv_len, access::local);
  if (!mr) return std::unexpected(mr.error());
  auto waiter = CompletionWaiter::create(*cq, *mode);
  if (!waiter) return std::unexpected(waiter.error());
  if (auto* p = waiter->poller())
    if (auto s = p->watch_fd(chan->fd(), kSideChannelTag); !s) return s;

  const uint32_t psn = static_cast<uint32_t>(mono_ns()) & 0xffffff;
  EndpointInfo mine{QpAddress{qp->qpn(), psn, 0, gid->gid}, {}, co.qkey};
  auto peer = chan->exchange(mine, timeout);
  if (!peer) return std::unexpected(peer.error());
  if (auto s = qp->connect(co, psn, peer->qp); !s) return s;
  std::optional<AddressHandle> ah;
  if (ud) {
    auto a = AddressHandle::create(*pd, co, peer->qp.gid, peer->qp.lid);
    if (!a) return std::unexpected(a.error());
    ah.emplace(std::move(*a));
  }
  auto recv = RecvWr::into(mr->local(recv_off, recv_len), 1);
  auto send = SendWr::send(mr->local(0, o.size), 2);
  if (ud) send.to(ah->raw(), peer->qp.qpn, peer->qkey);
  if (o.size <= qp->max_inline()) send.inlined();
  if (auto s = qp->post_recv(recv); !s) return s;
  // Both have a receive posted before anyone sends (UD has no RNR retry: a send would be lost).
  if (auto s = chan->barrier(timeout); !s) return s;

  Rounds r{o,
           *qp,
           *waiter,
           *chan,
           recv,
           send,
           reinterpret_cast<uint8_t*>(mr->data()),
           reinterpret_cast<const uint8_t*>(mr->data() + recv_off + (ud ? kGrhBytes : 0))};
  if (o.server) return serve_rounds(r);
  auto rtt = client_rounds(r);
  if (!rtt) return std::unexpected(rtt.error());
  (void)chan->barrier(timeout);
  print_client(o, dev->name(), *rtt);
  return {};
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto opts = std::make_shared<Options>();
  Options& o = *opts;
  auto* sub =
      root.rdma->add_subcommand("pingpong", "Bounce a message between two RDMA endpoints, print RTTs");
  auto* srv = sub->add_flag("--server", o.server, "wait for a client");
  auto* cli = sub->add_option("--client", o.client, "connect to the server at HOST");
  srv->excludes(cli);
  sub->add_option("--bind", o.bind, "server: side-channel address to listen on")->capture_default_str();
  sub->add_option("--port", o.port, "side-channel TCP port")->capture_default_str();
  weft::cli::add_device_option(sub, o.device);
  sub->add_option("--qp", o.qp, "queue pair type: rc|ud")
      ->capture_default_str()
      ->check(CLI::IsMember({"rc", "ud"}));
  sub->add_option("--wait", o.wait, "completion wait mode: busy|channel|epoll")
      ->capture_default_str()
      ->check(CLI::IsMember({"busy", "channel", "epoll"}));
  sub->add_option("--iters", o.iters, "round trips")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000'000));
  weft::cli::add_size_option(sub, o.size, "message bytes (UD: at most the MTU)");
  weft::cli::add_timeout_ms_option(sub, o.timeout_ms);
  sub->callback([opts] {
    const Options& o = *opts;
    if (!o.server && o.client.empty()) {
      fmt::print(stderr, "weft rdma pingpong: give --server or --client HOST\n");
      weft::cli::set_exit_code(weft::cli::kUsageError);
      return;
    }
    bool usage = false;
    if (auto s = run(o, usage); !s) {
      fmt::print(stderr, "weft rdma pingpong: {}\n", s.error().message);
      weft::cli::set_exit_code(usage ? weft::cli::kUsageError : 1);
    }
  });
}};

}  // namespace
