#pragma once
// Keeps a controller's in-memory mesh and agent list in step with the other controllers (replicas)
// sharing its store: a thread polls the store's feed of what they took in (Store::poll_peers,
// controller/redis_feed.hpp) every kPollInterval and applies it to the Mesh as if it had come
// here. With it the mesh, the suspects and the pinglists are the same whichever replica answers.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "base/result.hpp"
#include "controller/mesh.hpp"
#include "controller/store.hpp"

namespace weft::controller {

// One event of another replica applied to this one's mesh: a report's windows and last-seen, a
// registration (parsed as POST /api/v1/register parses it), a removal.
void apply_peer_event(Mesh& mesh, const PeerEvent& ev);

class ReplicaSync {
 public:
  static constexpr std::chrono::milliseconds kPollInterval{100};

  ReplicaSync(Mesh& mesh, Store& store) : mesh_(mesh), store_(store) {}
  ~ReplicaSync() { stop(); }
  ReplicaSync(const ReplicaSync&) = delete;
  ReplicaSync& operator=(const ReplicaSync&) = delete;

  // Applies what the other replicas did since the last poll; how many events.
  Result<size_t> poll_once();
  // Since when (Unix ns) the feed has been read without a failed poll: 0 from the start, INT64_MAX
  // while polls fail (the store away), then the time of the first poll that worked again. The
  // sweep does not count silence the feed could not carry (Mesh::sweep).
  int64_t feed_trusted_since_ns() const { return trusted_since_ns_.load(std::memory_order_relaxed); }
  void start();
  void stop();

 private:
  void run();
  Mesh& mesh_;
  Store& store_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> trusted_since_ns_{0};
};

}  // namespace weft::controller
