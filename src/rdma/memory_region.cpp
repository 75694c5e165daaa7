#include "rdma/memory_region.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

namespace {
Result<std::shared_ptr<ibv_mr>> reg(const ProtectionDomain& pd, void* addr, size_t len, int flags,
                                    std::shared_ptr<void> owned) {
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(pd.raw(), addr, len, flags);
  if (!mr)
    return verb_error(fmt::format("ibv_reg_mr {} bytes access 0x{:x}", len, flags), errno ? errno : ENOMEM);
  // Deregister before the PD goes and before an owned buffer is unmapped (owned is released after).
  auto pdp = pd.shared();
  return std::shared_ptr<ibv_mr>(mr, [pdp, owned](ibv_mr* m) {
    if (int rc = ibv_dereg_mr(m)) log().warn("ibv_dereg_mr: errno {}", rc);
  });
}
}  // namespace

Result<MemoryRegion> MemoryRegion::register_memory(const ProtectionDomain& pd, void* addr, size_t len,
                                                   int access_flags) {
  auto mr = reg(pd, addr, len, access_flags, nullptr);
  if (!mr) return std::unexpected(mr.error());
  return MemoryRegion(std::move(*mr), access_flags);
}

Result<MemoryRegion> MemoryRegion::allocate(const ProtectionDomain& pd, size_t len, int access_flags) {
  if (len == 0) return fail("MemoryRegion::allocate: zero length");
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fail_errno(fmt::format("mmap {} bytes", len));
  std::shared_ptr<void> owned(p, [len](void* q) { munmap(q, len); });
  auto mr = reg(pd, p, len, access_flags, std::move(owned));
  if (!mr) return std::unexpected(mr.error());
  return MemoryRegion(std::move(*mr), access_flags);
}

LocalBuf MemoryRegion::local(size_t offset, size_t len) const {
  if (len == kToEnd) len = size() - offset;
  return LocalBuf{data() + offset, static_cast<uint32_t>(len), lkey()};
}

RemoteBuf MemoryRegion::remote(size_t offset, size_t len) const {
  if (len == kToEnd) len = size() - offset;
  return RemoteBuf{reinterpret_cast<uint64_t>(data() + offset), rkey(), static_cast<uint32_t>(len)};
}

}  // namespace weft::rdma
