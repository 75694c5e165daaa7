#pragma once
// The MAC `weft stack run` gives a stack with address `ip`: locally administered, 02:77 then the
// IPv4 address, the same every run. A program restarted on the stack keeps the neighbour entries
// its peers hold (a random MAC per run left a router sending the next program's frames to the
// previous MAC until its entry failed), and `weft stack run` can check before the program starts
// that no other stack holds the address on the interface (interface_claim.hpp).
#include <cstdint>

#include "stack/wire/types.hpp"

namespace weft::stack {

inline wire::MacAddr stable_mac(uint32_t ip) {
  return {{0x02, 0x77, static_cast<uint8_t>(ip >> 24), static_cast<uint8_t>(ip >> 16),
           static_cast<uint8_t>(ip >> 8), static_cast<uint8_t>(ip)}};
}

}  // namespace weft::stack
