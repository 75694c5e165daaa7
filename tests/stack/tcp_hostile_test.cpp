// Issue 26: the stack against a hostile or memory-starved peer, and Linux's answers where the
// RFCs leave room. Run by the packetdrill-style runner (tcp_script.hpp): exact segments on the
// virtual clock. Each scenario failed before the fix it names.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tcp_script.hpp"
#include "tcp_script_openings.hpp"

using weft::stack::test::active;
using weft::stack::test::passive;
using weft::stack::test::run_tcp_script;
using weft::stack::test::Scenario;
using weft::stack::test::scenario_name;

namespace {

// Three full segments out at 0.2; the peer (Linux pruning its queues under memory pressure) then
// acknowledges the first and shrinks its window to zero: its right edge, 1461, is now below what
// was sent (4381).
const std::string kShrunk = R"(
0.2   send 4380
0.2   > . 1:1461(1460) ack 1
0.2   > . 1461:2921(1460) ack 1
0.2   > P. 2921:4381(1460) ack 1
0.3   < . 1:1(0) ack 1461 win 0
)";

std::vector<Scenario> scenarios() {
  return {
      // --- Acceptable SEQ (RFC 9293 3.10.7.4; Linux's tcp_acceptable_seq) ---
      // A segment whose SEQ lies past the receiver's window is not acceptable and its ACK field is
      // not read. A pure ACK at SND.MAX after the peer shrank its window to 0 is such a segment:
      // the peer never learns its data arrived and the connection deadlocks. The ACK goes at the
      // window's right edge (SND.UNA + SND.WND) instead.
      {"PureAckSeqStaysInsideAShrunkenWindow", active("delack=0") + kShrunk + R"(
0.35  < P. 1:101(100) ack 1461 win 0
0.35  > . 1461:1461(0) ack 101
)"},
      // The same with window scaling: the right edge is SND.UNA + (0 << scale).
      {"PureAckSeqStaysInsideAShrunkenScaledWindow", R"(
0     config ts=0 delack=0
0     connect
0     > S 0:0(0) win 65535 <mss 1460,nop,wscale 3>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,nop,wscale 7>
0.1   > . 1:1(0) ack 1
)" + kShrunk + R"(
0.35  < P. 1:101(100) ack 1461 win 0
0.35  > . 1461:1461(0) ack 101
)"},
      // An abort's RST goes there too: at SND.MAX it would be outside the window (RFC 5961 3.2).
      {"AbortRstSeqStaysInsideAShrunkenWindow", active() + kShrunk + R"(
0.35  abort
0.35  > R. 1461:1461(0) ack 1
)"},
      // The peer shrinks its window to 0 with data in flight past it, then opens it again: the
      // retransmission timer keeps probing the closed window (SND.UNA - 1, which the peer must
      // answer), those probes carry the ACK of the peer's data where it reads it, and once the
      // window opens what it dropped is sent again and the stream completes.
      {"ShrunkToZeroThenReopenedCompletes", active("delack=0") + kShrunk + R"(
0.35  < P. 1:101(100) ack 1461 win 0
0.35  > . 1461:1461(0) ack 101
1.05  > . 1460:1460(0) ack 101
1.3   < . 101:101(0) ack 1461 win 65535
1.3   > . 1461:2921(1460) ack 101
1.4   < . 101:101(0) ack 2921 win 65535
1.4   > P. 2921:4381(1460) ack 101
1.5   < . 101:101(0) ack 4381 win 65535
1.5   recv 100
1.5   stat window_probes 1
1.5   stat timeouts 2
)"},
      // With SACK and RACK: the RTO marks everything lost, but only the head goes past a closed
      // window (Linux's tcp_retransmit_skb rule), as the probe; the rest once it opens.
      {"ShrunkToZeroThenReopenedCompletesWithRack", R"(
0     config ts=0 ws=0 delack=0 sack=1 rack=1
0     connect
0     > S 0:0(0) win 65535 <mss 1460,sackOK>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK>
0.1   > . 1:1(0) ack 1
)" + kShrunk + R"(
0.35  < P. 1:101(100) ack 1461 win 0
0.35  > . 1461:1461(0) ack 101
0.55  > . 1461:2921(1460) ack 101
0.6   < . 101:101(0) ack 1461 win 0
1.05  > . 1461:2921(1460) ack 101
1.1   < . 101:101(0) ack 1461 win 65535
1.2   < . 101:101(0) ack 2921 win 65535
1.2   > . 2921:4381(1460) ack 101
1.3   < . 101:101(0) ack 4381 win 65535
1.3   recv 100
)"},

      // --- Linux's answers where the RFCs leave room ---
      // Urgent data (RFC 9293 3.9, RFC 6093): the urgent pointer names the byte before it; Linux
      // takes that byte out of the stream unless SO_OOBINLINE (recv(MSG_OOB) reads it).
      {"UrgentByteLeavesTheStream", passive() + R"(
0.2   < UP. 1:11(10) ack 1 urg 5
0.24  > . 1:1(0) ack 11
0.3   recv 9 without 4
0.3   oob 4
)"},
      {"UrgentByteStaysInlineWithOobInline", passive("oob_inline=1") + R"(
0.2   < UP. 1:11(10) ack 1 urg 5
0.24  > . 1:1(0) ack 11
0.3   recv 10
0.3   oob 4
)"},
      {"UrgentPointerAheadOfTheData", passive() + R"(
0.2   < UP. 1:11(10) ack 1 urg 15
0.2   < P. 11:21(10) ack 1
0.24  > . 1:1(0) ack 21
0.3   recv 19 without 14
0.3   oob 14
)"},
      // Out-of-order segments that overlap with other bytes: the bytes held first are kept (the
      // second segment's copy of [1501, 2001) is zeros).
      {"OverlappingOutOfOrderSegmentsKeepTheFirstArrival", passive() + R"(
0.2   < . 1001:2001(1000) ack 1
0.2   > . 1:1(0) ack 1
0.2   < . 1501:2501(1000) ack 1 fill 0
0.2   > . 1:1(0) ack 1
0.2   < . 1:1001(1000) ack 1
0.2   > . 1:1(0) ack 2501
0.3   recv 2000 more
)"},
      // MSS 0 in a SYN is ignored (Linux's tcp_parse_options): RFC 9293's default of 536.
      {"SynWithMss0Gets536", R"(
0     config ts=0 ws=0 nagle=0
0     < S 0:0(0) win 65535 <mss 0>
0     > S. 0:0(0) ack 1 <mss 1460>
0.1   < . 1:1(0) ack 1
0.1   mss 536
0.2   send 600
0.2   > . 1:537(536) ack 1
0.2   > P. 537:601(64) ack 1
)"},
      // MSS 1: Linux's floor of 48 bytes (TCP_MIN_SND_MSS), less the 12 of timestamps.
      {"SynWithMss1GetsLinuxsFloorOf48", R"(
0     config ts=0 ws=0 nagle=0
0     < S 0:0(0) win 65535 <mss 1>
0     > S. 0:0(0) ack 1 <mss 1460>
0.1   < . 1:1(0) ack 1
0.1   mss 48
0.2   send 100
0.2   > . 1:49(48) ack 1
0.2   > . 49:97(48) ack 1
0.2   > P. 97:101(4) ack 1
)"},
      {"SynWithMss1AndTimestampsGets36", R"(
0     config ws=0
0     < S 0:0(0) win 65535 <mss 1,TS val 50 ecr 0>
0     > S. 0:0(0) ack 1 <mss 1460,TS val * ecr 50>
0.1   < . 1:1(0) ack 1 <TS val 60 ecr 1>
0.1   mss 36
)"},
  };
}

class TcpHostile : public testing::TestWithParam<Scenario> {};

TEST_P(TcpHostile, Runs) {
  const std::string err = run_tcp_script(GetParam().script);
  EXPECT_EQ(err, "");
}

INSTANTIATE_TEST_SUITE_P(Issue26, TcpHostile, testing::ValuesIn(scenarios()), scenario_name);

}  // namespace
