// Ethernet and ARP parsers: accepted input re-emits to the same bytes.
#include <cstring>

#include "stack/wire/arp.hpp"
#include "stack/wire/ethernet.hpp"
#include "stack_fuzz_common.hpp"

using namespace weft::stack::wire;
using namespace weft::stack::wire::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  EthernetFrame e;
  if (parse_ethernet(Bytes(data, size), e) == ParseError::ok) {
    require(size >= kEthernetHeader && e.payload.size() == size - kEthernetHeader);
    uint8_t again[kEthernetHeader];
    require(emit_ethernet(again, e.dst, e.src, e.ethertype) == kEthernetHeader);
    require(std::memcmp(again, data, kEthernetHeader) == 0);
  }
  ArpPacket a;
  if (parse_arp(Bytes(data, size), a) == ParseError::ok) {
    uint8_t again[kArpSize];
    require(emit_arp(again, a) == kArpSize && std::memcmp(again, data, kArpSize) == 0);
  }
  return 0;
}
