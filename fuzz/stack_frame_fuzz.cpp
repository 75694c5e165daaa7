// The whole-frame parser (Ethernet down to TCP/UDP/ICMP, ARP), with and without checksums: never
// crashes, and every span it returns lies inside the frame.
#include "stack/wire/frame.hpp"
#include "stack_fuzz_common.hpp"

using namespace weft::stack::wire;
using namespace weft::stack::wire::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool verify : {true, false}) {
    ParsedFrame f;
    if (parse_frame(Bytes(data, size), f, verify) != ParseError::ok) continue;
    require_inside(f.eth.payload, data, size);
    switch (f.kind) {
      case FrameKind::tcp:
        require_inside(f.tcp.payload, data, size);
        require_inside(f.ip.payload, data, size);
        break;
      case FrameKind::udp:
        require_inside(f.udp.payload, data, size);
        break;
      case FrameKind::icmp:
        require_inside(f.icmp.payload, data, size);
        break;
      case FrameKind::ipv4_fragment:
      case FrameKind::ipv4_other:
        require_inside(f.ip.payload, data, size);
        require_inside(f.ip.options, data, size);
        break;
      default:
        break;
    }
  }
  return 0;
}
