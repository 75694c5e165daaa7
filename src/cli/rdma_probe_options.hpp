#pragma once
// The RDMA probe options `weft ping rdma` and `weft rdma responder` share (device port, GID,
// traffic class, service level, busy polling, timestamps) and the engine configuration made of
// them, so both commands spell and check them the same way.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "probe/rdma/discovery.hpp"
#include "probe/rdma/engine.hpp"

namespace weft::cli {

// Options only the rdma mode has (on `weft ping`) and the responder's.
struct RdmaOpts {
  std::string device;  // ping: -d/--device (targets may still say DEVICE:TARGET)
  std::optional<uint32_t> qpn;
  std::optional<uint32_t> qkey;
  int gid_index = -1;
  unsigned ib_port = 1;
  std::optional<unsigned> tclass;
  std::optional<unsigned> dscp;
  unsigned sl = 0;
  uint16_t discovery_port = probe::rdma_discovery::kDefaultPort;
  bool busy_poll = false;
  bool software_timestamps = false;
};

// ping: also --qpn, --qkey, --discovery-port and -d/--device; responder: --qkey only.
void add_rdma_options(CLI::App* app, RdmaOpts& o, bool ping);

// The engine configuration for `device` ("" = the first) and IPv4 `bind` ("" = any RoCE v2 GID).
Result<probe::RdmaEngineConfig> engine_config(const RdmaOpts& o, const std::string& device,
                                              const std::string& bind);

}  // namespace weft::cli
