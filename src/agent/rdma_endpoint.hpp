#pragma once
// The agent's conversions between a probe engine's verbs address and the endpoint it registers
// (proto/rdma_endpoint.hpp, plain data the controller keeps without libibverbs).
#include <string>

#include "probe/rdma/engine.hpp"
#include "proto/rdma_endpoint.hpp"

namespace weft::agent {

proto::RdmaEndpoint endpoint_of(const probe::RdmaAddress& a);
// How a prober reaches the endpoint: by GID on RoCE, by LID on InfiniBand.
probe::RdmaTarget rdma_target_of(const proto::RdmaEndpoint& e, std::string name);

}  // namespace weft::agent
