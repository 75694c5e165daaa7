// `weft rdma mesh`: N processes in a full mesh. Every round each process RDMA-WRITEs a pattern
// into its slot of every peer's buffer, then SENDs the same pattern; the peer checks every byte of
// both (RC delivers the WRITE before the SEND that follows it) and acknowledges with a
// zero-length SEND_WITH_IMM, which frees the slot for the next round.
//
//   weft rdma mesh --nodes 4                       # spawns ranks 0..3 here and waits for them
//   weft rdma mesh --nodes 4 --rank R --hosts A,B,C,D   # one rank; rank i listens on base-port + i
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
#include "rdma/completion_waiter.hpp"
#include "rdma/device.hpp"
#include "rdma/error.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/side_channel.hpp"

extern char** environ;

namespace {

using namespace weft;
using namespace weft::rdma;
using std::chrono::milliseconds;

struct Options {
  int nodes = 4;
  int rank = -1;
  std::vector<std::string> hosts;  // one per rank; default 127.0.0.1 for all
  uint16_t base_port = 47020;
  uint32_t size = 4096;
  int rounds = 20;
  std::string wait = "busy";
  std::string device;
  int timeout_ms = 10000;
};

constexpr uint32_t kAckBit = 0x80000000u;

uint8_t pattern(int from, int to, int round, uint32_t k) {
  return static_cast<uint8_t>(from * 31 + to * 17 + round * 7 + static_cast<int>(k * 13));
}

struct Link {
  int peer = -1;
  std::optional<SideChannel> chan;
  std::optional<QueuePair> qp;
  RemoteBuf slot;  // our slot in the peer's write buffer
};

// One rank of the mesh: its side channels, its verbs and its rounds. Members are declared in
// the order they are made, so they go in the reverse order (buffers, CQ, PD, device, links).
class MeshRank {
 public:
  explicit MeshRank(const Options& o)
      : o_(o),
        n_(o.nodes),
        me_(o.rank),
        S_(o.size),
        N_(static_cast<size_t>(o.nodes)),
        timeout_(o.timeout_ms),
        links_(N_),
        data_seen_(N_, 0),
        acks_seen_(N_, 0) {}

  Status run() {
    auto mode = parse_wait_mode(o_.wait);
    if (!mode) return std::unexpected(mode.error());
    if (auto s = connect_side_channels(); !s) return s;
    if (auto s = set_up_verbs(*mode); !s) return s;
    for (auto& l : links_)
      if (l.chan)
        if (auto s = l.chan->barrier(timeout_); !s) return s;
    const int64_t t0 = mono_ns();
    for (int round = 0; round < o_.rounds; ++round)
      if (auto s = run_round(round); !s) return s;
    const double secs = static_cast<double>(mono_ns() - t0) / 1e9;
    // Nobody tears down while a peer may still need our acks.
    for (auto& l : links_)
      if (l.chan)
        if (auto s = l.chan->barrier(timeout_); !s) return s;
    fmt::print(
        "{{\"rank\":{},\"nodes\":{},\"rounds\":{},\"size\":{},\"wait\":\"{}\",\"bytes_checked\":{},"
        "\"seconds\":"
        "{:.3f}}}\n",
        me_, n_, o_.rounds, o_.size, o_.wait, bytes_checked_, secs);
    return {};
  }

 private:
  std::string host(int r) const {
    return o_.hosts.empty() ? std::string("127.0.0.1") : o_.hosts[static_cast<size_t>(r)];
  }
  Link& link(int p) { return links_[static_cast<size_t>(p)]; }

  // Side channels: connect to lower ranks, accept higher ones (each says who it is first).
  Status connect_side_channels() {
    auto listener = SideChannel::listen(host(me_), static_cast<uint16_t>(o_.base_port + me_));
    if (!listener) return std::unexpected(listener.error());
    for (int p = 0; p < me_; ++p) {
      auto c = SideChannel::connect(host(p), static_cast<uint16_t>(o_.base_port + p), timeout_);
      if (!c) return std::unexpected(c.error());
      std::array<std::byte, 4> who{};
      std::memcpy(who.data(), &me_, 4);
      if (auto s = c->send_all(who, timeout_); !s) return s;
      link(p).chan.emplace(std::move(*c));
    }
    for (int k = me_ + 1; k < n_; ++k) {
      auto c = listener->accept(timeout_);
      if (!c) return std::unexpected(c.error());
      std::array<std::byte, 4> who{};
      if (auto s = c->recv_all(who, timeout_); !s) return s;
      int p;
      std::memcpy(&p, who.data(), 4);
      if (p <= me_ || p >= n_ || link(p).chan) return fail("mesh: unexpected rank {} connected", p);
      link(p).chan.emplace(std::move(*c));
    }
    return {};
  }

  // The device, one CQ shared by all of this rank's QPs, the regions ([writes from each peer]
  // [sends received from each peer][what we send]) and one connected QP per peer.
  Status set_up_verbs(WaitMode mode) {
    auto dev = Device::open(o_.device);
    if (!dev) return std::unexpected(dev.error());
    dev_.emplace(std::move(*dev));
    in_addr addr{};
    inet_pton(AF_INET, host(me_).c_str(), &addr);
    auto gid = dev_->roce_v2_gid(host(me_) == "127.0.0.1" ? in_addr{} : addr);
    if (!gid) return std::unexpected(gid.error());
    auto pd = ProtectionDomain::create(*dev_);
    if (!pd) return std::unexpected(pd.error());
    pd_.emplace(std::move(*pd));
    auto cq = CompletionQueue::create(*dev_, 16 * n_, mode);
    if (!cq) return std::unexpected(cq.error());
    cq_.emplace(std::move(*cq));
    auto waiter = CompletionWaiter::create(*cq_, mode);
    if (!waiter) return std::unexpected(waiter.error());
    waiter_.emplace(std::move(*waiter));
    auto wbuf = MemoryRegion::allocate(*pd_, S_ * N_, access::remote_write);
    auto rbuf = MemoryRegion::allocate(*pd_, S_ * N_, access::local);
    auto sbuf = MemoryRegion::allocate(*pd_, S_ * N_, access::local);
    if (!wbuf || !rbuf || !sbuf)
      return fail("mesh: registering buffers: {}", (!wbuf ? wbuf : !rbuf ? rbuf : sbuf).error().message);
    wbuf_.emplace(std::move(*wbuf));
    rbuf_.emplace(std::move(*rbuf));
    sbuf_.emplace(std::move(*sbuf));
    ConnectOptions co;
    co.gid_index = static_cast<int>(gid->index);
    for (int p = 0; p < n_; ++p)
      if (p != me_)
        if (auto s = connect_peer(p, co, gid->gid); !s) return s;
    return {};
  }

  Status connect_peer(int p, const ConnectOptions& co, const ibv_gid& gid) {
    const uint32_t psn = 0x1000u + static_cast<uint32_t>(me_);
    auto& l = link(p);
    l.peer = p;
    auto qp = QueuePair::create(*pd_, *cq_, *cq_, QpOptions{});
    if (!qp) return std::unexpected(qp.error());
    l.qp.emplace(std::move(*qp));
    EndpointInfo mine{QpAddress{l.qp->qpn(), psn, 0, gid}, wbuf_->remote(S_ * static_cast<size_t>(p), S_), 0};
    auto theirs = l.chan->exchange(mine, timeout_);
    if (!theirs) return std::unexpected(theirs.error());
    l.slot = theirs->buf;
    if (auto s = l.qp->connect(co, psn, theirs->qp); !s) return s;
    // Two receives per peer: its data SEND of a round and its ACK of ours may both be in flight.
    for (int k = 0; k < 2; ++k)
      if (auto s = post_recv(p); !s) return s;
    return {};
  }

  Status post_recv(int p) {
    auto r = RecvWr::into(rbuf_->local(S_ * static_cast<size_t>(p), static_cast<uint32_t>(S_)),
                          static_cast<uint64_t>(p));
    return link(p).qp->post_recv(r);
  }

  int find_peer(uint32_t qpn) const {
    for (auto& l : links_)
      if (l.qp && l.qp->qpn() == qpn) return l.peer;
    return -1;
  }

  // Per peer: data messages checked and acks received so far. A peer that finished a round may
  // already send the next one while we wait for others, so data can be one round ahead of us.
  bool round_complete(int round) const {
    for (auto& l : links_)
      if (l.qp && (data_seen_[static_cast<size_t>(l.peer)] <= round ||
                   acks_seen_[static_cast<size_t>(l.peer)] <= round))
        return false;
    return sends_left_ == 0;
  }

  // Writes and sends this round's pattern to every peer, then handles completions until every
  // peer's data of the round is checked and every peer acknowledged ours.
  Status run_round(int round) {
    for (auto& l : links_) {
      if (!l.qp) continue;
      auto* out = reinterpret_cast<uint8_t*>(sbuf_->data() + S_ * static_cast<size_t>(l.peer));
      for (uint32_t k = 0; k < S_; ++k) out[k] = pattern(me_, l.peer, round, k);
      auto src = sbuf_->local(S_ * static_cast<size_t>(l.peer), static_cast<uint32_t>(S_));
      std::array<SendWr, 2> wrs = {SendWr::write(src, l.slot, 1),
                                   SendWr::send_imm(src, static_cast<uint32_t>(round), 2)};
      if (auto s = l.qp->post_send(wrs); !s) return s;
      sends_left_ += 2;
    }
    std::array<ibv_wc, 16> wcs;
    while (!round_complete(round)) {
      auto got = waiter_->wait(wcs, timeout_);
      if (!got) return std::unexpected(got.error());
      if (*got == 0)
        return fail("mesh rank {}: round {} stalled ({} sends outstanding)", me_, round, sends_left_);
      for (int i = 0; i < *got; ++i) {
        const ibv_wc& wc = wcs[static_cast<size_t>(i)];
        if (auto s = check_completion(wc); !s) return fail("mesh rank {}: {}", me_, s.error().message);
        if (wc.opcode != IBV_WC_RECV) {
          --sends_left_;
          continue;
        }
        const int p = find_peer(wc.qp_num);
        if (p < 0) return fail("mesh rank {}: completion from unknown QP 0x{:x}", me_, wc.qp_num);
        if (auto s = on_recv(wc, p); !s) return fail("mesh rank {}: {}", me_, s.error().message);
      }
    }
    return {};
  }

  // Handles one receive from peer p: an ack, or data checked byte by byte and acknowledged.
  Status on_recv(const ibv_wc& wc, int p) {
    const uint32_t imm = imm_of(wc);
    if (auto s = post_recv(p); !s) return s;
    if (imm & kAckBit) {
      ++acks_seen_[static_cast<size_t>(p)];
      return {};
    }
    const int round = static_cast<int>(imm);
    if (round != data_seen_[static_cast<size_t>(p)])
      return fail("rank {} sent round {}, expected {}", p, round, data_seen_[static_cast<size_t>(p)]);
    if (wc.byte_len != S_) return fail("{} bytes from rank {}, expected {}", wc.byte_len, p, S_);
    const auto* written = reinterpret_cast<const uint8_t*>(wbuf_->data() + S_ * static_cast<size_t>(p));
    const auto* sent = reinterpret_cast<const uint8_t*>(rbuf_->data() + S_ * static_cast<size_t>(p));
    for (uint32_t k = 0; k < S_; ++k) {
      const uint8_t want = pattern(p, me_, round, k);
      if (written[k] != want || sent[k] != want)
        return fail("round {} byte {} from rank {}: written {} sent {} expected {}", round, k, p, written[k],
                    sent[k], want);
    }
    bytes_checked_ += 2 * S_;
    ++data_seen_[static_cast<size_t>(p)];
    auto ack = SendWr::send_imm(sbuf_->local(0, 0), kAckBit | imm, 3);
    if (auto s = link(p).qp->post_send(ack); !s) return s;
    ++sends_left_;
    return {};
  }

  const Options& o_;
  const int n_, me_;
  const size_t S_, N_;
  const milliseconds timeout_;
  std::vector<Link> links_;
  std::optional<Device> dev_;
  std::optional<ProtectionDomain> pd_;
  std::optional<CompletionQueue> cq_;
  std::optional<CompletionWaiter> waiter_;
  std::optional<MemoryRegion> wbuf_, rbuf_, sbuf_;
  std::vector<int> data_seen_, acks_seen_;
  int sends_left_ = 0;
  uint64_t bytes_checked_ = 0;
};

Status run_rank(const Options& o) { return MeshRank(o).run(); }

// Runs ranks 0..n-1 as child processes of this one and waits for all of them.
Status spawn_all(const Options& o) {
  std::vector<pid_t> pids;
  for (int r = 0; r < o.nodes; ++r) {
    std::vector<std::string> args = {"weft",
                                     "rdma",
                                     "mesh",
                                     "--nodes",
                                     std::to_string(o.nodes),
                                     "--rank",
                                     std::to_string(r),
                                     "--base-port",
                                     std::to_string(o.base_port),
                                     "--size",
                                     std::to_string(o.size),
                                     "--rounds",
                                     std::to_string(o.rounds),
                                     "--wait",
                                     o.wait,
                                     "--timeout-ms",
                                     std::to_string(o.timeout_ms)};
    if (!o.device.empty()) args.insert(args.end(), {"--device", o.device});
    for (auto& h : o.hosts) args.insert(args.end(), {"--hosts", h});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    if (int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ))
      return fail_errno("posix_spawn mesh rank", rc);
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int st = 0;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  if (failed) return fail("mesh: {} of {} ranks failed", failed, o.nodes);
  return {};
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto opts = std::make_shared<Options>();
  Options& o = *opts;
  auto* sub = root.rdma->add_subcommand(
      "mesh", "N processes in a full RDMA mesh, WRITE + SEND to all, every byte checked");
  sub->add_option("--nodes", o.nodes, "processes in the mesh")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  sub->add_option("--rank", o.rank, "run this one rank (default: spawn all ranks here)")
      ->check(CLI::Range(0, 63));
  sub->add_option("--hosts", o.hosts, "side-channel address of each rank (default 127.0.0.1)")
      ->delimiter(',');
  sub->add_option("--base-port", o.base_port, "rank i listens on base-port + i")->capture_default_str();
  weft::cli::add_size_option(sub, o.size, "bytes each rank writes and sends to each peer per round");
  sub->add_option("--rounds", o.rounds, "rounds")->capture_default_str()->check(CLI::Range(1, 10'000'000));
  sub->add_option("--wait", o.wait, "completion wait mode: busy|channel|epoll")
      ->capture_default_str()
      ->check(CLI::IsMember({"busy", "channel", "epoll"}));
  weft::cli::add_device_option(sub, o.device);
  weft::cli::add_timeout_ms_option(sub, o.timeout_ms);
  sub->callback([opts] {
    const Options& o = *opts;
    // Usage errors (exit 2) first, then the run (exit 1 if it fails).
    std::string usage;
    if (!o.hosts.empty() && static_cast<int>(o.hosts.size()) != o.nodes)
      usage = "--hosts needs one address per rank";
    else if (o.rank >= o.nodes)
      usage = "--rank must be below --nodes";
    if (!usage.empty()) {
      fmt::print(stderr, "weft rdma mesh: {}\n", usage);
      weft::cli::set_exit_code(weft::cli::kUsageError);
      return;
    }
    Status s = o.rank < 0 ? spawn_all(o) : run_rank(o);
    if (!s) {
      fmt::print(stderr, "weft rdma mesh{}: {}\n", o.rank >= 0 ? fmt::format(" rank {}", o.rank) : "",
                 s.error().message);
      weft::cli::set_exit_code(1);
    }
  });
}};

}  // namespace
