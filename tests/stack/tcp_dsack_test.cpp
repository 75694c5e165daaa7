// D-SACK (RFC 2883): the receiver reports duplicates in the first SACK block; the sender takes a
// recovery whose every retransmission was reported as a duplicate for a spurious one and undoes
// its window reduction (RFC 3708's detection, Linux's tcp_try_undo_dsack). Run by the
// packetdrill-style runner (tcp_script.hpp): exact segments on the virtual clock.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tcp_script.hpp"

using weft::stack::test::run_tcp_script;
using weft::stack::test::Scenario;
using weft::stack::test::scenario_name;

namespace {

// Both sides offer SACK; no window scaling or timestamps; RTT 100 ms; Reno (the runner's default).
const std::string kSackActive = R"(
0     config ts=0 ws=0 sack=1
0     connect
0     > S 0:0(0) win 65535 <mss 1460,sackOK>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK>
0.1   > . 1:1(0) ack 1
)";
const std::string kSackPassive = R"(
0     config ts=0 ws=0 sack=1
0     < S 0:0(0) win 65535 <mss 1460,sackOK>
0     > S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK>
0.1   < . 1:1(0) ack 1 win 65535
)";

// Ten full segments out at 0.2 (cwnd 14600).
std::string flight() {
  std::string out = "0.2   send 14600\n";
  for (uint32_t i = 0; i < 10; ++i) {
    const uint32_t l = 1 + i * 1460, r = l + 1460;
    out += std::string("0.2   ") + (i == 9 ? "> P. " : "> . ") + std::to_string(l) + ":" + std::to_string(r) +
           "(1460) ack 1\n";
  }
  return out;
}

// Segment 1 is late, not lost: three SACKs make a fast retransmit of it, then the original's ACK
// covers everything and the retransmission comes back as a duplicate.
const std::string kSpuriousFastRetransmit = kSackActive + flight() + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   < . 1:1(0) ack 1 <sack 1461:4381>
0.3   < . 1:1(0) ack 1 <sack 1461:5841>
0.3   > . 1:1461(1460) ack 1
0.3   cwnd 7300
0.3   ssthresh 7300
0.31  < . 1:1(0) ack 14601
0.31  cwnd 2920
)";

// RACK on; segment 1 arrives after segment 2 (reordering seen, RACK.min_rtt 100 ms).
const std::string kReorderingSeen = "0 config rack=1\n" + kSackActive + flight() + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.31  < . 1:1(0) ack 2921
)";

std::vector<Scenario> scenarios() {
  return {
      // --- Receiver (RFC 2883 4) ---
      {"DuplicateBelowRcvNxtIsReportedOnceFirst", kSackPassive + R"(
0.2   < P. 1:1001(1000) ack 1
0.24  > . 1:1(0) ack 1001 <>
0.3   < P. 1:1001(1000) ack 1
0.3   > . 1:1(0) ack 1001 <sack 1:1001>
0.3   stat dsacks_sent 1
0.4   < P. 1001:2001(1000) ack 1
0.44  > . 1:1(0) ack 2001 <>
)"},
      {"PartlyDuplicateSegmentReportsTheDuplicatePart", kSackPassive + R"(
0.2   < P. 1:1001(1000) ack 1
0.24  > . 1:1(0) ack 1001
0.3   < P. 501:1501(1000) ack 1
0.3   > . 1:1(0) ack 1501 <sack 501:1001>
)"},
      // RFC 2883 4.1.3: a duplicate above a gap comes with the block that holds it, then the rest.
      {"DuplicateAboveAGapComesWithItsBlock", kSackPassive + R"(
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 1461:2921>
0.2   < . 4381:5841(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 4381:5841 1461:2921>
0.3   < . 1461:2921(1460) ack 1
0.3   > . 1:1(0) ack 1 <sack 1461:2921 1461:2921 4381:5841>
0.4   < . 1:1461(1460) ack 1
0.4   > . 1:1(0) ack 2921 <sack 4381:5841>
)"},
      {"NoDsackWithoutSack", R"(
0     config ts=0 ws=0
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 win 65535 <mss 1460>
0.1   < . 1:1(0) ack 1 win 65535
0.2   < P. 1:1001(1000) ack 1
0.24  > . 1:1(0) ack 1001
0.3   < P. 1:1001(1000) ack 1
0.3   > . 1:1(0) ack 1001 <>
0.3   stat dsacks_sent 0
)"},
      // --- Sender: undo (RFC 3708 detection, Linux's tcp_try_undo_dsack) ---
      {"SpuriousFastRetransmitIsUndone", kSpuriousFastRetransmit + R"(
0.32  < . 1:1(0) ack 14601 <sack 1:1461>
0.32  stat dsacks_received 1
0.32  stat spurious_undone 1
0.32  cwnd 14600
0.32  ssthresh 2147483647
)"},
      // A D-SACK within the second block (RFC 2883 4.1.2) counts too.
      {"DsackWithinTheSecondBlockIsRecognised", kSackActive + flight() + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   < . 1:1(0) ack 1 <sack 1461:2921 1461:4381>
0.3   stat dsacks_received 1
0.3   < . 1:1(0) ack 1 <sack 1461:2921 4381:5841>
0.3   > . 1:1461(1460) ack 1
0.3   stat dsacks_received 1
)"},
      // A duplicate of data never retransmitted (the network copied an original) proves nothing.
      {"DsackOfAnOriginalUndoesNothing", kSpuriousFastRetransmit + R"(
0.32  < . 1:1(0) ack 14601 <sack 1461:2921>
0.32  stat dsacks_received 1
0.32  stat spurious_undone 0
0.32  cwnd 2920
0.32  ssthresh 7300
)"},
      // Only part of what was retransmitted came back as a duplicate: the rest may have been needed.
      {"PartlyDuplicatedRetransmissionsUndoNothing", kSpuriousFastRetransmit + R"(
0.32  < . 1:1(0) ack 14601 <sack 1:1001>
0.32  stat dsacks_received 1
0.32  stat spurious_undone 0
0.32  cwnd 2920
)"},
      // With RACK (the stack's default loss detection) the same.
      {"SpuriousRackRetransmitIsUndone", "0 config rack=1\n" + kSackActive + flight() + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:5841>
0.3   > . 1:1461(1460) ack 1
0.3   stat fast_retransmits 1
0.31  < . 1:1(0) ack 14601
0.32  < . 1:1(0) ack 14601 <sack 1:1461>
0.32  stat spurious_undone 1
0.32  cwnd 14600
)"},
      // RFC 8985 6.2 step 4: once reordering was seen (segment 1 delivered after segment 2), a
      // D-SACK doubles RACK's reordering window (min_RTT / 4 = 25 ms -> 50 ms), once per round
      // trip: the next hole is deemed lost 50 ms after RACK.rtt, not 25.
      {"RackDsackWidensTheReorderingWindow", kReorderingSeen + R"(
0.32  < . 1:1(0) ack 2921 <sack 1:1461>
0.33  < . 1:1(0) ack 2921 <sack 1:1461>
0.4   < . 1:1(0) ack 2921 <sack 4381:5841>
0.449 stat retransmits 0
0.45  > . 2921:4381(1460) ack 1
0.45  stat rack_lost 1
)"},
      {"RackWindowWithoutDsackStaysAQuarterRtt", kReorderingSeen + R"(
0.4   < . 1:1(0) ack 2921 <sack 4381:5841>
0.424 stat retransmits 0
0.425 > . 2921:4381(1460) ack 1
)"},
  };
}

class TcpDsack : public testing::TestWithParam<Scenario> {};

TEST_P(TcpDsack, Runs) { EXPECT_EQ(run_tcp_script(GetParam().script), ""); }

INSTANTIATE_TEST_SUITE_P(Rfc2883, TcpDsack, testing::ValuesIn(scenarios()), scenario_name);

}  // namespace
