#include "rdma/double_mapped_buffer.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/fd.hpp"

namespace weft::rdma {

Result<DoubleMappedBuffer> DoubleMappedBuffer::create(size_t size) {
  const long page = sysconf(_SC_PAGESIZE);
  if (size == 0 || page <= 0 || size % static_cast<size_t>(page) != 0)
    return fail("double-mapped buffer: {} bytes is not a positive multiple of the page size {}", size, page);
  if (size > (size_t{1} << 40)) return fail("double-mapped buffer: {} bytes is too large", size);
  Fd fd(memfd_create("weft-ring", MFD_CLOEXEC));
  if (!fd.valid()) return fail_errno("memfd_create (double-mapped buffer)");
  if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
    return fail_errno(fmt::format("ftruncate memfd to {} bytes", size));
  void* base = mmap(nullptr, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return fail_errno(fmt::format("mmap reserve {} bytes", 2 * size));
  auto* b = static_cast<std::byte*>(base);
  for (int half = 0; half < 2; ++half) {
    void* at = mmap(b + half * size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd.get(), 0);
    if (at == MAP_FAILED) {
      int err = errno;
      munmap(base, 2 * size);
      return fail_errno(fmt::format("mmap memfd half {} of the double-mapped buffer", half), err);
    }
  }
  // The mappings keep the memfd's pages; the descriptor itself is no longer needed.
  return DoubleMappedBuffer(b, size);
}

DoubleMappedBuffer::DoubleMappedBuffer(DoubleMappedBuffer&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), size_(std::exchange(o.size_, 0)) {}

DoubleMappedBuffer& DoubleMappedBuffer::operator=(DoubleMappedBuffer&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(base_, 2 * size_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

DoubleMappedBuffer::~DoubleMappedBuffer() {
  if (base_) munmap(base_, 2 * size_);
}

}  // namespace weft::rdma
