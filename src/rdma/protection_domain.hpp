#pragma once
// A protection domain (ibv_pd). Memory regions, queue pairs, SRQs and address handles made
// from it share it, and through it the device.
#include <infiniband/verbs.h>

#include <memory>

#include "base/result.hpp"
#include "rdma/device.hpp"

namespace weft::rdma {

class ProtectionDomain {
 public:
  static Result<ProtectionDomain> create(const Device& dev);

  ibv_pd* raw() const { return pd_.get(); }
  const std::shared_ptr<ibv_pd>& shared() const { return pd_; }
  const Device& device() const { return dev_; }

 private:
  ProtectionDomain(Device dev, std::shared_ptr<ibv_pd> pd) : dev_(std::move(dev)), pd_(std::move(pd)) {}
  Device dev_;
  std::shared_ptr<ibv_pd> pd_;
};

}  // namespace weft::rdma
