// IPv4 header parser: spans stay inside the input, the fields obey what the parser promises, and
// a header without options re-emits to the same bytes (the checksum may differ only in sign of
// zero, so it is checked by parsing again).
#include <cstring>

#include "stack/wire/ipv4.hpp"
#include "stack_fuzz_common.hpp"

using namespace weft::stack::wire;
using namespace weft::stack::wire::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool verify : {true, false}) {
    Ipv4Packet p;
    if (parse_ipv4(Bytes(data, size), p, verify) != ParseError::ok) continue;
    require_inside(p.options, data, size);
    require_inside(p.payload, data, size);
    require(p.options.size() % 4 == 0 && p.options.size() <= 40);
    require(size_t{p.frag_offset} + p.payload.size() <= kIpv4MaxPacket);
    require(!p.more_fragments || (p.payload.size() % 8 == 0 && !p.payload.empty()));
    if (!p.options.empty()) continue;
    static uint8_t again[kIpv4MaxPacket];
    const Ipv4Emit e{p.tos, p.ident, p.dont_fragment, p.more_fragments, p.frag_offset, p.ttl, p.protocol,
                     p.src, p.dst};
    require(emit_ipv4(again, e, p.payload.size()) == kIpv4Header);
    require(std::memcmp(again, data, 10) == 0 && std::memcmp(again + 12, data + 12, 8) == 0);
    if (!p.payload.empty()) std::memcpy(again + kIpv4Header, p.payload.data(), p.payload.size());
    Ipv4Packet q;
    require(parse_ipv4(Bytes(again, kIpv4Header + p.payload.size()), q, true) == ParseError::ok);
    require(q.ident == p.ident && q.frag_offset == p.frag_offset && q.payload.size() == p.payload.size());
  }
  return 0;
}
