#pragma once
// An in-process script runner in packetdrill's spirit (google/packetdrill's design, none of its
// code): one Connection on a virtual clock, segments injected through the wire builders and
// parser, and every segment the stack sends matched, in order and at its time, by an expect line.
//
// Script lines, `TIME EVENT` (TIME in seconds, absolute, or +relative to the line before):
//   < FLAGS START:END(LEN) [ack N] [win W] [<OPTIONS>]   a segment from the peer
//   > FLAGS START:END(LEN) [ack N] [win W] [<OPTIONS>]   the segment the stack must send now
//   connect | close | abort | send N | recv N [without K] [more] | nagle on|off | oob K
//     (recv ... without K: the stream's byte at offset K is left out, as an urgent byte is;
//      more: bytes past the N may be readable;
//      oob K: Connection::oob_byte() is the stream's byte at offset K)
//   icmp KIND SEQ [mtu N] [len L]   an ICMP error (port_unreachable, frag_needed, ...) quoting
//                                   the stack's segment with relative sequence number SEQ
//   state NAME | reason NAME | cwnd N | ssthresh N | pipe N | rto_ms N | mss N | stat NAME N
//   config KEY=VALUE...   (before the connection exists: mss, rcvbuf, sndbuf, ws, ts, delack,
//                          nagle, iss, peer_iss, keepalive, keepalive_idle_ms, tlp, ... )
//   Tail loss probes (tlp), SACK (sack) and RACK (rack) are off and congestion control is Reno
//   (cc=reno|cubic) unless a script says otherwise: the RFC scenarios written before them check the RTO and
//   NewReno alone, as packetdrill scripts pin the sysctls they rely on.
// FLAGS as tcpdump: S F R P U and '.' for ACK (`urg N` sets the urgent pointer; `fill B` in a `<`
// line sends bytes B instead of the stream's pattern: other bytes for the same sequence). Sequence
// numbers are relative to the sender's ISN and ACK numbers to the receiver's, as in packetdrill;
// SACK blocks are relative to the ISN of
// the side whose data they acknowledge (the stack's in `<` lines, the peer's in `>` lines).
// OPTIONS: mss N, wscale N, sackOK, TS val V ecr E (V may be *), sack L:R ..., nop (ignored:
// the stack's layout is canonical). An expect line without `win` or OPTIONS does not check them.
// Payload bytes are a pattern of the stream offset in each direction, so `recv` and every
// expected segment check content, not only lengths. The first `< S` creates the connection as a
// listener would (accept_syn). At the end no segment may be left unmatched.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace weft::stack::test {

// Runs the script; returns "" on success or a message naming the line that failed.
std::string run_tcp_script(const std::string& script);

// A named script, for the parameterized suites of scenarios (one test per scenario, named by it):
//   INSTANTIATE_TEST_SUITE_P(Rfc, Suite, testing::ValuesIn(scenarios()), scenario_name);
struct Scenario {
  const char* name;
  std::string script;
};
inline void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }
inline std::string scenario_name(const testing::TestParamInfo<Scenario>& i) { return i.param.name; }

}  // namespace weft::stack::test
