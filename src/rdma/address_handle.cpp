#include "rdma/address_handle.hpp"

#include <cerrno>

#include "base/log.hpp"
#include "rdma/error.hpp"
#include "rdma/gid_table.hpp"

namespace weft::rdma {

Result<AddressHandle> AddressHandle::create(const ProtectionDomain& pd, const ConnectOptions& o,
                                            const ibv_gid& dgid, uint16_t dlid) {
  ibv_ah_attr attr = make_ah_attr(o, dgid, dlid);
  errno = 0;
  ibv_ah* ah = ibv_create_ah(pd.raw(), &attr);
  if (!ah) return verb_error("ibv_create_ah to " + gid_to_string(dgid), errno ? errno : EINVAL);
  auto pdp = pd.shared();
  return AddressHandle(std::shared_ptr<ibv_ah>(ah, [pdp](ibv_ah* a) {
    if (int rc = ibv_destroy_ah(a)) log().warn("ibv_destroy_ah: errno {}", rc);
  }));
}

}  // namespace weft::rdma
