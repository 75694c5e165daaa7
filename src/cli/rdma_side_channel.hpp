#pragma once
// The TCP side channel of `weft rdma pingpong` and `weft rdma bench`, opened the same way by both:
// the server listens on BIND:PORT and waits (at least a minute) for one client, the client
// connects to HOST:PORT; the channel's local IPv4 address then picks the RoCE v2 GID.
#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "rdma/side_channel.hpp"

namespace weft::cli {

struct SideChannelArgs {
  bool server = false;
  std::string bind;    // server: where to listen
  std::string client;  // client: the server's host
  uint16_t port = 0;
  std::chrono::milliseconds timeout{5000};  // connect (client); the accept waits at least 60 s
};

// `who` names the command in log lines and errors ("pingpong", "bench").
Result<rdma::SideChannel> open_side_channel(const SideChannelArgs& a, std::string_view who);

// The local IPv4 address of the connected channel: the address whose RoCE v2 GID the command uses.
Result<in_addr> side_channel_ipv4(const rdma::SideChannel& chan, std::string_view who);

}  // namespace weft::cli
