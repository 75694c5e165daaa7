#include "msg/connection.hpp"

#include <unistd.h>

#include <algorithm>

#include "msg/shared_ring_math.hpp"
#include "msg/types.hpp"

namespace weft::msg {

uint64_t ring_bytes_for(const Options& o) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t want =
      o.ring_bytes ? o.ring_bytes : std::max<uint64_t>(uint64_t{1} << 20, 4 * uint64_t{o.max_message});
  return (want + page - 1) / page * page;
}

Result<std::unique_ptr<Connection>> open_connection(rdma::SideChannel ch, const Options& o) {
  if (o.max_message == 0 || o.max_message > (1u << 24))
    return fail("msg: max message {} bytes is outside 1..16 MiB", o.max_message);
  if (o.slots < 2 || o.slots > 4096) return fail("msg: {} slots is outside 2..4096", o.slots);
  switch (o.kind) {
    case Kind::send_recv:
      return open_send_recv(std::move(ch), o, false);
    case Kind::send_recv_srq:
      return open_send_recv(std::move(ch), o, true);
    case Kind::read_pull:
      return open_read_pull(std::move(ch), o);
    case Kind::simplex_ring:
    case Kind::magic_ring:
    case Kind::duplex_ring:
    case Kind::faa_ring:
    case Kind::shared_ring: {
      // A ring must hold the message the receiver still holds, a quarter ring of released but
      // unacknowledged bytes, a skipped tail and the next message (see write_ring.cpp).
      if (ring_bytes_for(o) < 4 * reserved_bytes(o.max_message))
        return fail("msg: a {}-byte ring is smaller than 4 x max message ({})", ring_bytes_for(o),
                    o.max_message);
      if (ring_bytes_for(o) > (uint64_t{1} << 32))
        return fail("msg: a {}-byte ring is above 4 GiB (offsets travel in 32-bit immediates)",
                    ring_bytes_for(o));
      RingMode m;
      m.double_mapped = o.kind != Kind::simplex_ring;
      m.read_ack = o.kind == Kind::duplex_ring || o.kind == Kind::faa_ring || o.kind == Kind::shared_ring;
      m.reserve_faa = o.kind == Kind::faa_ring || o.kind == Kind::shared_ring;
      m.shared = o.kind == Kind::shared_ring;
      return open_write_ring(std::move(ch), o, m);
    }
  }
  return fail("msg: unknown connection type");
}

}  // namespace weft::msg
