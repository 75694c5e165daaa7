#pragma once
// The agent's outbox: finished windows waiting to reach the controller, delivered oldest first.
//
// Batches stay in memory up to `memory_windows`; beyond that the oldest batches are written to
// the spool directory (one file per batch, written to a temporary name and renamed, so a crash
// never leaves half a batch), up to `spool_max_bytes`; beyond that the oldest spooled batch is
// dropped and counted. Spooled batches survive an agent restart. Without a spool directory the
// oldest in-memory batches are dropped instead.
//
// A batch the controller refuses as malformed (it can never take it, and it would block every batch
// behind it) is set aside: kept in `<spool>/refused/` for an operator to look at, bounded by a
// quarter of the spool's size, counted, never retried.
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "proto/window_stats.hpp"

namespace weft::agent {

struct OutboxLimits {
  std::string spool_dir;  // "" = memory only
  size_t memory_windows = 50'000;
  uint64_t spool_max_bytes = 256ull << 20;
};

struct Batch {
  uint64_t seq = 0;
  std::vector<proto::WindowStats> windows;
};

class Outbox {
 public:
  explicit Outbox(OutboxLimits limits);
  // Creates the spool directory and picks up batches a previous run left there.
  Status open();

  void push(std::vector<proto::WindowStats> windows);
  // The oldest batch (read back from disk if it was spooled); nullopt when empty.
  std::optional<Batch> front();
  // Removes the batch front() returned (delivered, or undeliverable and counted as dropped).
  void pop(uint64_t seq, bool dropped = false);
  // Moves the batch front() returned out of the queue into the refused folder; returns the file it
  // is kept in, or "" when there is no spool directory (then it is counted as dropped).
  std::string set_aside(uint64_t seq);

  // On shutdown: moves every in-memory batch to the spool (no-op without a spool directory).
  void spill_all();

  uint64_t pending_windows() const;
  uint64_t spooled_batches() const;
  uint64_t dropped_windows() const;
  uint64_t refused_windows() const;

 private:
  struct OnDisk {
    uint64_t seq;
    uint64_t bytes;
    uint64_t windows;
  };
  std::string path_of(uint64_t seq) const;
  void spill_locked(uint64_t keep_in_memory);

  OutboxLimits lim_;
  mutable std::mutex mu_;
  std::deque<Batch> mem_;
  std::deque<OnDisk> disk_;  // always older than everything in mem_
  uint64_t mem_windows_ = 0;
  uint64_t disk_bytes_ = 0;
  uint64_t disk_windows_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t dropped_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace weft::agent
