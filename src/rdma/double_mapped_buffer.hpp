#pragma once
// A "magic" ring buffer: size bytes of memory (from memfd_create) mapped twice, back to back, so
// data()[size + i] is data()[i]. A ring written at any offset with any length <= size never has
// to be split at the end: the second mapping carries the wrap. Register all 2 * size bytes as one
// memory region so a peer's RDMA WRITE may run over the end too.
//
// Built as: reserve 2 * size of address space (PROT_NONE), then map the memfd MAP_FIXED over
// each half, so no other mapping can slip in between the two (KnowYourMemory's SysV variant
// unmaps a reservation before attaching, which races with other threads).
#include <cstddef>
#include <span>

#include "base/result.hpp"

namespace weft::rdma {

class DoubleMappedBuffer {
 public:
  // size: a positive multiple of the page size.
  static Result<DoubleMappedBuffer> create(size_t size);

  DoubleMappedBuffer(DoubleMappedBuffer&& o) noexcept;
  DoubleMappedBuffer& operator=(DoubleMappedBuffer&& o) noexcept;
  DoubleMappedBuffer(const DoubleMappedBuffer&) = delete;
  DoubleMappedBuffer& operator=(const DoubleMappedBuffer&) = delete;
  ~DoubleMappedBuffer();

  std::byte* data() const { return base_; }
  size_t size() const { return size_; }  // the ring's size; the mapping is twice as long
  std::span<std::byte> mapped() const { return {base_, 2 * size_}; }

 private:
  DoubleMappedBuffer(std::byte* base, size_t size) : base_(base), size_(size) {}
  std::byte* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace weft::rdma
