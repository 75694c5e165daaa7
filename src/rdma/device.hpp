#pragma once
// An opened RDMA device (ibv_context): list and open by name, port attributes, GID table, LID,
// and the device clock for completion timestamps. Every other verbs object keeps the device open
// as long as it lives (they hold a share of the context), so destruction order is always right.
#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "rdma/clock.hpp"
#include "rdma/gid_table.hpp"

namespace weft::rdma {

struct PortInfo {
  uint8_t port = 1;
  ibv_port_state state = IBV_PORT_NOP;
  ibv_mtu active_mtu = IBV_MTU_1024;
  ibv_mtu max_mtu = IBV_MTU_1024;
  uint16_t lid = 0;  // InfiniBand only; 0 on RoCE
  uint8_t link_layer = IBV_LINK_LAYER_UNSPECIFIED;
  int gid_table_len = 0;

  bool active() const { return state == IBV_PORT_ACTIVE; }
  bool is_ethernet() const { return link_layer == IBV_LINK_LAYER_ETHERNET; }
};

struct DeviceCaps {
  int max_qp_wr = 0;
  int max_cqe = 0;
  int max_sge = 0;
  int max_srq_wr = 0;
  bool atomics = false;         // atomic_cap != IBV_ATOMIC_NONE
  int max_qp_rd_atom = 0;       // READs/atomics one QP may have outstanding as their target
  int max_qp_init_rd_atom = 0;  // ... as their initiator
  uint32_t vendor_id = 0;       // rxe: 0xffffff
  uint64_t completion_timestamp_mask = 0;
  uint64_t hca_core_clock_khz = 0;
  uint8_t phys_port_cnt = 0;
};

class Device {
 public:
  // Names of the devices the kernel offers. "no RDMA device: ..." when there are none or the
  // kernel has no RDMA support at all (ibv_get_device_list sets ENOSYS then).
  static Result<std::vector<std::string>> list();
  // Opens the device called name, or the first one when name is empty.
  static Result<Device> open(const std::string& name = {});
  // Wraps a context someone else owns (librdmacm's, for an rdma_cm id); it is never closed here.
  static Device borrow(ibv_context* ctx);

  const std::string& name() const { return name_; }
  ibv_context* raw() const { return ctx_.get(); }
  const std::shared_ptr<ibv_context>& shared() const { return ctx_; }

  Result<DeviceCaps> caps() const;
  Result<PortInfo> port(uint8_t port = 1) const;
  Result<std::vector<GidEntry>> gid_table(uint8_t port = 1) const;
  // The RoCE v2 GID for addr (or the first IPv4 one when addr is 0.0.0.0).
  Result<GidEntry> roce_v2_gid(in_addr addr, uint8_t port = 1) const;
  Result<uint16_t> lid(uint8_t port = 1) const;

  // The completion-timestamp clock, or "completion timestamps not supported by <dev>" (rxe).
  Result<NicClock> clock() const;
  // The device's free-running clock now (ibv_query_rt_values_ex), in raw ticks.
  Result<uint64_t> read_clock() const;

 private:
  Device(std::shared_ptr<ibv_context> ctx, std::string name) : ctx_(std::move(ctx)), name_(std::move(name)) {}
  std::shared_ptr<ibv_context> ctx_;
  std::string name_;
};

}  // namespace weft::rdma
