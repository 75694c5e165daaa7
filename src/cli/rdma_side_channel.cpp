#include "cli/rdma_side_channel.hpp"

#include <sys/socket.h>

#include <algorithm>

#include "base/log.hpp"
#include "net/socket.hpp"

namespace weft::cli {

Result<rdma::SideChannel> open_side_channel(const SideChannelArgs& a, std::string_view who) {
  if (!a.server) return rdma::SideChannel::connect(a.client, a.port, a.timeout);
  auto l = rdma::SideChannel::listen(a.bind, a.port);
  if (!l) return std::unexpected(l.error());
  log().info("rdma {} server: waiting on {}:{}", who, a.bind, a.port);
  return l->accept(std::max(a.timeout, std::chrono::milliseconds(60'000)));
}

Result<in_addr> side_channel_ipv4(const rdma::SideChannel& chan, std::string_view who) {
  auto a = net::local_address(chan.fd());
  if (!a) return std::unexpected(a.error());
  if (a->family() != AF_INET) return fail("{}: the side channel is not IPv4 ({})", who, a->to_string());
  return reinterpret_cast<const sockaddr_in*>(a->sa())->sin_addr;
}

}  // namespace weft::cli
