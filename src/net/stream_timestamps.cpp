#include "net/stream_timestamps.hpp"

#include <linux/net_tstamp.h>

namespace weft::net {

namespace {
// SOF_TIMESTAMPING_OPT_ID_TCP (Linux 6.2): start the byte counter at write_seq. Not in older
// headers; older kernels refuse it, and then plain OPT_ID (snd_una) is the same thing on a socket
// with nothing in flight.
constexpr unsigned kOptIdTcp = 1u << 16;
}  // namespace

Status enable_stream_timestamping(int fd) {
  const unsigned flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_RX_HARDWARE |
                         SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RAW_HARDWARE |
                         SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_TX_HARDWARE |
                         SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  const unsigned with_tcp = flags | kOptIdTcp;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &with_tcp, sizeof with_tcp) == 0) return {};
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0) return {};
  return fail_errno("setsockopt(SO_TIMESTAMPING, stream)");
}

}  // namespace weft::net
