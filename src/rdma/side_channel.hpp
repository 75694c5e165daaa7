#pragma once
// The TCP side channel for connection set-up: a listener, a connection, and exchanges of
// EndpointInfo records and barriers, every call with a timeout. Not for data: RDMA carries that.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/result.hpp"
#include "rdma/endpoint_info.hpp"

namespace weft::rdma {

using std::chrono::milliseconds;

class SideChannel {
 public:
  // Listens on host:port (port 0 picks one; see port()).
  static Result<SideChannel> listen(const std::string& host, uint16_t port);
  // Connects, retrying until timeout while the peer is not listening yet. With retry_refused
  // false a refusal is the answer at once (a peer that was listening a moment ago and refuses
  // now is gone: waiting for it to come back would only delay the error).
  static Result<SideChannel> connect(const std::string& host, uint16_t port, milliseconds timeout,
                                     bool retry_refused = true);

  Result<SideChannel> accept(milliseconds timeout);
  Result<uint16_t> port() const;
  int fd() const { return fd_.get(); }

  Status send_all(std::span<const std::byte> data, milliseconds timeout);
  Status recv_all(std::span<std::byte> data, milliseconds timeout);
  // Sends ours and receives theirs.
  Result<EndpointInfo> exchange(const EndpointInfo& mine, milliseconds timeout);
  // Sends ours and receives theirs, for records longer or other than EndpointInfo (several
  // buffers, parameters both sides must agree on): a 4-byte little-endian length, then the
  // bytes. A record from the peer longer than max_len is an error, not an allocation.
  Result<std::vector<std::byte>> exchange_record(std::span<const std::byte> mine, size_t max_len,
                                                 milliseconds timeout);
  // Both sides call it; returns when both got there.
  Status barrier(milliseconds timeout);
  // Whether the peer closed its end (FIN or reset; bytes it sent before do not count) within
  // `limit`. A process that died closes its end; a completion error that a death can cause
  // (peer_death_can_cause) is judged with this, because a dying process may tear down its verbs
  // objects a little before its sockets.
  bool peer_closed_within(milliseconds limit) const;

 private:
  explicit SideChannel(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace weft::rdma
