// Writes the seed corpus shared by the stack wire fuzzers: whole frames built with the wire
// builders (TCP SYN with every option, data with timestamps and SACK, FIN, RST, UDP, ICMP echo,
// ARP, an IP fragment), each frame's IP packet and transport message on their own, and a few
// fragment series in the reassembly fuzzer's format.
#include <vector>

#include "seed_corpus.hpp"
#include "stack/wire/frame.hpp"

using namespace weft::stack::wire;

int main(int argc, char** argv) {
  std::vector<std::vector<uint8_t>> seeds;
  std::vector<uint8_t> buf(2048);
  L2L3 l;
  l.src_mac = {{2, 0, 0, 0, 0, 1}};
  l.dst_mac = {{2, 0, 0, 0, 0, 2}};
  l.ip.src = Ipv4Addr::of(10, 0, 0, 1);
  l.ip.dst = Ipv4Addr::of(10, 0, 0, 2);
  auto add_frame = [&](size_t n) {
    std::vector<uint8_t> f(buf.begin(), buf.begin() + static_cast<long>(n));
    seeds.push_back(f);
    seeds.emplace_back(f.begin() + kEthernetHeader, f.end());  // IP packet
    if (f.size() > kEthernetHeader + kIpv4Header)              // transport message
      seeds.emplace_back(f.begin() + kEthernetHeader + kIpv4Header, f.end());
  };
  TcpHeader syn;
  syn.src_port = 40000;
  syn.dst_port = 5201;
  syn.seq = 1;
  syn.flags = tcpflag::syn;
  syn.window = 64240;
  syn.options.has_mss = true;
  syn.options.mss = 1460;
  syn.options.sack_permitted = true;
  syn.options.has_timestamps = true;
  syn.options.ts_val = 1000;
  syn.options.has_wscale = true;
  syn.options.wscale = 7;
  add_frame(build_tcp_frame(buf, l, syn, {}));
  TcpHeader data = syn;
  data.flags = tcpflag::ack | tcpflag::psh;
  data.options = {};
  data.options.has_timestamps = true;
  data.options.sack_count = 2;
  data.options.sack[0] = {100, 200};
  data.options.sack[1] = {300, 400};
  const std::vector<uint8_t> payload(100, 'x');
  add_frame(build_tcp_frame(buf, l, data, payload));
  data.options = {};
  data.flags = tcpflag::fin | tcpflag::ack;
  add_frame(build_tcp_frame(buf, l, data, {}));
  data.flags = tcpflag::rst;
  add_frame(build_tcp_frame(buf, l, data, {}));
  add_frame(build_udp_frame(buf, l, 53, 4000, payload));
  add_frame(build_icmp_frame(buf, l, icmptype::echo_request, 0, 1, 1, payload));
  add_frame(
      build_arp_frame(buf, MacAddr::broadcast(), {ArpOp::request, l.src_mac, l.ip.src, MacAddr{}, l.ip.dst}));
  l.ip.more_fragments = true;
  l.ip.dont_fragment = false;
  add_frame(build_udp_frame(buf, l, 53, 4000, std::vector<uint8_t>(96, 'f')));
  // Reassembly series: (ident, offset hi, offset lo, flags, length/8) per fragment.
  seeds.push_back({1, 0, 0, 0x11, 3, 1, 0, 24, 0x10, 2});
  seeds.push_back({2, 0, 16, 0x11, 2, 2, 0, 0, 0x11, 2, 2, 0, 8, 0x11, 2, 2, 0, 32, 0x06, 0});
  seeds.push_back({1, 0, 0, 0x11, 1, 2, 0, 0, 0x11, 1, 3, 0, 0, 0xf1, 1, 1, 0, 8, 0x00, 1});
  return weft::fuzz::write_seed_corpus(argc, argv, seeds);
}
