#pragma once
// An extended completion queue (ibv_create_cq_ex) whose completions carry what a UD endpoint needs:
// byte length, source QP and, when the device has a clock, the NIC completion timestamp. Drained in
// batches with ibv_start_poll / ibv_next_poll / ibv_end_poll; every completion of one poll() call
// also gets one CLOCK_MONOTONIC stamp, taken when the first was read (the software stamp when there
// is no NIC clock).
//
// weft's one timestamped CQ: the probe engine needs a poll stamp on every completion, the NIC's
// stamp where there is one, and the same extended poll path on every device, rxe included.
// CompletionQueue (completion_queue.hpp) is the classic ibv_wc queue of message connections.
//
// Soft-RoCE (rxe) quirk: with the documented start/next.../end sequence the probe engine read stale
// completions on rxe (send completions for wr_ids that had completed already). The likely cause
// (inferred from that symptom) is that rxe's provider advances its consumer index both when
// ibv_next_poll finds the queue empty and again in ibv_end_poll. On rxe each pass therefore reads
// one completion (start_poll, end_poll) and poll() starts the next pass; other providers use
// ibv_next_poll.
#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>

#include "base/result.hpp"
#include "rdma/completion_channel.hpp"
#include "rdma/device.hpp"

namespace weft::rdma {

struct WorkCompletion {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  uint32_t byte_len = 0;
  uint32_t src_qp = 0;
  uint64_t nic_ticks = 0;    // raw NIC completion timestamp; 0 without timestamps
  int64_t poll_mono_ns = 0;  // CLOCK_MONOTONIC when the poll pass holding it found it
};

class ExtendedCq {
 public:
  // timestamps: ask for IBV_WC_EX_WITH_COMPLETION_TIMESTAMP; "completion timestamps not supported
  // by <dev>" where the device has no clock (rxe), asked first: such drivers may accept the flag
  // and return zeros.
  // channel: for sleeping until the next completion (arm(), then the channel's fd), else null.
  static Result<ExtendedCq> create(const Device& dev, int depth, bool timestamps,
                                   std::shared_ptr<CompletionChannel> channel = nullptr);

  ibv_cq* raw() const { return ibv_cq_ex_to_cq(ex_.get()); }
  // Owns the CQ; a QP made on it (QueuePair::create) holds a share so the CQ outlives it.
  std::shared_ptr<ibv_cq> shared() const { return std::shared_ptr<ibv_cq>(ex_, raw()); }
  bool timestamps() const { return timestamps_; }
  bool single_step() const { return single_step_; }
  int depth() const { return depth_; }
  CompletionChannel* channel() const { return channel_.get(); }

  // Reads up to out.size() completions; 0 when the CQ is empty. Callers loop until it returns
  // less than out.size(): there is no cap on how many are drained.
  Result<size_t> poll(std::span<WorkCompletion> out);
  // ibv_req_notify_cq for the next completion.
  Status arm();

 private:
  ExtendedCq(std::shared_ptr<CompletionChannel> ch, std::shared_ptr<ibv_cq_ex> ex, bool ts, int depth,
             bool single)
      : channel_(std::move(ch)), ex_(std::move(ex)), timestamps_(ts), single_step_(single), depth_(depth) {}
  std::shared_ptr<CompletionChannel> channel_;  // first: destroyed after the CQ
  std::shared_ptr<ibv_cq_ex> ex_;
  bool timestamps_ = false;
  bool single_step_ = false;
  int depth_ = 0;
};

}  // namespace weft::rdma
