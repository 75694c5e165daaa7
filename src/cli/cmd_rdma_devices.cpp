// `weft rdma devices`: the RDMA devices here, their ports, GIDs and clock, as JSON lines.
// On a machine without RDMA it prints the one "no RDMA device: ..." error and exits 1.
#include <fmt/format.h>

#include "cli/command_registry.hpp"
#include "rdma/device.hpp"

namespace {

using namespace weft;
using namespace weft::rdma;

Status list_devices() {
  auto names = Device::list();
  if (!names) return std::unexpected(names.error());
  for (const auto& name : *names) {
    auto dev = Device::open(name);
    if (!dev) return std::unexpected(dev.error());
    auto caps = dev->caps();
    if (!caps) return std::unexpected(caps.error());
    auto clk = dev->clock();
    fmt::print(
        "{{\"device\":\"{}\",\"ports\":{},\"max_qp_wr\":{},\"atomics\":{},\"completion_timestamps\":{}}}\n",
        name, caps->phys_port_cnt, caps->max_qp_wr, caps->atomics, clk.has_value());
    for (uint8_t p = 1; p <= caps->phys_port_cnt; ++p) {
      auto port = dev->port(p);
      if (!port) return std::unexpected(port.error());
      fmt::print(
          "{{\"device\":\"{}\",\"port\":{},\"state\":\"{}\",\"link_layer\":\"{}\",\"lid\":{},\"active_mtu\":{"
          "}}}\n",
          name, p, ibv_port_state_str(port->state), port->is_ethernet() ? "ethernet" : "infiniband",
          port->lid, 128 << port->active_mtu);
      auto gids = dev->gid_table(p);
      if (!gids) return std::unexpected(gids.error());
      for (const auto& g : *gids)
        fmt::print("{{\"device\":\"{}\",\"port\":{},\"gid_index\":{},\"gid\":\"{}\",\"type\":\"{}\"}}\n",
                   name, p, g.index, gid_to_string(g.gid),
                   g.type == GidType::roce_v2   ? "roce_v2"
                   : g.type == GidType::roce_v1 ? "roce_v1"
                                                : "ib");
    }
  }
  return {};
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* sub = root.rdma->add_subcommand("devices", "List RDMA devices, ports and GIDs (JSON lines)");
  sub->callback([] {
    if (auto s = list_devices(); !s) {
      fmt::print(stderr, "weft rdma devices: {}\n", s.error().message);
      weft::cli::set_exit_code(1);
    }
  });
}};

}  // namespace
