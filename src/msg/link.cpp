#include "msg/link.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "base/random.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"
#include "rdma/error.hpp"

namespace weft::msg {

using namespace weft::rdma;

Result<std::unique_ptr<Link>> Link::create(SideChannel channel, const Options& o, uint32_t sq_depth,
                                           uint32_t rq_depth, bool use_srq) {
  Options opts = o;
  // Credits make receiver-not-ready impossible; if one happened anyway it must fail loudly (the
  // QP goes to error with IBV_WC_RNR_RETRY_EXC_ERR) rather than be retried for ever.
  opts.rdma.rnr_retry = 0;
  auto a = net::local_address(channel.fd());
  if (!a) return std::unexpected(a.error());
  if (a->family() != AF_INET) return fail("msg: the side channel is not IPv4 ({})", a->to_string());
  const in_addr local = reinterpret_cast<const sockaddr_in*>(a->sa())->sin_addr;
  auto dev = Device::open(o.device);
  if (!dev) return std::unexpected(dev.error());
  auto gid = dev->roce_v2_gid(local, opts.rdma.port);
  if (!gid) return std::unexpected(gid.error());
  opts.rdma.gid_index = static_cast<int>(gid->index);
  auto pd = ProtectionDomain::create(*dev);
  if (!pd) return std::unexpected(pd.error());
  auto scq = CompletionQueue::create(*dev, static_cast<int>(2 * sq_depth), WaitMode::busy);
  if (!scq) return std::unexpected(scq.error());
  auto rcq = CompletionQueue::create(*dev, static_cast<int>(2 * rq_depth),
                                     o.wait == WaitMode::busy ? WaitMode::busy : WaitMode::channel);
  if (!rcq) return std::unexpected(rcq.error());
  std::optional<SharedReceiveQueue> srq;
  if (use_srq) {
    auto s = SharedReceiveQueue::create(*pd, rq_depth);
    if (!s) return std::unexpected(s.error());
    srq = std::move(*s);
  }
  QpOptions qo;
  qo.type = QpType::rc;
  qo.max_send_wr = sq_depth;
  qo.max_recv_wr = rq_depth;
  qo.max_inline = 64;
  auto qp = QueuePair::create(*pd, *scq, *rcq, qo, srq ? &*srq : nullptr);
  if (!qp) return std::unexpected(qp.error());
  auto ctrl = MemoryRegion::allocate(*pd, ctrl::kSize, access::all);
  if (!ctrl) return std::unexpected(ctrl.error());
  auto events = AsyncEvents::open(*dev);
  if (!events) return std::unexpected(events.error());
  return std::unique_ptr<Link>(new Link(std::move(channel), std::move(opts), std::move(*dev), std::move(*pd),
                                        std::move(*scq), std::move(*rcq), std::move(srq), std::move(*qp),
                                        std::move(*ctrl), sq_depth, std::move(*events)));
}

int Link::event_fd() const { return recv_cq_.channel() ? recv_cq_.channel()->fd() : -1; }

Result<Hello> Link::handshake(Hello mine) {
  const uint32_t psn = static_cast<uint32_t>(random_u64() & 0xffffff);
  mine.qp.qpn = qp_.qpn();
  mine.qp.psn = psn;
  auto gids = dev_.gid_table(opts_.rdma.port);
  if (!gids) return std::unexpected(gids.error());
  for (const auto& g : *gids)
    if (static_cast<int>(g.index) == opts_.rdma.gid_index) mine.qp.gid = g.gid;
  auto lid = dev_.lid(opts_.rdma.port);
  if (!lid) return std::unexpected(lid.error());
  mine.qp.lid = *lid;
  mine.ctrl = ctrl_.remote();
  auto wire = mine.encode();
  auto theirs = ch_.exchange_record(wire, Hello::kWireSize, opts_.setup_timeout);
  if (!theirs) return std::unexpected(theirs.error());
  auto h = Hello::decode(*theirs);
  if (!h) return std::unexpected(h.error());
  if (auto s = Hello::compatible(mine, *h); !s) return std::unexpected(s.error());
  peer_ = *h;
  if (auto s = qp_.connect(opts_.rdma, psn, peer_.qp); !s) return std::unexpected(s.error());
  return peer_;
}

Status Link::ready() { return ch_.barrier(opts_.setup_timeout); }

uint64_t Link::load(size_t off) const {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(ctrl_.data() + off))
      .load(std::memory_order_acquire);
}

void Link::store(size_t off, uint64_t v) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(ctrl_.data() + off))
      .store(v, std::memory_order_release);
}

Status Link::die(Error e) {
  if (!dead_) dead_ = std::move(e);
  return std::unexpected(*dead_);
}

Status Link::check_peer() {
  const auto now = Clock::now();
  if (now < next_peer_check_) return {};
  return check_peer_now();
}

Status Link::check_peer_now() {
  const auto now = Clock::now();
  next_peer_check_ = now + std::chrono::milliseconds(1);
  pollfd p{ch_.fd(), POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return poll_events();
  // The peer sends nothing on the side channel after set-up: readable means it closed (exited).
  char c;
  ssize_t n = ::recv(ch_.fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return poll_events();
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return poll_events();
  return die(Error{fmt::format("msg {}: the peer is gone (its side channel closed{})", to_string(opts_.kind),
                               n < 0 ? fmt::format(": {}", std::strerror(errno)) : ""),
                   ECONNRESET});
}

Status Link::poll_events() {
  for (int i = 0; i < 16; ++i) {  // a few per look: events are rare, the caller looks again
    auto ev = events_.next();
    if (!ev) return die(ev.error());
    if (!*ev) return {};
    const AsyncEvent& a = **ev;
    if (a.qp_fatal() && a.qp_num == qp_.qpn())
      return die(
          Error{fmt::format("msg {}: the queue pair failed ({})", to_string(opts_.kind), a.name()), EIO});
    if (a.type == IBV_EVENT_SRQ_ERR && srq_ && a.srq == srq_->raw())
      return die(Error{
          fmt::format("msg {}: the shared receive queue failed ({})", to_string(opts_.kind), a.name()), EIO});
    if (a.type == IBV_EVENT_SRQ_LIMIT_REACHED && srq_ && a.srq == srq_->raw()) {
      ++stats_.srq_low;
      srq_armed_ = false;
    }
  }
  return {};
}

Status Link::arm_srq_limit() {
  if (!srq_ || srq_armed_) return {};
  if (auto s = srq_->arm_limit(std::max<uint32_t>(1, opts_.slots / 4)); !s) return die(s.error());
  srq_armed_ = true;
  return {};
}

Error Link::completion_error(Error e) {
  // A peer that died makes our work requests fail (its memory is gone: remote access errors; its
  // QP is gone: retries exceeded). Say so first when the side channel shows it, or the device's
  // async event that our QP went fatal. A dying process may release its verbs objects before its
  // socket (the kernel closes its descriptors one by one), so for the errors a death causes the
  // side channel gets kPeerExitGrace to show the close: a verdict of "the peer is gone", not a
  // raw remote access error, whichever of its descriptors closed first.
  if (peer_death_can_cause(e.code)) (void)ch_.peer_closed_within(kPeerExitGrace);
  if (auto gone = check_peer_now(); !gone) {
    dead_.reset();
    return Error{fmt::format("{} ({})", gone.error().message, e.message), gone.error().code};
  }
  return Error{fmt::format("msg {}: {}", to_string(opts_.kind), e.message), e.code};
}

Status Link::reap() {
  std::array<ibv_wc, 16> wcs;
  for (;;) {
    auto n = send_cq_.poll(wcs);
    if (!n) return die(n.error());
    for (int i = 0; i < *n; ++i) {
      const ibv_wc& wc = wcs[static_cast<size_t>(i)];
      if (auto s = check_completion(wc); !s) return die(completion_error(s.error()));
      --outstanding_;
      if (op_of(wc.wr_id) == Op::read) ++done_reads_;
      if (op_of(wc.wr_id) == Op::faa) ++done_faas_;
    }
    if (*n < static_cast<int>(wcs.size())) return {};
  }
}

Status Link::post(std::span<SendWr> wrs, Deadline d) {
  if (dead_) return std::unexpected(*dead_);
  if (outstanding_ + wrs.size() > sq_depth_) {
    const size_t need = wrs.size();
    if (auto s = wait_until([&] { return outstanding_ + need <= sq_depth_; }, d,
                            "waiting for room in the send queue");
        !s)
      return s;
  }
  if (auto s = qp_.post_send(wrs); !s) return die(s.error());
  outstanding_ += static_cast<uint32_t>(wrs.size());
  stats_.send_wrs += wrs.size();
  for (auto& w : wrs) {
    if (w.wr.opcode == IBV_WR_RDMA_READ) ++stats_.reads;
    if (w.wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ++stats_.atomics;
    if (op_of(w.wr.wr_id) == Op::ack) ++stats_.acks;
  }
  return {};
}

Status Link::post_recv(RecvWr& wr) {
  Status s = srq_ ? srq_->post_recv(wr) : qp_.post_recv(wr);
  if (!s) return die(s.error());
  ++stats_.recv_wrs;
  return {};
}

Status Link::flush(Deadline d) {
  return wait_until([&] { return outstanding_ == 0; }, d, "waiting for sends to complete");
}

Status Link::write_ack(Deadline d) {
  auto w = SendWr::write(ctrl_.local(ctrl::kReleasedMsgs, 16), peer_ctrl(ctrl::kAckedMsgs, 16),
                         make_wr_id(Op::ack, 0))
               .inlined();
  return post(w, d);
}

Status Link::wait_op(Op op, uint64_t target, Deadline d, const char* what) {
  const uint64_t& done = op == Op::read ? done_reads_ : done_faas_;
  return wait_until([&] { return done >= target; }, d, what);
}

Status Link::read_peer_ctrl(size_t off, uint32_t len, Deadline d) {
  return read(ctrl_.local(ctrl::kScratch, len), peer_ctrl(off, len), d);
}

Status Link::read(LocalBuf into, RemoteBuf from, Deadline d) {
  auto w = SendWr::read(into, from, make_wr_id(Op::read, 0));
  if (auto s = post(w, d); !s) return s;
  return wait_op(Op::read, ++posted_reads_, d, "waiting for an RDMA READ of the peer's counters");
}

Result<uint64_t> Link::fetch_add_peer(size_t off, uint64_t add, Deadline d) {
  return fetch_add(peer_ctrl(off, 8), add, d);
}

Result<uint64_t> Link::fetch_add(RemoteBuf at, uint64_t add, Deadline d, SendWr* before) {
  std::array<SendWr, 2> ws{
      SendWr::fetch_add(ctrl_.local(ctrl::kScratch, 8), at, add, make_wr_id(Op::faa, 0)),
      SendWr::fetch_add(ctrl_.local(ctrl::kScratch, 8), at, add, make_wr_id(Op::faa, 0))};
  std::span<SendWr> list(ws.data() + 1, 1);
  if (before) {
    ws[0] = *before;
    list = std::span<SendWr>(ws.data(), 2);
  }
  if (auto s = post(list, d); !s) return std::unexpected(s.error());
  if (auto s = wait_op(Op::faa, ++posted_faas_, d, "waiting for a FETCH_AND_ADD"); !s)
    return std::unexpected(s.error());
  return load(ctrl::kScratch);
}

Result<int> Link::poll_recv(std::span<ibv_wc> out) {
  auto n = recv_cq_.poll(out);
  if (!n) return std::unexpected(die(n.error()).error());
  return n;
}

Status Link::fence() { return qp_.to_error(); }

Result<ibv_wc> Link::next_recv(Deadline d) {
  const bool channel = opts_.wait != WaitMode::busy;
  for (unsigned spins = 0;; ++spins) {
    if (dead_) return std::unexpected(*dead_);
    if (recv_next_ < recv_have_) {
      const ibv_wc wc = recv_batch_[static_cast<size_t>(recv_next_++)];
      if (auto s = check_completion(wc); !s) return std::unexpected(die(completion_error(s.error())).error());
      return wc;
    }
    auto n = recv_cq_.poll(recv_batch_);
    if (!n) return std::unexpected(die(n.error()).error());
    if (*n > 0) {
      recv_have_ = *n;
      recv_next_ = 0;
      continue;
    }
    if (auto s = reap(); !s) return std::unexpected(s.error());
    if (channel || (spins & 255) == 255) {
      if (auto s = check_peer(); !s) {
        // A message that arrived just before the peer closed is still delivered.
        auto again = recv_cq_.poll(recv_batch_);
        if (again && *again > 0) {
          dead_.reset();
          recv_have_ = *again;
          recv_next_ = 0;
          continue;
        }
        return std::unexpected(s.error());
      }
      const auto now = Clock::now();
      if (now >= d)
        return fail_errno(fmt::format("msg {}: waiting for a message", to_string(opts_.kind)), ETIMEDOUT);
      if (channel) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - now);
        auto w = recv_cq_.wait(recv_batch_, WaitMode::channel,
                               std::clamp(left, milliseconds(1), milliseconds(10)));
        if (!w) return std::unexpected(die(w.error()).error());
        recv_have_ = *w;
        recv_next_ = 0;
      } else if (spins > 20000) {
        std::this_thread::yield();
      }
    }
  }
}

}  // namespace weft::msg
