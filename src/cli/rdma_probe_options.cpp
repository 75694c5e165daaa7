#include "cli/rdma_probe_options.hpp"

#include "cli/rdma_args.hpp"

namespace weft::cli {

namespace {

// Traffic class from --tclass or --dscp (DSCP in the upper six bits, ECN bits 0).
Result<uint8_t> traffic_class(const RdmaOpts& o) {
  if (o.tclass && o.dscp) return fail("--tclass and --dscp are exclusive");
  if (o.tclass) {
    if (*o.tclass > 255) return fail("--tclass must be 0-255");
    return static_cast<uint8_t>(*o.tclass);
  }
  if (o.dscp) {
    if (*o.dscp > 63) return fail("--dscp must be 0-63");
    return static_cast<uint8_t>(*o.dscp << 2);
  }
  return uint8_t{0};
}

}  // namespace

Result<probe::RdmaEngineConfig> engine_config(const RdmaOpts& o, const std::string& device,
                                              const std::string& bind) {
  probe::RdmaEngineConfig c;
  c.device = device;
  if (o.ib_port < 1 || o.ib_port > 255) return fail("--ib-port must be 1-255");
  c.port = static_cast<uint8_t>(o.ib_port);
  c.gid_index = o.gid_index;
  c.address = bind;
  auto tc = traffic_class(o);
  if (!tc) return std::unexpected(tc.error());
  c.traffic_class = *tc;
  if (o.sl > 15) return fail("--sl must be 0-15");
  c.sl = static_cast<uint8_t>(o.sl);
  c.busy_poll = o.busy_poll;
  c.hardware_timestamps = !o.software_timestamps;
  return c;
}

void add_rdma_options(CLI::App* app, RdmaOpts& o, bool ping) {
  const char* g = "RDMA";
  if (ping) {
    app->add_option("--qpn", o.qpn, "rdma: the target's QP number (else asked by discovery)")->group(g);
    app->add_option("--qkey", o.qkey, "rdma: the target's qkey (default 0x11111111, or discovered)")
        ->group(g);
    app->add_option("--discovery-port", o.discovery_port, "rdma: UDP port of the responder's discovery")
        ->capture_default_str()
        ->group(g);
    weft::cli::add_device_option(app, o.device)
        ->description("rdma: local RDMA device (default: the first; a target may also say DEVICE:TARGET)")
        ->group(g);
  } else {
    app->add_option("--qkey", o.qkey, "qkey of the QP (default 0x11111111)")->group(g);
  }
  // -1 (the default) means "the RoCE v2 GID of the local address"; anything given must be a real index.
  app->add_option("--gid-index", o.gid_index,
                  ping ? "rdma: source GID index 0-255 (default: the RoCE v2 GID of --bind)"
                       : "source GID index 0-255 (default: the RoCE v2 GID of --address)")
      ->check(CLI::Range(0, 255))
      ->group(g);
  app->add_option("--ib-port", o.ib_port, "rdma: device port")->capture_default_str()->group(g);
  app->add_option("--tclass", o.tclass, "rdma: GRH traffic class 0-255 (the seed used 106 for RoCE)")
      ->group(g);
  app->add_option("--dscp", o.dscp, "rdma: DSCP 0-63 (traffic class = DSCP << 2)")->group(g);
  app->add_option("--sl", o.sl, "rdma: service level 0-15")->group(g);
  app->add_flag("--busy-poll", o.busy_poll, "rdma: spin on the completion queue (lowest latency, one core)")
      ->group(g);
  app->add_flag("--software-timestamps", o.software_timestamps,
                "rdma: never use NIC completion timestamps, even when the device has them")
      ->group(g);
}

}  // namespace weft::cli
