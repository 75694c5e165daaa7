#pragma once
// The timed runs of `weft rdma bench` on one side of a link (rdma_bench_link.hpp made it):
// perftest's latency loops (rdma_bench_latency.cpp) and bandwidth loops (rdma_bench_stream.cpp),
// and what both stand on: receives, work requests, and waiting for completions while watching
// the peer's side channel (rdma_bench_runs.cpp). cmd_rdma_bench.cpp sets a Bench up, runs it per
// size and prints the rows.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "cli/rdma_bench_options.hpp"
#include "cli/rdma_bench_params.hpp"
#include "cli/rdma_bench_stats.hpp"
#include "rdma/address_handle.hpp"
#include "rdma/completion_queue.hpp"
#include "rdma/completion_waiter.hpp"
#include "rdma/device.hpp"
#include "rdma/endpoint_info.hpp"
#include "rdma/memory_region.hpp"
#include "rdma/queue_pair.hpp"
#include "rdma/shared_receive_queue.hpp"
#include "rdma/side_channel.hpp"

namespace weft::cli {

struct Bench {
  using milliseconds = std::chrono::milliseconds;

  const BenchOptions& o;
  const BenchPlan& plan;
  BenchParams p;
  bool active;  // the client drives; the server answers ping-pongs or receives
  milliseconds timeout;
  rdma::SideChannel& chan;
  rdma::Device dev;
  std::vector<rdma::QueuePair> qps;  // -q: several; latency tests use the first
  rdma::MemoryRegion mr;
  rdma::CompletionQueue& cq;
  rdma::CompletionWaiter& waiter;
  // Busy polling, where this side receives SEND/WRITE_IMM messages: the receives' own CQ, polled
  // beside cq as perftest polls its recv_cq beside its send_cq. Null: receives complete in cq.
  rdma::CompletionQueue* rcq;
  std::optional<rdma::AddressHandle> ah;
  rdma::EndpointInfo peer;                  // the peer's first QP (and its buffer, the same for all)
  std::vector<rdma::EndpointInfo> peers{};  // every QP of the peer, qps[i] connected to peers[i]
  std::unordered_map<uint32_t, uint32_t> qp_of_num{};  // QP number -> index into qps
  std::optional<rdma::SharedReceiveQueue> srq{};       // --use-srq: every QP's receives
  size_t buf = 0;         // [0, buf): what we send/read into; [buf, 2 buf): what the peer targets
  uint32_t recv_off = 0;  // UD: the GRH before the payload
  uint32_t inline_max = 0;
  uint32_t rx_depth = 0;
  std::vector<rdma::RecvWr> recvs{};
  std::array<ibv_wc, 64> wcs{};
  uint64_t received = 0;              // server: messages received in the last bandwidth run
  uint64_t sent = 0;                  // messages the last stream() sent
  std::string unsorted{};             // -U: the last latency run's samples in the order taken
  std::vector<SecondRate> seconds{};  // --per-second: the last bandwidth run's
  uint32_t sends_out = 0;             // latency: signalled sends not completed yet
  uint32_t recvs_used = 0;            // latency: receives consumed and not posted again

  std::byte* local() const { return mr.data(); }
  std::byte* target() const { return mr.data() + buf; }
  // Messages a bandwidth run sends from one side: -n per QP, as perftest counts them.
  uint64_t per_run() const { return p.iters * qps.size(); }

  // --- what the runs stand on (rdma_bench_runs.cpp) ----------------------------------------
  // Receives take the whole target half, so any size of the sweep fits whichever is posted.
  Status post_recvs(uint32_t n, uint64_t size, size_t qi = 0);
  size_t qp_index(const ibv_wc& wc) const;
  rdma::SendWr make_wr(uint64_t size);
  // check_completion, but an error a dying peer causes (a killed server's QP and memory may go
  // before its socket) is reported as the peer being gone when its side channel closes within
  // half a second, not only as the raw status (IBV_WC_REM_OP_ERR, retries exceeded...).
  Status checked(const ibv_wc& wc);
  // Whether the peer's side channel shows it closed (its process died; bytes it sent before, a
  // barrier it reached first, do not count). Looked at between waits, so a dead peer ends a
  // wait at once instead of when the wait's limit expires (rxe retries a WRITE to a dead QP
  // for longer than --timeout-ms).
  Status peer_alive();
  // Waits for completions; a peer that closes the side channel ends the wait with an error.
  Result<int> wait_cq() { return wait_cq(timeout); }
  Result<int> wait_cq(milliseconds limit);
  // One ibv_poll_cq, the plain verb perftest polls with: the bench's CQ has no timestamps, so
  // CompletionQueue::poll does not go through the extended API (which reads every field of each
  // completion: slower on rxe).
  // With a receive CQ, both are polled into wcs.
  Result<int> poll_plain();
  // Receives only (the server's sink, the drain after -b): up to `limit` for at least one; 0 when
  // none came. From the receive CQ when there is one, else through the waiter.
  Result<int> wait_recvs(milliseconds limit);

  // --- latency (rdma_bench_latency.cpp) -------------------------------------------------------
  // SEND, WRITE_IMM, WRITE: ping-pong. Each message carries its sequence number (1-255) in the
  // last byte and a "last message" flag in the first; the server echoes until it sees the flag.
  // WRITE is received by polling the last byte of the target buffer, like ib_write_lat.
  Result<LatencyReport> pingpong(uint64_t size);
  // READ and atomics: post one, wait for its completion, repeat (a full round trip each).
  Result<LatencyReport> round_trips(uint64_t size);
  // Takes what completions there are (blocking in the wait mode if `block`); true if a receive
  // was among them.
  Result<bool> reap(bool block);

  // --- bandwidth (rdma_bench_stream.cpp) ------------------------------------------------------
  // The client keeps tx_depth WRs outstanding, signals every cq_mod-th (and the last), stamps
  // each post and each signalled completion (perftest's tposted/tcompleted).
  // -q N, as perftest: each QP has its own count of posted and completed messages (-n each), keeps
  // at most tx_depth in flight and signals every cq_mod-th of its own; the QPs are served in
  // turn. The stamps are kept in time order, as perftest's tposted/tcompleted: posted[k] is the
  // k-th post, completed[k - 1] the time the k-th message (of any QP) was known complete.
  Result<BandwidthReport> stream(uint64_t size);
  // --perform_warm_up: tx_depth WRs, the last one signalled, untimed, before the timed run
  // (perftest's perform_warm_up: caches and the device's translation tables are warm when the
  // clock starts).
  Status warm_up(uint64_t size);
  // One receive taken during a stream: counted and posted again at once, as perftest's
  // run_iter_bw_server does (one ibv_post_recv per completion), so each QP keeps rx_depth
  // receives posted and the poll loop never stops for a burst of posts. (Giving receives back in
  // batches of rx_depth / 4 per QP cost -q 2 and -b SEND bandwidth: docs/BENCHMARKS.md.)
  Status took_recv(const ibv_wc& wc);
  // -b with SEND/WRITE_IMM, after this side's stream: tells the peer how many messages it sent (8
  // bytes on the side channel) and takes the peer's until its count is in (RC), or until 200 ms
  // pass without one once the count is known (UD and UC may lose some).
  Status drain_peer();
  // Server side of SEND / WRITE_IMM bandwidth: take receives until all came (RC) or the client
  // says it is done (its barrier byte on the side channel; UD may lose some).
  Status sink();
};

}  // namespace weft::cli
