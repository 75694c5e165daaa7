#pragma once
// An address handle (ibv_ah): the destination of UD sends.
#include <infiniband/verbs.h>

#include <memory>

#include "base/result.hpp"
#include "rdma/connect_options.hpp"
#include "rdma/protection_domain.hpp"

namespace weft::rdma {

class AddressHandle {
 public:
  static Result<AddressHandle> create(const ProtectionDomain& pd, const ConnectOptions& o,
                                      const ibv_gid& dgid, uint16_t dlid = 0);
  ibv_ah* raw() const { return ah_.get(); }

 private:
  explicit AddressHandle(std::shared_ptr<ibv_ah> ah) : ah_(std::move(ah)) {}
  std::shared_ptr<ibv_ah> ah_;
};

}  // namespace weft::rdma
