#pragma once
// What every connection type is built on: one RC QP with its CQs, the side channel that set it up
// (kept open to notice a peer that dies), a small registered control block, and the waiting
// loops that honour deadlines and surface errors. Internal to src/msg.
//
// Control block (64 bytes, 8-byte words): the peer WRITEs or READs these, the local CPU reads
// them with acquire loads (an aligned 8-byte RDMA placement is seen whole on x86; the counters
// only grow, so a stale value only delays, never over-grants).
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "msg/connection.hpp"
#include "msg/hello.hpp"
#include "rdma/async_events.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/device.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/protection_domain.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/shared_receive_queue.hpp"

namespace weft::msg {

namespace ctrl {
inline constexpr size_t kAckedMsgs = 0;       // peer WRITEs: messages of ours it released
inline constexpr size_t kAckedBytes = 8;      // peer WRITEs: ring bytes of ours it released
inline constexpr size_t kReserve = 16;        // peer FETCH_AND_ADDs: reservations in our ring
inline constexpr size_t kReleasedMsgs = 24;   // we write: messages we released (peer READs or gets)
inline constexpr size_t kReleasedBytes = 32;  // we write: ring bytes we released
inline constexpr size_t kScratch = 40;        // landing place of our READs (16 bytes) and FAAs
inline constexpr size_t kRecvSink = 56;       // zero-length receives point here
inline constexpr size_t kSize = 64;
}  // namespace ctrl

// What a completed send-side work request was (top byte of wr_id).
enum class Op : uint8_t { data = 1, ack = 2, read = 3, faa = 4, announce = 5 };
inline uint64_t make_wr_id(Op op, uint64_t n) {
  return (uint64_t{static_cast<uint8_t>(op)} << 56) | (n & 0xffffffffffffffull);
}
inline Op op_of(uint64_t wr_id) { return static_cast<Op>(wr_id >> 56); }

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

class Link {
 public:
  // Opens the device, makes PD, CQs, the QP (on an SRQ of o.slots receives when use_srq) and the
  // control block. Memory the type needs is registered next (pd()), then handshake().
  static Result<std::unique_ptr<Link>> create(rdma::SideChannel channel, const Options& o, uint32_t sq_depth,
                                              uint32_t rq_depth, bool use_srq);

  const rdma::ProtectionDomain& pd() const { return pd_; }
  rdma::QueuePair& qp() { return qp_; }
  rdma::SharedReceiveQueue* srq() { return srq_ ? &*srq_ : nullptr; }
  const Options& options() const { return opts_; }
  Stats& stats() { return stats_; }
  const Stats& stats() const { return stats_; }
  int event_fd() const;

  // Exchanges hellos (ours gets the QP address and control block filled in), checks the peer's
  // is compatible and connects the QP. Post receives after this, then call ready().
  Result<Hello> handshake(Hello mine);
  // Both ends have posted their receives: from here on either may send.
  Status ready();
  const Hello& peer() const { return peer_; }

  uint64_t load(size_t off) const;
  void store(size_t off, uint64_t v);
  rdma::LocalBuf ctrl_local(size_t off, uint32_t len) const { return ctrl_.local(off, len); }
  rdma::RemoteBuf peer_ctrl(size_t off, uint32_t len) const {
    return {peer_.ctrl.addr + off, peer_.ctrl.rkey, len};
  }

  // Posts one WR (or a list) on the send queue, first waiting for room in it. Counts it in stats.
  Status post(std::span<rdma::SendWr> wrs, Deadline d);
  Status post(rdma::SendWr& wr, Deadline d) { return post(std::span<rdma::SendWr>(&wr, 1), d); }
  Status post_recv(rdma::RecvWr& wr);

  // Sends our released counters (kReleasedMsgs, kReleasedBytes) into the peer's kAckedMsgs/Bytes:
  // one inline 16-byte WRITE, so the values are copied at post time.
  Status write_ack(Deadline d);
  // RDMA-READs from the peer into local memory and waits for the data.
  Status read(rdma::LocalBuf into, rdma::RemoteBuf from, Deadline d);
  // READs len bytes of the peer's control block at off into our scratch and waits for them.
  Status read_peer_ctrl(size_t off, uint32_t len, Deadline d);
  // FETCH_AND_ADD on the peer's control word at off; the old value.
  Result<uint64_t> fetch_add_peer(size_t off, uint64_t add, Deadline d);
  // FETCH_AND_ADD on any 8-byte word of the peer (landing in our scratch); `before`, if given, is
  // posted in the same list just ahead of it (RC executes them in order at the peer).
  Result<uint64_t> fetch_add(rdma::RemoteBuf at, uint64_t add, Deadline d, rdma::SendWr* before = nullptr);

  // Waits until every send-side work request posted so far has completed.
  Status flush(Deadline d);
  // Takes send completions that are there (errors end the connection).
  Status reap();
  // Waits until pred() holds: spinning, reaping send completions, watching the peer and the
  // deadline; `what` names the wait in the timeout error.
  template <typename Pred>
  Status wait_until(Pred pred, Deadline d, const char* what);
  // The next receive completion (checked for errors), or a timeout / peer error.
  Result<ibv_wc> next_recv(Deadline d);
  // Takes the receive completions that are there, unchecked (the shared-ring receiver polls many
  // links and judges each completion itself; it also drains a link that died). An error polling
  // the CQ kills the link.
  Result<int> poll_recv(std::span<ibv_wc> out);
  // Moves our QP to the error state: nothing the peer still sends lands after this (a gone
  // sender of a shared ring is fenced off before its hole is skipped).
  Status fence();

  // Non-null once the connection died: the error every later call returns.
  const std::optional<Error>& dead() const { return dead_; }
  Status die(Error e);
  // Whether the peer is still there (its side channel open) and our QP has not gone fatal (the
  // device's async events, which also count SRQ low-water events).
  Status check_peer();      // at most once a millisecond
  Status check_peer_now();  // now
  // send-recv-srq: (re-)arms the SRQ's low-water event at slots/4 receives (it fires once).
  Status arm_srq_limit();

 private:
  Error completion_error(Error e);
  static constexpr std::chrono::milliseconds kPeerExitGrace{500};
  Status poll_events();

 public:
 private:
  Link(rdma::SideChannel ch, Options o, rdma::Device dev, rdma::ProtectionDomain pd,
       rdma::CompletionQueue scq, rdma::CompletionQueue rcq, std::optional<rdma::SharedReceiveQueue> srq,
       rdma::QueuePair qp, rdma::MemoryRegion ctrl, uint32_t sq_depth, rdma::AsyncEvents events)
      : ch_(std::move(ch)),
        opts_(std::move(o)),
        dev_(std::move(dev)),
        pd_(std::move(pd)),
        send_cq_(std::move(scq)),
        recv_cq_(std::move(rcq)),
        srq_(std::move(srq)),
        qp_(std::move(qp)),
        ctrl_(std::move(ctrl)),
        sq_depth_(sq_depth),
        events_(std::move(events)) {}
  Status wait_op(Op op, uint64_t target, Deadline d, const char* what);

  rdma::SideChannel ch_;
  Options opts_;
  rdma::Device dev_;
  rdma::ProtectionDomain pd_;
  rdma::CompletionQueue send_cq_, recv_cq_;
  std::optional<rdma::SharedReceiveQueue> srq_;
  rdma::QueuePair qp_;
  rdma::MemoryRegion ctrl_;
  uint32_t sq_depth_;
  rdma::AsyncEvents events_;  // this Link's own device context: only its QP/SRQ report here
  bool srq_armed_ = false;
  uint32_t outstanding_ = 0;  // posted send WRs not yet completed
  uint64_t posted_reads_ = 0, done_reads_ = 0, posted_faas_ = 0, done_faas_ = 0;
  std::array<ibv_wc, 16> recv_batch_{};
  int recv_have_ = 0, recv_next_ = 0;
  Hello peer_{};
  Stats stats_{};
  std::optional<Error> dead_;
  Clock::time_point next_peer_check_{};
};

template <typename Pred>
Status Link::wait_until(Pred pred, Deadline d, const char* what) {
  for (unsigned spins = 0;; ++spins) {
    if (dead_) return std::unexpected(*dead_);
    if (pred()) return {};
    if (auto s = reap(); !s) return s;
    if ((spins & 255) == 255) {
      if (Clock::now() >= d)
        return fail_errno(fmt::format("msg {}: {}", to_string(opts_.kind), what), ETIMEDOUT);
      if (auto s = check_peer(); !s) return s;
      // Two processes spinning on two (virtual) CPUs starve the one that must make progress:
      // after a while of spinning, give the CPU away between looks.
      if (spins > 20000) std::this_thread::yield();
    }
  }
}

}  // namespace weft::msg
