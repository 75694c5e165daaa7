// IPv4 reassembly: the input is a series of fragments (ident, offset, flags, length, bytes) fed
// to a reassembler with a small memory budget and a virtual clock (timeouts, refusals for memory,
// overlaps all reachable); two source addresses, so the per-source share is reached too.
#include <cstring>
#include <vector>

#include "stack/wire/ipv4_reassembly.hpp"
#include "stack_fuzz_common.hpp"

using namespace weft::stack::wire;
using namespace weft::stack::wire::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kLimit = 160 * 1024, kPerSource = 96 * 1024;
  Ipv4Reassembler r({.memory_limit = kLimit, .per_source_limit = kPerSource, .timeout_ns = 50});
  // The value every byte of the fragment carries is derived from its offset, so a completed
  // datagram must read as that pattern everywhere (fragments agree on overlaps by construction,
  // and the test is that nothing is misplaced, lost or left uninitialised).
  static uint8_t buf[kIpv4MaxPacket];
  int64_t now = 0;
  size_t i = 0;
  while (i + 5 <= size) {
    const uint8_t ident = data[i] & 3;
    const uint8_t source = (data[i] >> 2) & 1;
    const uint16_t off = static_cast<uint16_t>((data[i + 1] << 8 | data[i + 2]) & 0xfff8);
    const bool more = data[i + 3] & 1;
    now += data[i + 3] >> 4;
    size_t len = data[i + 4] * 8u + (more ? 0 : (data[i + 3] >> 1) & 7);
    i += 5;
    if (more && len == 0) len = 8;
    if (off + len > kIpv4MaxPacket) continue;
    for (size_t k = 0; k < len; ++k) buf[k] = static_cast<uint8_t>((off + k) * 13 + ident);
    Ipv4Packet p;
    p.src = Ipv4Addr::of(1, 2, 3, static_cast<uint8_t>(4 + source));
    p.dst = Ipv4Addr::of(5, 6, 7, 8);
    p.protocol = 17;
    p.ident = ident;
    p.frag_offset = off;
    p.more_fragments = more;
    p.payload = Bytes(buf, len);
    Bytes out;
    const auto o = r.feed(p, now, out);
    if (o == Ipv4Reassembler::Outcome::complete) {
      for (size_t k = 0; k < out.size(); ++k) require(out[k] == static_cast<uint8_t>(k * 13 + ident));
    } else {
      require(out.empty());
    }
    require(r.memory() <= kLimit);
    require(r.in_progress() <= 8);
  }
  return 0;
}
