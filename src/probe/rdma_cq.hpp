#pragma once
// The probe endpoint's completion queue: always an extended CQ (ibv_create_cq_ex), with NIC
// completion timestamps when the device has a clock, drained in batches with ibv_start_poll /
// ibv_next_poll / ibv_end_poll until it is empty. (The seed polled 16 completions per wake-up and
// left the rest, so its responder stalled after 16 pings.) Every completion also gets the
// CLOCK_MONOTONIC time at which it was read: the software stamp when there is no NIC clock.
//
// Soft-RoCE (rxe) quirk: with the documented start/next.../end sequence the engine read stale
// completions on rxe (send completions for wr_ids that had completed already). The likely cause
// (inferred from that symptom) is that rxe's provider advances its consumer index both when
// ibv_next_poll finds the queue empty and again in ibv_end_poll. On rxe each pass therefore reads
// one completion (start_poll, end_poll) and the drain loop starts the next pass; other providers
// use ibv_next_poll.
//
// src/rdma's CompletionQueue only makes extended CQs when timestamps exist (on rxe it polls with
// ibv_poll_cq), so the probe engine keeps its own, and adopts its QP into rdma::QueuePair.
#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>

#include "base/result.hpp"
#include "probe/rdma_rtt.hpp"
#include "rdma/completion_channel.hpp"
#include "rdma/device.hpp"

namespace weft::probe {

struct RdmaCompletion {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  uint32_t byte_len = 0;
  uint32_t src_qp = 0;
  CompletionStamp stamp;
};

class RdmaCq {
 public:
  // timestamps: ask for IBV_WC_EX_WITH_COMPLETION_TIMESTAMP (only when the device has a clock).
  static Result<RdmaCq> create(const rdma::Device& dev, int depth, bool timestamps,
                               std::shared_ptr<rdma::CompletionChannel> channel);

  ibv_cq* raw() const { return ibv_cq_ex_to_cq(ex_.get()); }
  const std::shared_ptr<ibv_cq_ex>& shared() const { return ex_; }
  bool timestamps() const { return timestamps_; }
  bool single_step() const { return single_step_; }
  int depth() const { return depth_; }
  rdma::CompletionChannel* channel() const { return channel_.get(); }

  // Reads up to out.size() completions (one start/next/end pass); 0 when the CQ is empty.
  // Callers loop until it returns less than out.size(): there is no cap on how many are drained.
  Result<size_t> poll(std::span<RdmaCompletion> out);
  // ibv_req_notify_cq for the next completion.
  Status arm();

 private:
  RdmaCq(std::shared_ptr<rdma::CompletionChannel> ch, std::shared_ptr<ibv_cq_ex> ex, bool ts, int depth,
         bool single)
      : channel_(std::move(ch)), ex_(std::move(ex)), timestamps_(ts), single_step_(single), depth_(depth) {}
  std::shared_ptr<rdma::CompletionChannel> channel_;  // first: destroyed after the CQ
  std::shared_ptr<ibv_cq_ex> ex_;
  bool timestamps_ = false;
  bool single_step_ = false;
  int depth_ = 0;
};

}  // namespace weft::probe
