// `weft stack ping|echo|serve|connect`: weft's user-space TCP/IP stack (src/stack) on a TAP
// device. The stack owns the Ethernet end of the TAP and its own IP (--ip); the kernel end is an
// ordinary interface that --kernel-ip configures (optionally after moving it into --netns), so
// kernel programs there talk to the stack. Starting prints the interface, MAC and IP taken and
// what to undo: nothing, because the TAP is not persistent and vanishes (with the addresses set
// on it) when weft exits, also on SIGINT/SIGTERM.
// `--device packet --ifname IF` takes an existing interface (a veth end, no kernel address on it)
// through AF_PACKET instead (stack/dev/packet_device.hpp); its promiscuous mode ends with weft.
// `--device xdp --ifname IF` takes it through an AF_XDP socket (stack/dev/xdp_device.hpp); the XDP
// program libxdp attaches is detached when weft exits.
//
//   ping DEST [-c N] [-i S] [-s BYTES]   ICMP echo from the stack
//   echo [--port 7]                      echo every byte back (and answer pings) until -t or a signal
//   serve [--port 5201] [--json]         iperf-like server: each connection's first byte says which
//                                        way data goes ('S' the client sends, 'R' the server sends)
//   connect SERVER [-t S] [-P N] [-R] [--json] [--zerocopy]   iperf-like client, a line per second and
//                                        a summary
#include <arpa/inet.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.hpp"
#include "base/signals.hpp"
#include "cli/command_registry.hpp"
#ifndef WEFT_STACK_ONLY
#include "cli/stack_run.hpp"
#endif
#include "stack/dev/packet_device.hpp"
#include "stack/interface.hpp"
#include "stack/socket.hpp"
#ifdef WEFT_HAVE_DPDK
#include "stack/dev/dpdk_device.hpp"
#endif
#include "stack/dev/tap_device.hpp"
#ifdef WEFT_HAVE_XDP
#include "stack/dev/xdp_device.hpp"
#endif
#include "stack/dev/tap_napi.hpp"

namespace {

using namespace weft;
using namespace weft::stack;

std::atomic<bool> g_stop{false};

struct Common {
  std::string device = "tap";      // tap or packet
  std::string ifname;              // --device packet: the interface to take
  std::string packet_ring = "v2";  // --device packet: TPACKET_V2 (a frame at a time) or V3 (blocks)
  size_t syn_ring_blocks = PacketDevice::Options{}.syn_ring_blocks;  // --device packet: 64 KiB blocks of SYNs
  std::string dpdk_vdev;     // --device dpdk: EAL --vdev, e.g. net_af_packet0,iface=veth1
  uint32_t xdp_queue = 0;    // --device xdp: the interface's queue the XDP socket binds to
  bool xdp_generic = false;  // --device xdp: generic (SKB) mode without trying native first
  size_t xdp_ring = 4096;    // --device xdp: ring entries; the UMEM has twice as many frames
  std::string tap = "weft0";
  std::string ip;         // A.B.C.D/P for the stack
  std::string gateway;    // optional
  std::string kernel_ip;  // A.B.C.D/P to put on the kernel end (optional)
  std::string netns;      // move the kernel end into this namespace first (optional)
  bool no_vnet_hdr = false;
  bool no_io_uring = false;    // TAP: one write() per frame instead of io_uring batches
  unsigned tap_rx_batch = 64;  // TAP without vnet headers: frames read per io_uring_enter
  bool tap_napi = false;       // TAP: IFF_NAPI, receive work in a NAPI thread (GRO off)
  bool tap_napi_bulk = false;  // TAP: the NAPI thread only while the stack sends in bulk
  bool no_tap_napi = false;    // TAP: no NAPI
  bool no_tso = false;         // TSO needs vnet headers (TAP) or PACKET_VNET_HDR (packet)
  bool nagle = false;
  // Each connection's send and receive buffer: 4 MiB, not the library's 256 KiB, as the kernel's
  // autotuned buffers reach MBs. Measured at 1 % loss (docs/BENCHMARKS.md, issue 13): before RACK
  // 3 rounds hinted at a gain (0.62x -> 0.80x the kernel as server); with RACK 256 KiB did as well
  // (0.97x server, 1.13x client against 0.92x and 1.14x), so on this sub-ms path it is not the limit.
  uint32_t buffer = 4 * 1024 * 1024;
  std::string cc = "cubic";
  bool no_sack = false;
  bool no_rack = false;
  double seconds = 0;  // 0: until a signal (echo, serve) or 10 s (connect)
};

bool parse_cidr(const std::string& s, wire::Ipv4Addr& ip, uint8_t& prefix) {
  const auto slash = s.find('/');
  const std::string a = s.substr(0, slash);
  in_addr in{};
  if (inet_pton(AF_INET, a.c_str(), &in) != 1) return false;
  ip.v = ntohl(in.s_addr);
  prefix = 32;
  if (slash != std::string::npos) {
    const int p = std::atoi(s.c_str() + slash + 1);
    if (p < 0 || p > 32) return false;
    prefix = static_cast<uint8_t>(p);
  }
  return true;
}

std::string ip_str(wire::Ipv4Addr a) {
  return fmt::format("{}.{}.{}.{}", a.v >> 24, (a.v >> 16) & 255, (a.v >> 8) & 255, a.v & 255);
}
std::string mac_str(const wire::MacAddr& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m.b[0], m.b[1], m.b[2], m.b[3], m.b[4],
                     m.b[5]);
}

// For the banner: what NAPI does on the TAP.
std::string napi_words(TapDevice::Options::Napi n) {
  switch (n) {
    case TapDevice::Options::Napi::thread:
      return ", threaded NAPI, GRO off";
    case TapDevice::Options::Napi::bulk:
      return ", NAPI thread during bulk sends, GRO off";
    case TapDevice::Options::Napi::off:
    case TapDevice::Options::Napi::automatic:  // never what a TAP reports (it says what it chose)
      break;
  }
  return "";
}

int run_cmd(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  if (rc != 0) fmt::print(stderr, "weft stack: `{}` failed ({})\n", cmd, rc);
  return rc;
}

// The device (a TAP, or an interface through AF_PACKET), its configuration and the interface on it.
struct Session {
  std::unique_ptr<Device> dev;
  MonotonicClock clock;
  std::unique_ptr<Interface> iface;
#ifdef WEFT_HAVE_XDP
  // What AF_XDP lost on the way is not visible to TCP's counters: say it when leaving.
  ~Session() {
    const auto* x = dynamic_cast<const XdpDevice*>(dev.get());
    if (x == nullptr) return;
    const auto& n = x->counters();
    const auto k = x->kernel_stats();
    fmt::print(stderr,
               "weft stack: AF_XDP on {}: {} frames in, {} out in {} kicks, {} dropped on transmit; kernel: "
               "{} rx dropped, {} RX ring full, {} fill ring empty, {} bad TX descriptors.\n",
               x->name(), n.rx_frames, n.tx_frames, n.tx_kicks, n.tx_dropped, k.rx_dropped, k.rx_ring_full,
               k.rx_fill_ring_empty, k.tx_invalid);
  }
#endif

  Status open(const Common& c) {
    IfaceConfig cfg;
    if (!parse_cidr(c.ip, cfg.ip, cfg.prefix_len)) return fail("--ip wants A.B.C.D/P, got '{}'", c.ip);
    uint8_t ignored = 0;
    if (!c.gateway.empty() && !parse_cidr(c.gateway, cfg.gateway, ignored))
      return fail("--gateway wants A.B.C.D, got '{}'", c.gateway);
    cfg.tcp.nagle = c.nagle;
    cfg.tcp.send_buffer = cfg.tcp.recv_buffer = c.buffer;
    cfg.tcp.congestion_control = c.cc == "reno" ? tcp::CcAlgorithm::reno : tcp::CcAlgorithm::cubic;
    cfg.tcp.sack = !c.no_sack;
    cfg.tcp.rack = !c.no_rack;
    cfg.tso = !c.no_tso;
    if (c.device == "packet") return open_packet(c, cfg);
    if (c.device == "dpdk") return open_dpdk(c, cfg);
    if (c.device == "xdp") return open_xdp(c, cfg);
    TapDevice::Options to;
    to.name = c.tap;
    to.vnet_hdr = !c.no_vnet_hdr;
    to.rx_tso = !c.no_tso;  // --no-tso: one MSS per frame both ways (the lab's loss counts segments)
    to.io_uring = !c.no_io_uring;
    to.rx_batch = c.tap_rx_batch;
    // Without a NAPI flag the library's default (TapDevice::default_napi: the NAPI thread for bulk
    // sends without TSO, where the kernel and /sys allow it), so a program built on the stack
    // behaves as `weft stack`; a flag asks for one and must get it.
    using Napi = TapDevice::Options::Napi;
    if (c.tap_napi) to.napi = Napi::thread;
    if (c.tap_napi_bulk) to.napi = Napi::bulk;
    if (c.no_tap_napi) to.napi = Napi::off;
    auto d = TapDevice::open(to);
    if (!d) return std::unexpected(d.error());
    const TapDevice& tap = **d;
    dev = std::move(*d);
    const std::string in_ns = c.netns.empty() ? "" : "ip netns exec " + c.netns + " ";
    if (!c.netns.empty() && run_cmd(fmt::format("ip link set {} netns {}", tap.name(), c.netns)) != 0)
      return fail("could not move {} into netns {}", tap.name(), c.netns);
    if (!c.kernel_ip.empty()) {
      if (run_cmd(fmt::format("{}ip addr add {} dev {}", in_ns, c.kernel_ip, tap.name())) != 0 ||
          run_cmd(fmt::format("{}ip link set {} up", in_ns, tap.name())) != 0)
        return fail("could not configure {}", tap.name());
    }
    iface = std::make_unique<Interface>(*dev, clock, cfg);
    if (!tap.napi_note().empty())
      fmt::print(
          stderr,
          "weft stack: no NAPI thread for bulk sends ({}): the kernel's side runs inside weft's writes "
          "(slower in bulk; --no-tap-napi skips the attempt).\n",
          tap.napi_note());
    fmt::print(
        stderr,
        "weft stack: took TAP {} (vnet_hdr {}{}, transmit {}{}){}; stack MAC {} IP {}/{}{}; kernel end {}.\n"
        "weft stack: nothing to undo: the TAP and any address on it go away when weft exits.\n",
        tap.name(), c.no_vnet_hdr ? "off" : "on", napi_words(tap.napi()),
        tap.uses_io_uring()           ? "io_uring batches"
        : tap.io_uring_note().empty() ? "one write per frame"
                                      : "one write per frame: " + tap.io_uring_note(),
        tap.reads_io_uring()          ? ", receive io_uring batches"
        : tap.rx_uring_note().empty() ? ""
                                      : ", receive one read per frame: " + tap.rx_uring_note(),
        c.netns.empty() ? "" : " in netns " + c.netns, mac_str(dev->mac()), ip_str(cfg.ip), cfg.prefix_len,
        c.gateway.empty() ? "" : ", gateway " + c.gateway,
        c.kernel_ip.empty() ? "left unconfigured (bring it up and address it yourself)" : c.kernel_ip);
    return {};
  }

  Status open_packet(const Common& c, const IfaceConfig& cfg) {
    if (c.ifname.empty()) return fail("--device packet needs --ifname");
    if (!c.netns.empty() || !c.kernel_ip.empty())
      return fail("--netns and --kernel-ip are for the TAP; run weft in the interface's namespace instead");
    PacketDevice::Options o;
    o.ifname = c.ifname;
    o.tx_csum_offload = !c.no_vnet_hdr;
    o.rx_ring = c.packet_ring == "v3" ? PacketDevice::Options::Ring::v3 : PacketDevice::Options::Ring::v2;
    o.syn_ring_blocks = c.syn_ring_blocks;
    auto d = PacketDevice::open(o);
    if (!d) return std::unexpected(d.error());
    const PacketDevice& p = **d;
    dev = std::move(*d);
    iface = std::make_unique<Interface>(*dev, clock, cfg);
    fmt::print(stderr,
               "weft stack: took {} through AF_PACKET ({} receive ring {} x {} KiB{}{}, sendmmsg "
               "batches of {}, {}, checksum offload {}){}; stack MAC {} IP {}/{}{}.\n"
               "weft stack: nothing to undo: {}the interface is left as it was when weft exits.\n",
               p.name(), c.packet_ring == "v3" ? "TPACKET_V3" : "TPACKET_V2", o.block_count,
               o.block_size / 1024,
               c.packet_ring == "v3" ? fmt::format(", blocks retired after {} ms", o.block_timeout_ms)
                                     : fmt::format(" in {}-byte slots", p.rx_slot_size()),
               p.syn_ring_slots() != 0
                   ? fmt::format(", bare SYNs in a ring of their own ({} slots)", p.syn_ring_slots())
                   : "",
               o.tx_batch,
               p.qdisc_bypass() ? "qdisc bypass"
               : c.no_vnet_hdr
                   ? "through the qdisc"
                   : "through the qdisc: TSO is off on the interface, the kernel's GSO cuts super-frames",
               c.no_vnet_hdr ? "off" : "on", p.promiscuous() ? ", promiscuous" : "", mac_str(p.mac()),
               ip_str(cfg.ip), cfg.prefix_len, c.gateway.empty() ? "" : ", gateway " + c.gateway,
               p.promiscuous() ? "promiscuous mode ends and " : "");
    return {};
  }

  Status open_dpdk([[maybe_unused]] const Common& c, [[maybe_unused]] const IfaceConfig& cfg) {
#ifdef WEFT_HAVE_DPDK
    if (c.dpdk_vdev.empty())
      return fail("--device dpdk needs --dpdk-vdev (net_af_packet0,iface=IF or net_tap0,iface=NAME)");
    DpdkDevice::Options o;
    o.vdev = c.dpdk_vdev;
    auto d = DpdkDevice::open(o);
    if (!d) return std::unexpected(d.error());
    const DpdkDevice& p = **d;
    dev = std::move(*d);
    iface = std::make_unique<Interface>(*dev, clock, cfg);
    fmt::print(
        stderr,
        "weft stack: took DPDK port {} (EAL --no-huge -m {} --no-pci, --vdev={}; busy polling); stack MAC {} "
        "IP {}/{}{}.\nweft stack: nothing to undo: the port closes when weft exits.\n",
        p.port_name(), o.memory_mb, o.vdev, mac_str(p.mac()), ip_str(cfg.ip), cfg.prefix_len,
        c.gateway.empty() ? "" : ", gateway " + c.gateway);
    return {};
#elif defined(WEFT_DPDK_SIBLING)
    return exec_dpdk_sibling();
#else
    return fail("this weft was built without DPDK (install libdpdk-dev and rebuild)");
#endif
  }

  Status open_xdp([[maybe_unused]] const Common& c, [[maybe_unused]] IfaceConfig cfg) {
#ifdef WEFT_HAVE_XDP
    if (c.ifname.empty()) return fail("--device xdp needs --ifname");
    if (!c.netns.empty() || !c.kernel_ip.empty())
      return fail("--netns and --kernel-ip are for the TAP; run weft in the interface's namespace instead");
    XdpDevice::Options o;
    o.ifname = c.ifname;
    o.queue = c.xdp_queue;
    o.generic = c.xdp_generic;
    o.ring = c.xdp_ring;
    o.frames = 2 * c.xdp_ring;
    auto d = XdpDevice::open(o);
    if (!d) return std::unexpected(d.error());
    const XdpDevice& x = **d;
    dev = std::move(*d);
    cfg.tso = false;  // copy mode: no offloads, every segment is one frame
    iface = std::make_unique<Interface>(*dev, clock, cfg);
    const std::string mode = x.native() ? "native" : "generic (SKB)";
    fmt::print(stderr,
               "weft stack: took {} queue {} through AF_XDP (copy mode, {} XDP; UMEM {} frames of {} bytes, "
               "rings of "
               "{}; checksums in software){}; stack MAC {} IP {}/{}{}.\n"
               "weft stack: attached libxdp's default XDP program (id {}) to {} in {} mode; weft detaches it "
               "when it exits (also on SIGINT/SIGTERM). If weft is killed: ip link set dev {} {} off\n",
               x.name(), x.queue(), mode, o.frames, x.frame_size(), o.ring,
               x.native() || c.xdp_generic ? "" : ": native refused", mac_str(x.mac()), ip_str(cfg.ip),
               cfg.prefix_len, c.gateway.empty() ? "" : ", gateway " + c.gateway, x.prog_id(), x.name(), mode,
               x.name(), x.native() ? "xdpdrv" : "xdpgeneric");
    return {};
#else
    return fail("this weft was built without AF_XDP (install libxdp-dev and rebuild)");
#endif
  }

#if !defined(WEFT_HAVE_DPDK) && defined(WEFT_DPDK_SIBLING)
  // weft never links DPDK (src/stack/CMakeLists.txt): the same command line runs in weft-dpdk, the
  // executable beside this one that has the device. Nothing is open yet, so nothing is lost.
  static Status exec_dpdk_sibling() {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return fail_errno("readlink /proc/self/exe");
    self[n] = '\0';
    std::string path(self);
    path = path.substr(0, path.rfind('/') + 1) + WEFT_DPDK_SIBLING;
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
    if (args.empty()) return fail("could not read /proc/self/cmdline");
    args[0] = path;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(path.c_str(), argv.data());
    return fail_errno(fmt::format("--device dpdk runs {} (weft links no DPDK), which could not start", path));
  }
#endif

  // The socket API over the interface (made on first use, so open() stays about the device).
  std::unique_ptr<Sockets> sk;
  Sockets& sockets() {
    if (!sk) sk = std::make_unique<Sockets>(*iface);
    return *sk;
  }

  // Runs the stack until `until_ns` (mono) or a signal, calling `app` after every wake-up (a
  // frame, a timer, or at most 100 ms).
  template <typename App>
  void run(int64_t until_ns, App&& app) {
    Sockets& k = sockets();
    k.poll();
    while (!g_stop.load(std::memory_order_relaxed)) {
      const int64_t now = clock.now_ns();
      if (now >= until_ns) break;
      if (!app()) break;
      k.wait(std::min<int64_t>(until_ns - clock.now_ns(), 100'000'000));
    }
  }
};

void add_common(CLI::App* sub, Common& c) {
  sub->add_option(
         "--device", c.device,
         "tap, packet (AF_PACKET on --ifname), xdp (AF_XDP on --ifname) or dpdk (if built with them)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tap", "packet", "xdp", "dpdk"}));
  sub->add_option("--dpdk-vdev", c.dpdk_vdev,
                  "--device dpdk: the EAL virtual device (net_af_packet0,iface=IF)");
  sub->add_option("--ifname", c.ifname,
                  "--device packet|xdp: the interface to take (no kernel address on it)");
  sub->add_option("--packet-ring", c.packet_ring,
                  "--device packet: receive ring v2 (frame by frame, no added latency) or v3 (blocks "
                  "handed over when full or 1 ms after their first frame)")
      ->capture_default_str()
      ->check(CLI::IsMember({"v2", "v3"}));
  sub->add_option("--syn-ring-blocks", c.syn_ring_blocks,
                  "--device packet (v2): 64 KiB blocks of the ring bare SYNs come through, 256 per block "
                  "(0: they share the main ring)")
      ->capture_default_str();
  sub->add_option("--xdp-queue", c.xdp_queue, "--device xdp: the interface queue to bind (default 0)");
  sub->add_option("--xdp-ring", c.xdp_ring,
                  "--device xdp: entries per ring (a power of two); the UMEM has twice as many frames")
      ->capture_default_str();
  sub->add_flag("--xdp-generic", c.xdp_generic,
                "--device xdp: generic (SKB) XDP without trying native first");
  sub->add_option("--tap", c.tap, "TAP interface name to create")->capture_default_str();
  sub->add_option("--ip", c.ip, "the stack's address, A.B.C.D/P")->required();
  sub->add_option("--gateway", c.gateway, "next hop for addresses off the subnet");
  sub->add_option("--kernel-ip", c.kernel_ip, "address A.B.C.D/P to give the kernel end of the TAP");
  sub->add_option("--buffer", c.buffer, "each connection's send and receive buffer, bytes")
      ->capture_default_str()
      ->check(CLI::Range(4096u, 1u << 30));
  sub->add_option("--cc", c.cc, "congestion control: cubic or reno")
      ->capture_default_str()
      ->check(CLI::IsMember({"cubic", "reno"}));
  sub->add_flag("--no-sack", c.no_sack, "do not offer SACK (RFC 2018)");
  sub->add_flag("--no-rack", c.no_rack, "RFC 6675 DupThresh loss detection instead of RACK (RFC 8985)");
  sub->add_option("--netns", c.netns, "move the kernel end into this network namespace first");
  sub->add_flag("--no-vnet-hdr", c.no_vnet_hdr,
                "plain frames: the stack computes every checksum (tap or packet)");
  sub->add_flag("--no-io-uring", c.no_io_uring,
                "tap: write each frame with write() instead of batching the writes through io_uring "
                "(and, without vnet headers, read each frame with readv())");
  sub->add_option(
         "--tap-rx-batch", c.tap_rx_batch,
         "tap without vnet headers: the most frames read per io_uring_enter (1: one readv() per frame)")
      ->check(CLI::Range(1, 1024));
  auto* napi = sub->add_flag("--tap-napi", c.tap_napi,
                             "tap: IFF_NAPI with a NAPI thread (GRO off): the kernel's receive work for our "
                             "frames runs there, not inside our writes");
  auto* bulk = sub->add_flag("--tap-napi-bulk", c.tap_napi_bulk,
                             "tap: IFF_NAPI (GRO off), the NAPI thread on only while we send full batches "
                             "(the default without TSO, where /sys and the kernel allow it)");
  sub->add_flag("--no-tap-napi", c.no_tap_napi, "tap: no IFF_NAPI: the kernel's side runs inside our writes")
      ->excludes(napi)
      ->excludes(bulk);
  napi->excludes(bulk);
  sub->add_flag("--no-tso", c.no_tso,
                "send one MSS per frame even where the device could cut super-segments (TSO/GSO)");
  sub->add_flag("--nagle", c.nagle, "turn Nagle's algorithm on (off by default, like TCP_NODELAY)");
  sub->add_option("-t,--time", c.seconds, "seconds to run");
}

int fail_with(const Error& e) {
  fmt::print(stderr, "weft stack: {}\n", e.message);
  return 1;
}

// ---- ping ----
int run_ping(const Common& c, const std::string& dest, int count, double interval, size_t size) {
  Session s;
  if (auto st = s.open(c); !st) return fail_with(st.error());
  wire::Ipv4Addr dst;
  uint8_t prefix = 0;
  if (!parse_cidr(dest, dst, prefix)) return fail_with(Error{"bad destination " + dest});
  std::vector<int64_t> sent_at(static_cast<size_t>(count), 0);
  int received = 0, sent = 0;
  s.iface->on_echo_reply([&](wire::Ipv4Addr from, uint16_t, uint16_t seq, size_t len) {
    if (seq == 0 || seq > sent || sent_at[seq - 1] == 0) return;
    fmt::print("{} bytes from {}: icmp_seq={} time={:.3f} ms\n", len + 8, ip_str(from), seq,
               (s.clock.now_ns() - sent_at[seq - 1]) / 1e6);
    sent_at[seq - 1] = 0;
    ++received;
  });
  const auto ident = static_cast<uint16_t>(getpid());
  int64_t next = s.clock.now_ns();
  const int64_t end = next + static_cast<int64_t>((count * interval + 2) * 1e9);
  s.run(end, [&] {
    const int64_t now = s.clock.now_ns();
    if (sent < count && now >= next) {
      sent_at[static_cast<size_t>(sent)] = now;
      ++sent;
      if (auto st = s.iface->ping(dst, ident, static_cast<uint16_t>(sent), size); !st) fail_with(st.error());
      next = now + static_cast<int64_t>(interval * 1e9);
    }
    return received < count;
  });
  fmt::print("{} packets transmitted, {} received\n", sent, received);
  return received > 0 ? 0 : 1;
}

// The device's counters for --json (connect and serve): for a TAP how its transmissions reached the
// kernel (system calls per frame: batching at work) and the NAPI thread's CPU, which is this run's
// cost too (read before the TAP, and the thread, go away); for AF_PACKET the receive-ring blocks
// (wake-ups with input), the frames the kernel dropped because the ring was full, and send system
// calls; for the TCP layer what its listeners did with SYNs (bench/stack_synflood.sh).
nlohmann::json device_json(Session& s) {
  nlohmann::json j = nlohmann::json::object();
  if (const auto* tap = dynamic_cast<const TapDevice*>(s.dev.get())) {
    const auto& tc = tap->counters();
    j["tap"] = {{"io_uring", tap->uses_io_uring()},    {"tx_frames", tc.tx_frames},
                {"tx_syscalls", tc.tx_syscalls},       {"tx_uring_late", tc.tx_uring_late},
                {"tx_would_block", tc.tx_would_block}, {"tx_errors", tc.tx_errors},
                {"rx_gso_frames", tc.rx_gso_frames},   {"rx_io_uring", tap->reads_io_uring()},
                {"rx_batches", tc.rx_batches},         {"rx_batch_frames", tc.rx_batch_frames}};
    if (tap->napi() != TapDevice::Options::Napi::off) {
      j["tap"]["napi_cpu_s"] = tap->napi_cpu_s();
      j["tap"]["napi_on"] = tc.napi_on;
    }
  }
  if (auto* pk = dynamic_cast<PacketDevice*>(s.dev.get())) {
    const auto& pc = pk->counters();
    j["packet"] = {{"rx_frames", s.iface->stats().rx_frames},
                   {"rx_ring", pk->rx_ring() == PacketDevice::Options::Ring::v3 ? "v3" : "v2"},
                   {"rx_blocks", pc.rx_blocks},
                   {"rx_copied", pc.rx_copied},
                   {"rx_placed", pc.rx_placed},
                   {"rx_split_syscalls", pc.rx_split_calls},
                   {"rx_ring_drops", pk->take_ring_drops()},
                   {"rx_syn_frames", pc.rx_syn_frames},
                   {"rx_syn_ring_drops", pk->take_syn_ring_drops()},
                   {"tx_frames", s.iface->stats().tx_frames},
                   {"tx_syscalls", pc.tx_batches},
                   {"tx_dropped", pc.tx_dropped},
                   {"qdisc_bypass", pk->qdisc_bypass()}};
  }
  const auto& ts = s.iface->tcp().stats();
  j["tcp"] = {{"connections_made", ts.connections_made},
              {"cookies_sent", ts.cookies_sent},
              {"cookies_accepted", ts.cookies_accepted},
              {"syns_dropped", ts.syns_dropped}};
  return j;
}

// ---- echo / serve ----
struct ServerConn {
  char mode = 0;  // serve: 'S' or 'R' once the first byte came
  // echo's --close-port: 'c', closed once its first data is echoed; --hold-port: 'h', half-closed
  // then, 'H' once half-closed (the socket is kept through TIME-WAIT and closed after it)
  char after_first = 0;
  uint64_t bytes = 0;
  int64_t start_ns = 0;  // accepted (monotonic clock)
};

void print_done(const tcp::Connection& k, uint64_t bytes) {
  const auto& st = k.stats();
  fmt::print(stderr,
             "weft stack: connection from {}:{} done, {} bytes, {} retransmits ({} timeouts), {} fast "
             "recoveries, {} SACK retransmits, {} tail loss probes, {} RACK losses ({} lost "
             "retransmissions), {} out of order, {} spurious recoveries undone (D-SACK){}{}\n",
             ip_str(k.tuple().remote_ip), k.tuple().remote_port, bytes, st.retransmits, st.timeouts,
             st.fast_retransmits, st.sack_retransmits, st.tail_loss_probes, st.rack_lost, st.lost_retransmits,
             st.out_of_order, st.spurious_undone,
             st.pmtu_reductions == 0
                 ? ""
                 : fmt::format(", path MTU lowered {} times (MSS {})", st.pmtu_reductions, k.send_mss()),
             k.close_reason() == tcp::CloseReason::none
                 ? ""
                 : fmt::format(" ({})", tcp::to_string(k.close_reason())));
}

// Echo: every received byte goes back (read in place from the receive ring, copied once into the
// send ring); UDP datagrams to the same port are echoed too. Serve: the first byte says which way
// data flows. Both are driven by the socket events. --json (serve): when weft leaves, one JSON object
// with each finished connection's bytes and seconds (accept to end of stream) and the device's
// counters, incl. a NAPI thread's CPU (bench/stack_vs_kernel.sh's receive-direction senders).
// Echo's --close-port and --hold-port (lab/hostile/differential.py's TIME-WAIT cases, where the
// server closes first): listeners whose connections echo their first data and then close, or
// half-close and keep the socket (the application has not let the connection go when it enters
// TIME-WAIT).
struct EchoCloseFirst {
  uint16_t close_port = 0, hold_port = 0;
};

int run_server(const Common& c, uint16_t port, bool echo, bool json, EchoCloseFirst first = {}) {
  Session s;
  if (auto st = s.open(c); !st) return fail_with(st.error());
  Sockets& sk = s.sockets();
  auto listener = sk.listen(port, 1024);
  if (!listener)
    return fail_with(Error{fmt::format("listen on port {}: {}", port, to_string(listener.error()))});
  std::unordered_map<SockId, char> first_listeners;  // --close-port 'c', --hold-port 'h'
  for (const auto& [p, m] : {std::pair{first.close_port, 'c'}, std::pair{first.hold_port, 'h'}}) {
    if (p == 0) continue;
    auto l = sk.listen(p, 1024);
    if (!l) return fail_with(Error{fmt::format("listen on port {}: {}", p, to_string(l.error()))});
    first_listeners[*l] = m;
  }
  SockResult<SockId> udp = echo ? sk.udp_bind(port) : std::unexpected(SockErr::bad_socket);
  fmt::print(stderr, "weft stack: {} on {}:{}{}\n", echo ? "echo" : "serving", c.ip.substr(0, c.ip.find('/')),
             port, udp ? " (TCP and UDP)" : "");
  std::unordered_map<SockId, ServerConn> conns;
  std::vector<uint8_t> buf(64 * 1024), pattern(256 * 1024);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7);
  std::vector<SockEvent> events(256);
  nlohmann::json done = nlohmann::json::array();
  auto finish = [&](SockId id, const ServerConn& sc) {
    const tcp::Connection& k = *sk.connection(id);
    print_done(k, sc.bytes);
    if (json)
      done.push_back({{"remote", ip_str(k.tuple().remote_ip)},
                      {"bytes", sc.bytes},
                      {"seconds", (s.clock.now_ns() - sc.start_ns) / 1e9}});
    sk.close(id);
  };
  // Moves what it can on one connection; false once it is finished with (closed here).
  auto serve_one = [&](SockId id, ServerConn& sc) {
    if (sc.after_first == 'H') {  // half-closed and kept: what still comes is read and dropped
      // Kept through TIME-WAIT, let go once the stack has closed it (else every connection to the
      // port stays for as long as weft runs).
      if (sk.connection(id)->is_closed()) {
        finish(id, sc);
        return false;
      }
      for (;;) {
        auto v = sk.recv_view(id);
        if (!v || v->first.empty()) return true;
        (void)sk.consume(id, v->first.size() + v->second.size());
      }
    }
    for (;;) {
      auto v = sk.recv_view(id);
      if (!v) {
        if (v.error() == SockErr::again) break;
        finish(id, sc);
        return false;
      }
      const auto [p1, p2] = *v;
      if (p1.empty()) {  // end of stream: everything was echoed or discarded
        finish(id, sc);
        return false;
      }
      size_t used = 0;
      if (echo) {
        for (wire::Bytes piece : {p1, p2}) {
          if (piece.empty()) break;
          auto n = sk.send(id, piece);
          if (!n) break;
          used += *n;
          if (*n < piece.size()) break;
        }
      } else {
        if (sc.mode == 0) sc.mode = static_cast<char>(p1[0]);
        used = p1.size() + p2.size();  // 'S' (and the mode byte): discarded in place
      }
      if (used == 0) break;  // no room to echo: a writable event comes back here
      sc.bytes += used;
      (void)sk.consume(id, used);
      if (sc.after_first == 'c') {
        finish(id, sc);
        return false;
      }
      if (sc.after_first == 'h') {
        (void)sk.shutdown(id);
        sc.after_first = 'H';
        return true;
      }
    }
    if (sc.mode == 'R') {
      for (;;) {
        auto n = sk.send(id, pattern);
        if (!n) break;
        sc.bytes += *n;
      }
    }
    return true;
  };
  const int64_t until = c.seconds > 0 ? s.clock.now_ns() + static_cast<int64_t>(c.seconds * 1e9) : INT64_MAX;
  s.run(until, [&] {
    for (size_t n; (n = sk.events(events)) > 0;) {
      for (size_t i = 0; i < n; ++i) {
        const SockId id = events[i].id;
        if (id == *listener) {
          for (SockResult<SockId> a; (a = sk.accept(*listener));) {
            (void)sk.set_nagle(*a, c.nagle);
            conns[*a].start_ns = s.clock.now_ns();
            if (serve_one(*a, conns[*a])) continue;
            conns.erase(*a);
          }
        } else if (auto fl = first_listeners.find(id); fl != first_listeners.end()) {
          for (SockResult<SockId> a; (a = sk.accept(id));) {
            (void)sk.set_nagle(*a, c.nagle);
            conns[*a].start_ns = s.clock.now_ns();
            conns[*a].after_first = fl->second;
            if (serve_one(*a, conns[*a])) continue;
            conns.erase(*a);
          }
        } else if (udp && id == *udp) {
          for (SockResult<DatagramInfo> d; (d = sk.recvfrom(*udp, buf));)
            (void)sk.sendto(*udp, d->src, d->src_port, wire::Bytes(buf.data(), std::min(d->len, buf.size())));
        } else if (auto it = conns.find(id); it != conns.end() && !serve_one(id, it->second)) {
          conns.erase(it);
        }
      }
    }
    return true;
  });
  if (json) {
    nlohmann::json j{{"connections", done}};
    j.update(device_json(s));
    fmt::print("{}\n", j.dump());
  }
  return 0;
}

// ---- connect --echo-check N: N bytes to an echo server, every byte checked on its way back ----
int run_echo_check(const Common& c, const std::string& server, uint16_t port, size_t total) {
  Session s;
  if (auto st = s.open(c); !st) return fail_with(st.error());
  wire::Ipv4Addr dst;
  uint8_t prefix = 0;
  if (!parse_cidr(server, dst, prefix)) return fail_with(Error{"bad server address " + server});
  Sockets& sk = s.sockets();
  auto id = sk.connect(dst, port);
  if (!id) return fail_with(Error{fmt::format("connect: {}", to_string(id.error()))});
  const tcp::Connection& conn = *sk.connection(*id);
  auto byte = [](size_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); };
  std::vector<uint8_t> buf(256 * 1024);
  size_t sent = 0, got = 0;
  bool bad = false, closed = false;
  const int64_t t0 = s.clock.now_ns();
  const double limit = c.seconds > 0 ? c.seconds : 120;
  s.run(t0 + static_cast<int64_t>(limit * 1e9), [&] {
    if (conn.is_closed()) return false;
    if (!conn.connected()) return true;
    while (sent < total) {  // written straight into the send ring
      auto r = sk.send_reserve(*id);
      if (!r) break;
      size_t k = 0;
      for (wire::MutBytes piece : {r->first, r->second})
        for (size_t i = 0; i < piece.size() && sent + k < total; ++i, ++k) piece[i] = byte(sent + k);
      sent += sk.send_commit(*id, k).value_or(0);
      if (k == 0) break;
    }
    for (SockResult<size_t> n; (n = sk.recv(*id, buf)) && *n > 0; got += *n)
      for (size_t i = 0; i < *n && !bad; ++i) bad = buf[i] != byte(got + i);
    if (bad) return false;
    if (got == total && !closed) {
      (void)sk.shutdown(*id);  // our FIN; the handle (and `conn`) stays until the end
      closed = true;
    }
    return !(got == total && (conn.state() == tcp::State::time_wait ||
                              conn.state() == tcp::State::fin_wait_2 || conn.is_closed()));
  });
  const double secs = (s.clock.now_ns() - t0) / 1e9;
  fmt::print(
      "{{\"bytes\":{},\"echoed\":{},\"match\":{},\"seconds\":{:.3f},\"retransmits\":{},\"timeouts\":{},"
      "\"fast_retransmits\":{},\"sack_retransmits\":{},\"tail_loss_probes\":{},\"rack_lost\":{},"
      "\"lost_retransmits\":{},\"out_of_order\":{},\"spurious_undone\":{},\"pmtu_reductions\":{},"
      "\"sack\":{},\"state\":\"{}\",\"reason\":\"{}\"}}\n",
      total, got, !bad && got == total, secs, conn.stats().retransmits, conn.stats().timeouts,
      conn.stats().fast_retransmits, conn.stats().sack_retransmits, conn.stats().tail_loss_probes,
      conn.stats().rack_lost, conn.stats().lost_retransmits, conn.stats().out_of_order,
      conn.stats().spurious_undone, conn.stats().pmtu_reductions, conn.sack_on(),
      tcp::to_string(conn.state()), tcp::to_string(conn.close_reason()));
  sk.close(*id);
  return !bad && got == total ? 0 : 1;
}

// ---- connect ----
int run_client(const Common& c, const std::string& server, uint16_t port, int streams, bool reverse,
               bool json, bool zerocopy) {
  Session s;
  if (auto st = s.open(c); !st) return fail_with(st.error());
  wire::Ipv4Addr dst;
  uint8_t prefix = 0;
  if (!parse_cidr(server, dst, prefix)) return fail_with(Error{"bad server address " + server});
  Sockets& sk = s.sockets();
  std::vector<SockId> conns;
  for (int i = 0; i < streams; ++i) {
    auto k = sk.connect(dst, port);
    if (!k) return fail_with(Error{fmt::format("connect: {}", to_string(k.error()))});
    (void)sk.set_nagle(*k, c.nagle);
    conns.push_back(*k);
  }
  auto conn = [&](SockId id) -> const tcp::Connection& { return *sk.connection(id); };
  std::vector<bool> said(conns.size(), false);
  // --zerocopy: bytes placed in each connection's send ring so far (the 'S' first), and its size.
  std::vector<size_t> placed(conns.size(), 1);
  const size_t ring_cap = c.buffer;
  std::vector<uint8_t> buf(256 * 1024), pattern(256 * 1024);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7);
  const double seconds = c.seconds > 0 ? c.seconds : 10;
  int64_t start = 0, last_tick = 0;
  uint64_t total = 0, interval_bytes = 0;
  nlohmann::json intervals = nlohmann::json::array();
  bool closing = false, failed = false;
  s.run(s.clock.now_ns() + static_cast<int64_t>((seconds + 30) * 1e9), [&] {
    const int64_t now = s.clock.now_ns();
    for (size_t i = 0; i < conns.size(); ++i) {
      const SockId id = conns[i];
      if (sk.error(id) != SockErr::again) failed = true;
      if (!conn(id).connected()) continue;
      if (start == 0) start = last_tick = now;
      if (!said[i]) {
        const uint8_t m = reverse ? 'R' : 'S';
        said[i] = sk.send(id, wire::Bytes(&m, 1)).value_or(0) == 1;
      }
      if (!closing && !reverse && zerocopy && said[i]) {
        // In place (Sockets::send_reserve): the stream's byte at offset s is pattern[s % 256],
        // written into the send ring only on its first lap; since the ring's capacity is a
        // multiple of 256, later laps find the same bytes where they were and commit them as
        // they are. The application's copy into the socket (send()) is then gone, as with
        // iperf3 -Z, leaving the one copy the device makes, as the kernel's sendmsg makes one.
        for (SockResult<std::pair<wire::MutBytes, wire::MutBytes>> r; (r = sk.send_reserve(id));) {
          size_t n = 0;
          for (wire::MutBytes piece : {r->first, r->second}) {
            if (placed[i] + n <= ring_cap || ring_cap % 256 != 0)
              for (size_t k = 0; k < piece.size(); ++k) piece[k] = pattern[(placed[i] + n + k) % 256];
            n += piece.size();
          }
          const size_t took = sk.send_commit(id, n).value_or(0);
          placed[i] += took;
          total += took;
          interval_bytes += took;
          if (took < n) break;
        }
      } else if (!closing && !reverse) {
        for (SockResult<size_t> n; (n = sk.send(id, pattern));) {
          total += *n;
          interval_bytes += *n;
        }
      }
      for (SockResult<std::pair<wire::Bytes, wire::Bytes>> v; (v = sk.recv_view(id)) && !v->first.empty();) {
        const size_t n = v->first.size() + v->second.size();  // counted and dropped in place
        (void)sk.consume(id, n);
        total += n;
        interval_bytes += n;
      }
    }
    if (failed) return false;
    if (start != 0 && now - last_tick >= 1'000'000'000) {
      const double secs = (now - last_tick) / 1e9;
      const double t0 = (last_tick - start) / 1e9;
      if (!json)
        fmt::print("[{:5.1f}-{:5.1f} s] {:10.2f} MB {:8.3f} Gb/s\n", t0, t0 + secs, interval_bytes / 1e6,
                   interval_bytes * 8 / secs / 1e9);
      intervals.push_back({{"start", t0},
                           {"seconds", secs},
                           {"bytes", interval_bytes},
                           {"bits_per_second", interval_bytes * 8 / secs}});
      interval_bytes = 0;
      last_tick = now;
    }
    if (!closing && start != 0 && now - start >= static_cast<int64_t>(seconds * 1e9)) {
      closing = true;
      for (SockId id : conns) (void)sk.shutdown(id);
    }
    return !closing || std::any_of(conns.begin(), conns.end(), [&](SockId id) {
      return conn(id).state() != tcp::State::time_wait && !conn(id).is_closed();
    });
  });
  const double elapsed = start ? (s.clock.now_ns() - start) / 1e9 : 0;
  uint64_t rtx = 0, undone = 0;
  for (SockId id : conns) rtx += conn(id).stats().retransmits;
  for (SockId id : conns) undone += conn(id).stats().spurious_undone;
  for (SockId id : conns) sk.close(id);
  if (json) {
    nlohmann::json j{{"streams", streams},
                     {"reverse", reverse},
                     {"bytes", total},
                     {"seconds", elapsed},
                     {"bits_per_second", elapsed > 0 ? total * 8 / elapsed : 0},
                     {"retransmits", rtx},
                     {"spurious_undone", undone},
                     {"intervals", intervals},
                     {"ok", !failed && start != 0}};
    j.update(device_json(s));
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print(
        "total {:.2f} MB in {:.2f} s = {:.3f} Gb/s, {} retransmits ({} spurious recoveries undone){}\n",
        total / 1e6, elapsed, elapsed > 0 ? total * 8 / elapsed / 1e9 : 0, rtx, undone,
        failed ? " (a connection failed)" : "");
  }
  return failed || start == 0 ? 1 : 0;
}

// The options of every `weft stack` subcommand, owned by the registration (docs/code.md).
struct StackOptions {
  Common c;
  std::string dest;
  int count = 4, streams = 1;
  double interval = 1;
  size_t size = 56;
  uint16_t port = 0;
  EchoCloseFirst first;
  bool reverse = false, json = false, zerocopy = false;
  size_t echo_check = 0;
};

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto* st =
      root.app.add_subcommand("stack", "weft's user-space TCP/IP stack on a TAP, AF_PACKET or DPDK device");
  st->require_subcommand(1);
  auto o = std::make_shared<StackOptions>();
  auto stop = [] { weft::on_stop_signal([] { g_stop.store(true); }); };

  auto* ping = st->add_subcommand("ping", "ICMP echo from the stack");
  add_common(ping, o->c);
  ping->add_option("dest", o->dest, "address to ping")->required();
  ping->add_option("-c", o->count, "echo requests to send")->capture_default_str();
  ping->add_option("-i", o->interval, "seconds between requests")->capture_default_str();
  ping->add_option("-s", o->size, "payload bytes")->capture_default_str();
  ping->callback([=] {
    stop();
    weft::cli::set_exit_code(run_ping(o->c, o->dest, std::max(o->count, 1), o->interval, o->size));
  });

  auto* echo = st->add_subcommand("echo", "TCP echo server (and ping responder)");
  add_common(echo, o->c);
  echo->add_option("--port", o->port, "TCP port (default 7)");
  echo->add_option("--close-port", o->first.close_port,
                   "also listen on this port, whose connections echo their first data and close");
  echo->add_option("--hold-port", o->first.hold_port,
                   "also listen on this port, whose connections echo their first data and half-close "
                   "(shutdown), the socket kept open until weft leaves");
  echo->callback([=] {
    stop();
    weft::cli::set_exit_code(run_server(o->c, o->port ? o->port : 7, true, false, o->first));
  });

  auto* serve = st->add_subcommand("serve", "iperf-like server");
  add_common(serve, o->c);
  serve->add_option("--port", o->port, "TCP port (default 5201)");
  serve->add_flag("--json", o->json,
                  "when leaving, one JSON object: each finished connection's bytes and seconds, and the "
                  "device's counters");
  serve->callback([=] {
    stop();
    weft::cli::set_exit_code(run_server(o->c, o->port ? o->port : 5201, false, o->json));
  });

  auto* conn = st->add_subcommand("connect", "iperf-like client");
  add_common(conn, o->c);
  conn->add_option("server", o->dest, "server address")->required();
  conn->add_option("--port", o->port, "TCP port (default 5201)");
  conn->add_option("-P", o->streams, "parallel streams")->capture_default_str();
  conn->add_flag("-R", o->reverse, "the server sends");
  conn->add_flag("--json", o->json, "one JSON object at the end instead of lines");
  conn->add_flag("--zerocopy", o->zerocopy,
                 "send in place through the zero-copy send path (as iperf3 -Z): the pattern is written "
                 "into the send buffer on its first lap only, so the application copies nothing");
  conn->add_option(
      "--echo-check", o->echo_check,
      "send this many bytes to an echo server (port default 7) and check every byte that comes back");
  conn->callback([=] {
    stop();
    if (o->echo_check > 0) {
      weft::cli::set_exit_code(run_echo_check(o->c, o->dest, o->port ? o->port : 7, o->echo_check));
      return;
    }
    weft::cli::set_exit_code(run_client(o->c, o->dest, o->port ? o->port : 5201, std::max(o->streams, 1),
                                        o->reverse, o->json, o->zerocopy));
  });
#ifndef WEFT_STACK_ONLY
  weft::cli::add_stack_run(st);  // `weft stack run -- PROGRAM`: cmd_stack_run.cpp
#endif
}};

}  // namespace
