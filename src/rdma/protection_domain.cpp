#include "rdma/protection_domain.hpp"

#include <cerrno>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

Result<ProtectionDomain> ProtectionDomain::create(const Device& dev) {
  errno = 0;
  ibv_pd* pd = ibv_alloc_pd(dev.raw());
  if (!pd) return verb_error("ibv_alloc_pd " + dev.name(), errno ? errno : ENOMEM);
  // The deleter holds the context so the device outlives every PD made on it.
  auto ctx = dev.shared();
  std::shared_ptr<ibv_pd> p(pd, [ctx](ibv_pd* x) {
    if (int rc = ibv_dealloc_pd(x)) log().warn("ibv_dealloc_pd: errno {} (objects still use it)", rc);
  });
  return ProtectionDomain(dev, std::move(p));
}

}  // namespace weft::rdma
