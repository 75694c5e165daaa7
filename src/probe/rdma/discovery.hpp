#pragma once
// Learning a peer's RDMA address (QPN, qkey, GID, LID) without a controller: the RDMA responder
// answers a tiny UDP exchange next to its QP (`weft rdma responder`, default port 7779), and
// `weft ping rdma DEVICE:HOST` asks it. With a controller, agents get peers' addresses with the
// pinglist instead (not done yet; see docs/rdma-probes.md).
//
//   request (8 bytes):  0 magic "WFRQ"  4 version u8 (1)  5..7 zero
//   reply  (40 bytes):  0 magic "WFRA"  4 version u8 (1)  5 flags u8 (0x01 ethernet)  6 port u8
//                       7 zero  8 qpn u32  12 qkey u32  16 lid u16  18 gid_index u16  20 zero u32
//                       24 gid[16]
// Network byte order; strict parsing like the probe formats.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "base/event_fd.hpp"
#include "base/fd.hpp"
#include "base/result.hpp"
#include "probe/rdma/engine.hpp"

namespace weft::probe::rdma_discovery {

inline constexpr uint16_t kDefaultPort = 7779;
inline constexpr size_t kRequestSize = 8;
inline constexpr size_t kReplySize = 40;

std::array<uint8_t, kRequestSize> encode_request();
bool is_request(std::span<const uint8_t> in);
std::array<uint8_t, kReplySize> encode_reply(const RdmaAddress& a);
// The address in a reply (device name unknown: empty), or nullopt when it is not a valid reply.
std::optional<RdmaAddress> decode_reply(std::span<const uint8_t> in);

// Asks HOST:PORT (up to 3 tries within timeout).
Result<RdmaAddress> query(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

// Answers requests on a UDP socket from its own thread until destroyed.
class Server {
 public:
  // ip: an IPv4/IPv6 literal to bind ("0.0.0.0", "::"); port 0 = ephemeral.
  static Result<std::unique_ptr<Server>> start(const std::string& ip, uint16_t port,
                                               const RdmaAddress& address);
  ~Server();
  uint16_t port() const { return port_; }
  uint64_t answered() const { return answered_.load(); }
  uint64_t rejected() const { return rejected_.load(); }

 private:
  Server(Fd fd, EventFd stop, uint16_t port, const RdmaAddress& a);
  void loop();
  Fd fd_;
  // Made readable by the destructor: the thread sleeps in poll() on the socket and this until
  // either fires, instead of waking every 100 ms to look at a flag (each wake-up takes the CPU
  // from a busy-polling responder on a small host).
  EventFd stop_;
  uint16_t port_;
  std::array<uint8_t, kReplySize> reply_;
  std::atomic<uint64_t> answered_{0}, rejected_{0};
  std::thread thread_;
};

}  // namespace weft::probe::rdma_discovery
