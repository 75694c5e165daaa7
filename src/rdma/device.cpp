#include "rdma/device.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>

#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** l) const { ibv_free_device_list(l); }
};
using DeviceList = std::unique_ptr<ibv_device*[], DeviceListDeleter>;

Result<std::pair<DeviceList, int>> get_devices() {
  int n = 0;
  errno = 0;
  DeviceList l(ibv_get_device_list(&n));
  if (!l) {
    int err = errno;
    if (err == ENOSYS)
      return no_device(
          "ibv_get_device_list: the kernel has no RDMA support (ENOSYS); "
          "use the Soft-RoCE lab (lab/rdma-guest)",
          err);
    return no_device(fmt::format("ibv_get_device_list: {} (errno {})", std::strerror(err), err), err);
  }
  if (n == 0) return no_device("ibv_get_device_list found no devices (is a driver such as rdma_rxe loaded?)");
  return std::pair{std::move(l), n};
}

}  // namespace

Result<std::vector<std::string>> Device::list() {
  auto devs = get_devices();
  if (!devs) return std::unexpected(devs.error());
  std::vector<std::string> names;
  for (int i = 0; i < devs->second; ++i) names.emplace_back(ibv_get_device_name(devs->first[i]));
  return names;
}

Result<Device> Device::open(const std::string& name) {
  auto devs = get_devices();
  if (!devs) return std::unexpected(devs.error());
  ibv_device* dev = nullptr;
  std::vector<std::string> names;
  for (int i = 0; i < devs->second; ++i) {
    names.emplace_back(ibv_get_device_name(devs->first[i]));
    if (!dev && (name.empty() || names.back() == name)) dev = devs->first[i];
  }
  if (!dev) return no_device(fmt::format("no device named '{}' (have: {})", name, fmt::join(names, ", ")));
  errno = 0;
  ibv_context* ctx = ibv_open_device(dev);
  if (!ctx)
    return verb_error(fmt::format("ibv_open_device {}", ibv_get_device_name(dev)), errno ? errno : ENODEV);
  std::string opened = ibv_get_device_name(dev);
  return Device(std::shared_ptr<ibv_context>(ctx,
                                             [opened](ibv_context* c) {
                                               if (int rc = ibv_close_device(c))
                                                 log().warn("ibv_close_device {}: errno {}", opened, rc);
                                             }),
                opened);
}

Device Device::borrow(ibv_context* ctx) {
  return Device(std::shared_ptr<ibv_context>(ctx, [](ibv_context*) {}), ibv_get_device_name(ctx->device));
}

Result<DeviceCaps> Device::caps() const {
  ibv_device_attr_ex attr{};
  if (int rc = ibv_query_device_ex(raw(), nullptr, &attr))
    return verb_error(fmt::format("ibv_query_device_ex {}", name_), rc);
  DeviceCaps c;
  c.max_qp_wr = attr.orig_attr.max_qp_wr;
  c.max_cqe = attr.orig_attr.max_cqe;
  c.max_sge = attr.orig_attr.max_sge;
  c.max_srq_wr = attr.orig_attr.max_srq_wr;
  c.atomics = attr.orig_attr.atomic_cap != IBV_ATOMIC_NONE;
  c.max_qp_rd_atom = attr.orig_attr.max_qp_rd_atom;
  c.max_qp_init_rd_atom = attr.orig_attr.max_qp_init_rd_atom;
  c.vendor_id = attr.orig_attr.vendor_id;
  c.completion_timestamp_mask = attr.completion_timestamp_mask;
  c.hca_core_clock_khz = attr.hca_core_clock;
  c.phys_port_cnt = attr.orig_attr.phys_port_cnt;
  return c;
}

Result<PortInfo> Device::port(uint8_t port) const {
  ibv_port_attr a{};
  if (int rc = ibv_query_port(raw(), port, &a))
    return verb_error(fmt::format("ibv_query_port {} port {}", name_, port), rc);
  PortInfo p;
  p.port = port;
  p.state = a.state;
  p.active_mtu = a.active_mtu;
  p.max_mtu = a.max_mtu;
  p.lid = a.lid;
  p.link_layer = a.link_layer;
  p.gid_table_len = a.gid_tbl_len;
  return p;
}

Result<std::vector<GidEntry>> Device::gid_table(uint8_t port) const {
  auto p = this->port(port);
  if (!p) return std::unexpected(p.error());
  return query_gid_table(raw(), port, p->gid_table_len);
}

Result<GidEntry> Device::roce_v2_gid(in_addr addr, uint8_t port) const {
  auto table = gid_table(port);
  if (!table) return std::unexpected(table.error());
  auto e = addr.s_addr == 0 ? first_roce_v2_ipv4_gid(*table) : pick_roce_v2_gid(*table, addr);
  if (!e) return fail("{} port {}: {}", name_, port, e.error().message);
  return e;
}

Result<uint16_t> Device::lid(uint8_t port) const {
  auto p = this->port(port);
  if (!p) return std::unexpected(p.error());
  return p->lid;
}

Result<NicClock> Device::clock() const {
  auto c = caps();
  if (!c) return std::unexpected(c.error());
  NicClock clk(c->hca_core_clock_khz, c->completion_timestamp_mask);
  if (!clk.valid())
    return std::unexpected(
        Error{fmt::format("completion timestamps not supported by {} (hca_core_clock {} kHz, "
                          "completion_timestamp_mask 0x{:x})",
                          name_, c->hca_core_clock_khz, c->completion_timestamp_mask),
              EOPNOTSUPP});
  return clk;
}

Result<uint64_t> Device::read_clock() const {
  ibv_values_ex v{};
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  if (int rc = ibv_query_rt_values_ex(raw(), &v))
    return verb_error(fmt::format("ibv_query_rt_values_ex {}", name_), rc);
  if (!(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
    return std::unexpected(
        Error{fmt::format("ibv_query_rt_values_ex {}: raw clock not supported", name_), EOPNOTSUPP});
  // Drivers put the raw counter in tv_nsec (tv_sec is 0), see mlx5's implementation.
  return static_cast<uint64_t>(v.raw_clock.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(v.raw_clock.tv_nsec);
}

}  // namespace weft::rdma
