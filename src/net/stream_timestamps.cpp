#include "net/stream_timestamps.hpp"

namespace weft::net {

namespace {
// SOF_TIMESTAMPING_OPT_ID_TCP (Linux 6.2): start the byte counter at write_seq. Not in older
// headers; older kernels refuse it, and then plain OPT_ID (snd_una) is the same thing on a socket
// with nothing in flight.
constexpr unsigned kOptIdTcp = 1u << 16;
}  // namespace

Status enable_stream_timestamping(int fd) {
  if (enable_timestamping(fd, true, kOptIdTcp)) return {};
  return enable_timestamping(fd, true);
}

}  // namespace weft::net
