#pragma once
// A registered memory region (ibv_mr) over caller memory or over a buffer it owns (page-aligned,
// zeroed). Slices of it describe the local side (addr, length, lkey) and the remote side
// (addr, rkey) of work requests.
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/result.hpp"
#include "rdma/protection_domain.hpp"

namespace weft::rdma {

// Local memory for a scatter/gather entry.
struct LocalBuf {
  void* addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// Remote memory for RDMA WRITE/READ/atomics: what a peer sends over the side channel.
struct RemoteBuf {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

namespace access {
inline constexpr int local = IBV_ACCESS_LOCAL_WRITE;
inline constexpr int remote_write = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
inline constexpr int remote_read = IBV_ACCESS_REMOTE_READ;
inline constexpr int all =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
}  // namespace access

class MemoryRegion {
 public:
  // Registers caller memory; the caller keeps it alive longer than the region.
  static Result<MemoryRegion> register_memory(const ProtectionDomain& pd, void* addr, size_t len,
                                              int access_flags = access::all);
  // Allocates a zeroed page-aligned buffer of len bytes and registers it.
  static Result<MemoryRegion> allocate(const ProtectionDomain& pd, size_t len,
                                       int access_flags = access::all);

  std::byte* data() const { return static_cast<std::byte*>(mr_->addr); }
  size_t size() const { return mr_->length; }
  std::span<std::byte> bytes() const { return {data(), size()}; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  int access_flags() const { return access_; }
  ibv_mr* raw() const { return mr_.get(); }

  static constexpr size_t kToEnd = SIZE_MAX;
  // [offset, offset+len) as the local side of a WR (len 0 is a zero-length WR).
  LocalBuf local(size_t offset = 0, size_t len = kToEnd) const;
  // [offset, offset+len) as a remote target for a peer.
  RemoteBuf remote(size_t offset = 0, size_t len = kToEnd) const;

 private:
  MemoryRegion(std::shared_ptr<ibv_mr> mr, int access) : mr_(std::move(mr)), access_(access) {}
  std::shared_ptr<ibv_mr> mr_;
  int access_;
};

}  // namespace weft::rdma
