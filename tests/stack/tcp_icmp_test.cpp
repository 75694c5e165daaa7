// ICMP errors for TCP (RFC 1122 4.2.3.9, RFC 5461, RFC 5927) and path MTU discovery (RFC 1191),
// run by the packetdrill-style runner (tcp_script.hpp): exact segments on the virtual clock.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tcp_script.hpp"

using weft::stack::test::run_tcp_script;
using weft::stack::test::Scenario;
using weft::stack::test::scenario_name;

namespace {

// Active open without window scaling or timestamps (RTT 100 ms, RTO 300 ms after it).
const std::string kSynSent = R"(
0     config ts=0 ws=0
0     connect
0     > S 0:0(0) win 65535 <mss 1460>
)";
const std::string kActive = kSynSent + R"(
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460>
0.1   > . 1:1(0) ack 1
0.1   state ESTABLISHED
)";

std::vector<Scenario> scenarios() {
  return {
      // --- Errors to a connect (RFC 5461 4: SYN-SENT fails at once, as Linux and the BSDs) ---
      {"PortUnreachableRefusesTheConnect", kSynSent + R"(
0.05  icmp port_unreachable 0
0.05  state CLOSED
0.05  reason refused
0.05  stat icmp_errors 1
5     state CLOSED
)"},
      {"HostUnreachableFailsTheConnect", kSynSent + R"(
0.05  icmp host_unreachable 0
0.05  state CLOSED
0.05  reason unreachable
)"},
      {"ProtocolUnreachableFailsTheConnect", kSynSent + R"(
0.05  icmp proto_unreachable 0
0.05  reason unreachable
)"},
      {"TimeExceededDoesNotFailTheConnect", kSynSent + R"(
0.05  icmp time_exceeded 0
0.05  state SYN-SENT
1     > S 0:0(0) win 65535 <mss 1460>
)"},
      // RFC 5927 4.1: the quoted sequence number must be in flight (here only the SYN, ISS).
      {"ForgedUnreachableWithAnotherSeqIsIgnored", kSynSent + R"(
0.05  icmp port_unreachable 1
0.05  icmp port_unreachable 4000000000
0.05  state SYN-SENT
0.05  stat icmp_ignored 2
0.05  stat icmp_errors 0
1     > S 0:0(0) win 65535 <mss 1460>
1.1   < S. 0:0(0) ack 1 win 65535 <mss 1460>
1.1   > . 1:1(0) ack 1
1.1   state ESTABLISHED
)"},
      // --- Synchronized: soft errors (RFC 1122 4.2.3.9, RFC 5927 4.1) ---
      {"UnreachableWhenEstablishedIsSoft", kActive + R"(
0.2   send 1000
0.2   > P. 1:1001(1000) ack 1
0.25  icmp port_unreachable 1
0.25  icmp host_unreachable 1
0.25  state ESTABLISHED
0.25  stat icmp_errors 2
0.3   < . 1:1(0) ack 1001
0.4   state ESTABLISHED
)"},
      {"ErrorForAckedDataIsIgnored", kActive + R"(
0.2   send 1000
0.2   > P. 1:1001(1000) ack 1
0.3   < . 1:1(0) ack 1001
0.35  icmp port_unreachable 1
0.35  stat icmp_ignored 1
0.35  state ESTABLISHED
)"},
      // --- Path MTU discovery (RFC 1191) ---
      // DF segments of 1460 meet a 1000-byte hop: the MSS becomes 960 and what was in flight goes
      // again in that size at once (Nagle holds back new data only), with cwnd and ssthresh as
      // they were (RFC 1191 6.5).
      {"FragNeededLowersTheMssAndResends", kActive + R"(
0.2   nagle off
0.2   send 2920
0.2   > . 1:1461(1460) ack 1
0.2   > P. 1461:2921(1460) ack 1
0.21  icmp frag_needed 1 mtu 1000
0.21  > . 1:961(960) ack 1
0.21  > . 961:1921(960) ack 1
0.21  > . 1921:2881(960) ack 1
0.21  > P. 2881:2921(40) ack 1
0.21  mss 960
0.21  stat pmtu_reductions 1
0.21  cwnd 14600
0.31  < . 1:1(0) ack 2921
0.31  cwnd 15560
0.31  stat fast_retransmits 0
0.31  stat timeouts 0
0.4   send 1000
0.4   > . 2921:3881(960) ack 1
0.4   > P. 3881:3921(40) ack 1
)"},
      // RFC 1191 7: a router that sends no MTU: the plateau below the quoted length (1500 -> 1492).
      {"FragNeededWithoutMtuTakesThePlateauBelow", kActive + R"(
0.2   send 1460
0.2   > P. 1:1461(1460) ack 1
0.21  icmp frag_needed 1 mtu 0 len 1500
0.21  > . 1:1453(1452) ack 1
0.21  > P. 1453:1461(8) ack 1
0.21  mss 1452
)"},
      // A floor of 552 (Linux's min_pmtu): a forged tiny MTU cannot shred the connection.
      {"FragNeededNeverGoesBelow552", kActive + R"(
0.2   send 1460
0.2   > P. 1:1461(1460) ack 1
0.21  icmp frag_needed 1 mtu 68
0.21  > . 1:513(512) ack 1
0.21  > . 513:1025(512) ack 1
0.21  > P. 1025:1461(436) ack 1
0.21  mss 512
)"},
      // Larger than the current path MTU, or quoting nothing in flight: nothing changes.
      {"FragNeededThatCannotBeOursIsIgnored", kActive + R"(
0.2   send 1460
0.2   > P. 1:1461(1460) ack 1
0.21  icmp frag_needed 1 mtu 9000
0.21  icmp frag_needed 1461 mtu 1000
0.21  mss 1460
0.21  stat icmp_ignored 1
0.21  stat pmtu_reductions 0
)"},
      // With SACK and RACK the oversized segments are marked lost and resent by RACK's loop.
      {"FragNeededWithRackResendsOnlyTheOversized", R"(
0     config ts=0 ws=0 sack=1 rack=1
0     connect
0     > S 0:0(0) win 65535 <mss 1460,sackOK>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK>
0.1   > . 1:1(0) ack 1
0.2   nagle off
0.2   send 1960
0.2   > . 1:1461(1460) ack 1
0.2   > P. 1461:1961(500) ack 1
0.21  icmp frag_needed 1 mtu 1000
0.21  > . 1:961(960) ack 1
0.21  > . 961:1461(500) ack 1
0.3   < . 1:1(0) ack 1961
0.3   stat fast_retransmits 0
0.3   pipe 0
)"},
  };
}

class TcpIcmp : public testing::TestWithParam<Scenario> {};

TEST_P(TcpIcmp, Runs) { EXPECT_EQ(run_tcp_script(GetParam().script), ""); }

INSTANTIATE_TEST_SUITE_P(Rfc, TcpIcmp, testing::ValuesIn(scenarios()), scenario_name);

}  // namespace
