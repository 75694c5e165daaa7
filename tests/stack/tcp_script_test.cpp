// TCP conformance scenarios from the RFCs, run by the packetdrill-style runner (tcp_script.hpp).
// Each names the rule it checks. Times are seconds of virtual time.
#include "tcp_script.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tcp_script_openings.hpp"

using weft::stack::test::active;
using weft::stack::test::passive;
using weft::stack::test::run_tcp_script;
using weft::stack::test::Scenario;
using weft::stack::test::scenario_name;

namespace {

// Active open without window scaling or timestamps; RTT 100 ms, so RTO = 100 + 4 * 50 = 300 ms.
const std::string kActive = active() + "0.1   state ESTABLISHED\n";

// Passive open, the same options.
const std::string kPassive = R"(
0     config ts=0 ws=0
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 win 65535 <mss 1460>
0.1   < . 1:1(0) ack 1 win 65535
0.1   state ESTABLISHED
)";

// The same two with SACK offered by both sides (RFC 2018).
const std::string kSackActive = R"(
0     config ts=0 ws=0 sack=1
0     connect
0     > S 0:0(0) win 65535 <mss 1460,sackOK>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK>
0.1   > . 1:1(0) ack 1
0.1   state ESTABLISHED
)";

const std::string kSackPassive = R"(
0     config ts=0 ws=0 sack=1
0     < S 0:0(0) win 65535 <mss 1460,sackOK>
0     > S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK>
0.1   < . 1:1(0) ack 1 win 65535
0.1   state ESTABLISHED
)";

// Expect lines for `count` full 1460-byte segments from segment `first` (0-based) at time `t`;
// the one that ends the queued data at relative sequence `end` carries PSH.
std::string segments_out(const std::string& t, uint32_t first, uint32_t count, uint32_t end) {
  std::string out;
  for (uint32_t i = first; i < first + count; ++i) {
    const uint32_t l = 1 + i * 1460, r = l + 1460;
    out +=
        t + (r == end ? " > P. " : " > . ") + std::to_string(l) + ":" + std::to_string(r) + "(1460) ack 1\n";
  }
  return out;
}

// Ten segments out with SACK on; then segments 1 and 3 lost: three ACKs SACK 2, 4 and 5 and the
// first hole is resent (RFC 6675 5 step 4).
const std::string kSackFlight = kSackActive + "0.2   send 14600\n" + segments_out("0.2", 0, 10, 14601);
const std::string kSackTwoHoles = kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   < . 1:1(0) ack 1 <sack 4381:5841 1461:2921>
0.3   < . 1:1(0) ack 1 <sack 4381:7301 1461:2921>
0.3   > . 1:1461(1460) ack 1
)";

std::vector<Scenario> scenarios() {
  return {
      // --- Opening (RFC 9293 3.5, 7323, 6691) ---
      {"ActiveOpen", kActive},
      {"PassiveOpen", kPassive},
      {"ActiveOpenNegotiatesScaleAndTimestamps", R"(
0     connect
0     > S 0:0(0) win 65535 <mss 1460,TS val * ecr 0,nop,wscale 3>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,TS val 700 ecr 1,nop,wscale 7>
0.1   > . 1:1(0) ack 1 win 32768 <TS val * ecr 700>
0.2   nagle off
0.2   send 2000
0.2   > . 1:1449(1448) ack 1 <TS val * ecr 700>
0.2   > P. 1449:2001(552) ack 1 <TS val * ecr 700>
)"},
      {"PassiveOpenAnswersOnlyOfferedOptions", R"(
0     < S 0:0(0) win 65535 <mss 1200,TS val 50 ecr 0>
0     > S. 0:0(0) ack 1 win 65535 <mss 1460,TS val * ecr 50>
0.1   < . 1:1(0) ack 1 win 65535 <TS val 60 ecr 1>
0.1   state ESTABLISHED
0.2   send 1300
0.2   > . 1:1189(1188) ack 1 <TS val * ecr 60>
)"},
      {"PeerWithoutMssGets536", kActive.substr(0, kActive.find("0.1   <")) + R"(
0.1   < S. 0:0(0) ack 1 win 65535
0.1   > . 1:1(0) ack 1
0.2   nagle off
0.2   send 600
0.2   > . 1:537(536) ack 1
0.2   > P. 537:601(64) ack 1
)"},
      {"MssIsClampedToThePeers", R"(
0     config ts=0 ws=0 nagle=0
0     connect
0     > S 0:0(0) win 65535 <mss 1460>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1000>
0.1   > . 1:1(0) ack 1
0.2   send 1500
0.2   > . 1:1001(1000) ack 1
0.2   > P. 1001:1501(500) ack 1
)"},
      {"SynRetransmitsWithBackoffThenTimesOut", R"(
0     config syn_retries=2 ts=0 ws=0
0     connect
0     > S 0:0(0) <mss 1460>
1     > S 0:0(0) <mss 1460>
3     > S 0:0(0) <mss 1460>
6.9   state SYN-SENT
7     state CLOSED
7     reason timeout
)"},
      {"RetransmittedSynStartsWithOneSegmentCwnd", R"(
0     config ts=0 ws=0
0     connect
0     > S 0:0(0) <mss 1460>
1     > S 0:0(0) <mss 1460>
1.1   < S. 0:0(0) ack 1 win 65535 <mss 1460>
1.1   > . 1:1(0) ack 1
1.1   cwnd 1460
)"},
      {"SynAckRetransmitsWithBackoff", R"(
0     config ts=0 ws=0
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 <mss 1460>
1     > S. 0:0(0) ack 1 <mss 1460>
3     > S. 0:0(0) ack 1 <mss 1460>
3.1   < . 1:1(0) ack 1
3.1   state ESTABLISHED
)"},
      {"DuplicateSynInSynReceivedResendsSynAck", R"(
0     config ts=0 ws=0
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 <mss 1460>
0.05  < S 0:0(0) win 65535 <mss 1460>
0.05  > S. 0:0(0) ack 1 <mss 1460>
)"},
      {"ConnectionRefusedByRst", R"(
0     config ts=0 ws=0
0     connect
0     > S 0:0(0) <mss 1460>
0.1   < R. 0:0(0) ack 1
0.1   state CLOSED
0.1   reason refused
)"},
      {"SynSentAnswersABadAckWithRst", R"(
0     config ts=0 ws=0
0     connect
0     > S 0:0(0) <mss 1460>
0.1   < S. 0:0(0) ack 5 win 65535
0.1   > R 5:5(0)
0.1   state SYN-SENT
0.1   < R 0:0(0)
0.1   state SYN-SENT
)"},
      {"SynReceivedAnswersABadAckWithRst", R"(
0     config ts=0 ws=0
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 <mss 1460>
0.1   < . 1:1(0) ack 100
0.1   > R 100:100(0)
0.1   state SYN-RECEIVED
)"},
      {"SimultaneousOpen", R"(
0     config ts=0 ws=0
0     connect
0     > S 0:0(0) <mss 1460>
0.05  < S 0:0(0) win 65535 <mss 1460>
0.05  > S. 0:0(0) ack 1 <mss 1460>
0.05  state SYN-RECEIVED
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460>
0.1   state ESTABLISHED
0.2   send 10
0.2   > P. 1:11(10) ack 1
)"},
      // --- Closing (RFC 9293 3.6) ---
      {"ActiveCloseThroughTimeWait", active("msl_ms=1000") + R"(
0.2   close
0.2   > F. 1:1(0) ack 1
0.2   state FIN-WAIT-1
0.3   < . 1:1(0) ack 2
0.3   state FIN-WAIT-2
0.4   < F. 1:1(0) ack 2
0.4   > . 2:2(0) ack 2
0.4   state TIME-WAIT
2.39  state TIME-WAIT
2.4   state CLOSED
2.4   reason none
)"},
      {"PassiveClose", kPassive + R"(
0.2   < F. 1:1(0) ack 1
0.2   > . 1:1(0) ack 2
0.2   state CLOSE-WAIT
0.3   close
0.3   > F. 1:1(0) ack 2
0.3   state LAST-ACK
0.4   < . 2:2(0) ack 2
0.4   state CLOSED
0.4   reason none
)"},
      {"SimultaneousClose", kActive + R"(
0.2   close
0.2   > F. 1:1(0) ack 1
0.25  < F. 1:1(0) ack 1
0.25  > . 2:2(0) ack 2
0.25  state CLOSING
0.3   < . 2:2(0) ack 2
0.3   state TIME-WAIT
)"},
      {"FinAndAckTogetherGoStraightToTimeWait", kActive + R"(
0.2   close
0.2   > F. 1:1(0) ack 1
0.3   < F. 1:1(0) ack 2
0.3   > . 2:2(0) ack 2
0.3   state TIME-WAIT
)"},
      {"TimeWaitAcksARetransmittedFinAndRestarts", active("msl_ms=1000") + R"(
0.2   close
0.2   > F. 1:1(0) ack 1
0.3   < F. 1:1(0) ack 2
0.3   > . 2:2(0) ack 2
1.3   < F. 1:1(0) ack 2
1.3   > . 2:2(0) ack 2
3.2   state TIME-WAIT
3.3   state CLOSED
)"},
      {"FinCarryingData", kPassive + R"(
0.2   < F. 1:101(100) ack 1
0.2   > . 1:1(0) ack 102
0.2   state CLOSE-WAIT
0.2   recv 100
)"},
      {"FinPastAGapWaitsForTheGap", kPassive + R"(
0.2   < F. 101:201(100) ack 1
0.2   > . 1:1(0) ack 1
0.2   state ESTABLISHED
0.3   < . 1:101(100) ack 1
0.3   > . 1:1(0) ack 202
0.3   state CLOSE-WAIT
0.3   recv 200
)"},
      {"CloseAfterDataSendsFinBehindIt", kActive + R"(
0.2   send 100
0.2   > P. 1:101(100) ack 1
0.2   close
0.2   > F. 101:101(0) ack 1
0.3   < . 1:1(0) ack 102
0.3   state FIN-WAIT-2
)"},
      {"AbortSendsRst", kActive + R"(
0.2   abort
0.2   > R. 1:1(0) ack 1
0.2   state CLOSED
0.2   reason aborted
)"},
      // --- RST, SYN and ACK checks (RFC 9293 3.10.7.4, RFC 5961) ---
      {"RstAtRcvNxtResets", kPassive + R"(
0.2   < R. 1:1(0) ack 1
0.2   state CLOSED
0.2   reason reset
)"},
      {"RstInWindowButNotExactGetsChallengeAck", kPassive + R"(
0.2   < R. 50:50(0) ack 1
0.2   > . 1:1(0) ack 1
0.2   state ESTABLISHED
0.2   stat challenge_acks 1
)"},
      {"RstOutOfWindowIsIgnored", kPassive + R"(
0.2   < R. 100000:100000(0) ack 1
0.2   state ESTABLISHED
)"},
      {"SynInEstablishedGetsChallengeAck", kPassive + R"(
0.2   < S 1000:1000(0) win 65535
0.2   > . 1:1(0) ack 1
0.2   state ESTABLISHED
0.2   stat challenge_acks 1
)"},
      {"OutOfWindowDataIsAckedAndDropped", kPassive + R"(
0.2   < . 70000:70100(100) ack 1
0.2   > . 1:1(0) ack 1
0.2   recv 0
)"},
      {"AckOfUnsentDataIsAckedAndDropped", kPassive + R"(
0.2   < P. 1:11(10) ack 5000
0.2   > . 1:1(0) ack 1
0.2   recv 0
)"},
      {"SegmentWithoutAckIsDropped", kPassive + R"(
0.2   < P 1:11(10)
0.2   recv 0
)"},
      // --- Receiving (RFC 9293 3.10.7.4, RFC 5681 4.2) ---
      {"DelayedAck", kPassive + R"(
0.2   < P. 1:101(100) ack 1
0.24  > . 1:1(0) ack 101
0.24  recv 100
)"},
      {"AckEverySecondFullSegment", kPassive + R"(
0.2   < . 1:1461(1460) ack 1
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 2921
0.2   recv 2920
)"},
      {"NoDelayedAckWhenSwitchedOff", passive("delack=0") + R"(
0.2   < P. 1:101(100) ack 1
0.2   > . 1:1(0) ack 101
)"},
      {"OutOfOrderIsAckedAtOnceAndTheHoleFillAcksAll", kPassive + R"(
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 1
0.3   < . 1:1461(1460) ack 1
0.3   > . 1:1(0) ack 2921
0.3   recv 2920
0.3   stat out_of_order 1
)"},
      {"DuplicateDataIsAckedAtOnce", kPassive + R"(
0.2   < P. 1:101(100) ack 1
0.24  > . 1:1(0) ack 101
0.3   < P. 1:101(100) ack 1
0.3   > . 1:1(0) ack 101
0.3   recv 100
)"},
      {"OverlappingSegmentDeliversOnlyNewBytes", kPassive + R"(
0.2   < P. 1:101(100) ack 1
0.21  < P. 51:201(150) ack 1
0.24  > . 1:1(0) ack 201
0.24  recv 200
)"},
      {"ZeroWindowThenWindowUpdateAfterRead", R"(
0     config ts=0 ws=0 rcvbuf=4096
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 win 4096 <mss 1460>
0.1   < . 1:1(0) ack 1
0.2   < . 1:1461(1460) ack 1
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 2921 win 1176
0.3   < P. 2921:4097(1176) ack 1
0.34  > . 1:1(0) ack 4097 win 0
0.4   < . 4097:4098(1) ack 1
0.4   > . 1:1(0) ack 4097 win 0
0.5   recv 4096
0.5   > . 1:1(0) ack 4097 win 4096
)"},
      {"SequenceNumbersWrap", active("iss=0xfffffc00 peer_iss=0xfffffe00 nagle=0") + R"(
0.2   send 2000
0.2   > . 1:1461(1460) ack 1
0.2   > P. 1461:2001(540) ack 1
0.3   < P. 1:1001(1000) ack 2001
0.34  > . 2001:2001(0) ack 1001
0.3   recv 1000
)"},
      // --- Timestamps (RFC 7323) ---
      {"TimestampsEchoTheLatestInWindowValue", R"(
0     < S 0:0(0) win 65535 <mss 1460,TS val 1000 ecr 0>
0     > S. 0:0(0) ack 1 <mss 1460,TS val * ecr 1000>
0.1   < . 1:1(0) ack 1 <TS val 1010 ecr 0>
0.2   < P. 1:101(100) ack 1 <TS val 1020 ecr 0>
0.24  > . 1:1(0) ack 101 <TS val * ecr 1020>
)"},
      {"PawsDropsAnOldTimestamp", R"(
0     < S 0:0(0) win 65535 <mss 1460,TS val 1000 ecr 0>
0     > S. 0:0(0) ack 1 <mss 1460,TS val * ecr 1000>
0.1   < . 1:1(0) ack 1 <TS val 1010 ecr 0>
0.2   < P. 1:101(100) ack 1 <TS val 900 ecr 0>
0.2   > . 1:1(0) ack 1 <TS val * ecr 1010>
0.2   recv 0
0.2   stat paws_drops 1
)"},
      // --- Window scaling (RFC 7323 2) ---
      {"PeerWindowIsScaled", R"(
0     config ts=0
0     connect
0     > S 0:0(0) win 65535 <mss 1460,nop,wscale 3>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460,nop,wscale 7>
0.1   > . 1:1(0) ack 1 win 32768
0.15  < . 1:1(0) ack 1 win 2
0.2   send 1000
0.2   > . 1:257(256) ack 1
0.3   < . 1:1(0) ack 257 win 4
0.3   > . 257:769(512) ack 1
)"},
      // --- Sending: Nagle, initial window, slow start (RFC 896, 6928, 5681) ---
      {"SendData", kActive + R"(
0.2   send 1000
0.2   > P. 1:1001(1000) ack 1
0.3   < . 1:1(0) ack 1001
)"},
      {"NagleHoldsASecondSmallSegment", kActive + R"(
0.2   send 100
0.2   > P. 1:101(100) ack 1
0.2   send 100
0.3   < . 1:1(0) ack 101
0.3   > P. 101:201(100) ack 1
)"},
      {"NagleOffSendsAtOnce", kActive + R"(
0.2   nagle off
0.2   send 100
0.2   > P. 1:101(100) ack 1
0.2   send 100
0.2   > P. 101:201(100) ack 1
)"},
      {"InitialWindowIsTenSegmentsThenSlowStart", kActive + R"(
0.2   send 20000
)" + segments_out("0.2", 0, 10, 0) + R"(
0.2   cwnd 14600
0.3   < . 1:1(0) ack 2921
0.3   > . 14601:16061(1460) ack 1
0.3   > . 16061:17521(1460) ack 1
0.3   > . 17521:18981(1460) ack 1
0.3   cwnd 16060
)"},
      // --- Retransmission timer (RFC 6298) ---
      {"RtoRetransmitsWithBackoffAndKarn", kActive + R"(
0.2   send 1000
0.2   > P. 1:1001(1000) ack 1
0.5   > P. 1:1001(1000) ack 1
1.1   > P. 1:1001(1000) ack 1
1.1   stat timeouts 2
1.1   cwnd 1460
1.1   ssthresh 2920
1.2   < . 1:1(0) ack 1001
1.2   rto_ms 1200
1.3   send 100
1.3   > P. 1001:1101(100) ack 1
1.4   < . 1:1(0) ack 1101
1.4   rto_ms 250
)"},
      {"RetransmissionsGiveUp", active("max_retransmits=2") + R"(
0.2   send 10
0.2   > P. 1:11(10) ack 1
0.5   > P. 1:11(10) ack 1
1.1   > P. 1:11(10) ack 1
2.29  state ESTABLISHED
2.3   state CLOSED
2.3   reason timeout
)"},
      {"RtoGoesBackNAndResendsEverythingUnacked", kActive + R"(
0.2   send 2920
0.2   > . 1:1461(1460) ack 1
0.2   > P. 1461:2921(1460) ack 1
0.5   > . 1:1461(1460) ack 1
0.6   < . 1:1(0) ack 1461
0.6   > P. 1461:2921(1460) ack 1
)"},
      // --- Fast retransmit and NewReno (RFC 5681 3.2, RFC 6582) ---
      {"FastRetransmitOnThirdDupAckAndNewRenoRecovery", kActive + R"(
0.2   send 7300
)" + segments_out("0.2", 0, 5, 7301) + R"(
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   > . 1461:2921(1460) ack 1
0.3   stat fast_retransmits 1
0.3   ssthresh 2920
0.3   cwnd 7300
0.4   < . 1:1(0) ack 2921
0.4   > . 2921:4381(1460) ack 1
0.4   cwnd 7300
0.5   < . 1:1(0) ack 7301
0.5   cwnd 2920
)"},
      {"TwoDupAcksDoNotRetransmitWithFourOrMoreOut", kActive + R"(
0.2   send 10220
)" + segments_out("0.2", 0, 7, 10221) + R"(
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   stat fast_retransmits 0
)"},
      // RFC 3042: the first and second dup ACK each send one new segment past cwnd (iw 3 here,
      // 4 after the first ACK); the third retransmits, with ssthresh from the flight before them.
      {"LimitedTransmitSendsANewSegmentOnEachOfTwoDupAcks", active("iw=3") + R"(
0.2   send 10220
)" + segments_out("0.2", 0, 3, 0) + R"(
0.3   < . 1:1(0) ack 1461
0.3   > . 4381:5841(1460) ack 1
0.3   > . 5841:7301(1460) ack 1
0.3   < . 1:1(0) ack 1461
0.3   > . 7301:8761(1460) ack 1
0.3   cwnd 5840
0.3   < . 1:1(0) ack 1461
0.3   > P. 8761:10221(1460) ack 1
0.3   cwnd 5840
0.3   < . 1:1(0) ack 1461
0.3   > . 1461:2921(1460) ack 1
0.3   stat fast_retransmits 1
0.3   stat early_retransmits 0
0.3   ssthresh 2920
0.3   cwnd 7300
)"},
      // RFC 5827: two segments out, nothing more to send: one dup ACK is all the peer can give.
      {"EarlyRetransmitWithTwoSegmentsOut", kActive + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   > . 1461:2921(1460) ack 1
0.3   stat fast_retransmits 1
0.3   stat early_retransmits 1
0.3   ssthresh 2920
0.4   < . 1:1(0) ack 4381
0.4   cwnd 2920
)"},
      // RFC 5827 with three segments out: the threshold is two dup ACKs.
      {"EarlyRetransmitWithThreeSegmentsOutWaitsForTwoDupAcks", kActive + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.3   < . 1:1(0) ack 1
0.3   stat fast_retransmits 0
0.3   < . 1:1(0) ack 1
0.3   > . 1:1461(1460) ack 1
0.3   stat early_retransmits 1
)"},
      // RFC 8985 7: two segments of three lost at the tail; no dup ACK comes, so at 2 SRTT the
      // last segment is resent, its dup ACK lets early retransmit repair the hole: no RTO.
      {"TailLossProbeResendsTheLastSegmentAndEarlyRetransmitRepairs", active("tlp=1") + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.3   < . 1:1(0) ack 1461
0.5   > P. 2921:4381(1460) ack 1
0.5   stat tail_loss_probes 1
0.6   < . 1:1(0) ack 1461
0.6   > . 1461:2921(1460) ack 1
0.6   stat early_retransmits 1
0.7   < . 1:1(0) ack 4381
0.7   stat timeouts 0
)"},
      // Every segment arrived but the ACKs were lost: the probe draws an ACK for all of it.
      {"TailLossProbeRecoversFromLostAcks", active("tlp=1") + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.4   > P. 2921:4381(1460) ack 1
0.5   < . 1:1(0) ack 4381
0.5   stat tail_loss_probes 1
0.5   stat timeouts 0
1.5   stat retransmits 1
)"},
      // One segment out: the probe would wait for the peer's delayed ACK (1.5 SRTT + 200 ms),
      // later than the RTO (300 ms), so the RTO handles it and no probe is sent.
      {"NoTailLossProbeWhenTheRtoComesFirst", active("tlp=1") + R"(
0.2   send 100
0.2   > P. 1:101(100) ack 1
0.5   > P. 1:101(100) ack 1
0.5   stat tail_loss_probes 0
0.5   stat timeouts 1
)"},
      // --- SACK (RFC 2018) and SACK-based loss recovery (RFC 6675) ---
      {"SackIsUsedOnlyWhenBothSidesOfferIt", R"(
0     config ts=0 ws=0 sack=1
0     connect
0     > S 0:0(0) win 65535 <mss 1460,sackOK>
0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460>
0.1   > . 1:1(0) ack 1
0.2   send 2920
0.2   > . 1:1461(1460) ack 1
0.2   > P. 1461:2921(1460) ack 1
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   > . 1:1461(1460) ack 1
0.3   stat sacked_bytes 0
0.3   stat early_retransmits 1
)"},
      {"PassiveOpenAnswersSackPermitted", kSackPassive},
      {"PassiveOpenWithoutPeerSackSendsNoSackPermitted", R"(
0     config ts=0 ws=0 sack=1
0     < S 0:0(0) win 65535 <mss 1460>
0     > S. 0:0(0) ack 1 win 65535 <mss 1460>
0.1   < . 1:1(0) ack 1 win 65535
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 1 <>
)"},
      // RFC 2018 4: the first block holds the segment that arrived last; holes filled shrink them.
      {"SackBlocksReportOutOfOrderDataMostRecentFirst", kSackPassive + R"(
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 1461:2921>
0.2   < . 4381:5841(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 4381:5841 1461:2921>
0.2   < . 7301:8761(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 7301:8761 4381:5841 1461:2921>
0.2   < . 2921:4381(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 1461:5841 7301:8761>
0.2   < . 1:1461(1460) ack 1
0.2   > . 1:1(0) ack 5841 <sack 7301:8761>
0.2   < . 5841:7301(1460) ack 1
0.2   > . 1:1(0) ack 8761 <>
)"},
      // A data segment with SACK blocks carries 12 bytes fewer per block (with the 4 bytes of
      // NOP NOP kind length) so that the frame still fits the MSS.
      {"SegmentsWithSackBlocksCarryLessData", kSackPassive + R"(
0.2   < . 1461:2921(1460) ack 1
0.2   > . 1:1(0) ack 1 <sack 1461:2921>
0.3   nagle off
0.3   send 2000
0.3   > . 1:1449(1448) ack 1 <sack 1461:2921>
0.3   > P. 1449:2001(552) ack 1 <sack 1461:2921>
)"},
      // RFC 6675 5: three SACKs start recovery; cwnd = ssthresh = FlightSize / 2 (the segments
      // limited transmit sent left out); pipe gates what follows, and rule 2 sends new data once
      // cwnd - pipe >= 1 SMSS. The full ACK ends it.
      {"SackRecoveryPipeGatesNewData",
       kSackActive + "0.2   send 29200\n" + segments_out("0.2", 0, 10, 29201) + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   > . 14601:16061(1460) ack 1
0.3   < . 1:1(0) ack 1 <sack 1461:4381>
0.3   > . 16061:17521(1460) ack 1
0.3   < . 1:1(0) ack 1 <sack 1461:5841>
0.3   > . 1:1461(1460) ack 1
0.3   stat fast_retransmits 1
0.3   cwnd 7300
0.3   ssthresh 7300
0.3   pipe 13140
0.4   < . 1:1(0) ack 1 <sack 1461:13141>
0.4   > . 17521:18981(1460) ack 1
0.4   pipe 7300
0.45  < . 1:1(0) ack 17521
0.45  > . 18981:20441(1460) ack 1
0.45  cwnd 2920
0.45  stat retransmits 1
)"},
      // RFC 6675 IsLost: more than 2 SMSS SACKed above a hole; rule 1 resends each lost hole
      // once, in order, when pipe allows. A partial ACK then sends nothing already resent.
      {"SackRecoveryResendsALaterHoleOnceItIsLost", kSackTwoHoles + R"(
0.3   pipe 10220
0.35  < . 1:1(0) ack 1 <sack 4381:8761 1461:2921>
0.35  pipe 7300
0.4   < . 1:1(0) ack 1 <sack 4381:10221 1461:2921>
0.4   > . 2921:4381(1460) ack 1
0.4   stat sack_retransmits 1
0.4   pipe 7300
0.45  < . 1:1(0) ack 2921 <sack 4381:10221>
0.5   < . 1:1(0) ack 14601
0.5   cwnd 2920
0.5   stat retransmits 2
)"},
      // RFC 6675 5 step (2): one ACK SACKing more than 2 SMSS makes the first hole lost at once.
      {"SackRecoveryStartsOnOneAckSackingThreeSegments", kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:5841>
0.3   > . 1:1461(1460) ack 1
0.3   stat fast_retransmits 1
)"},
      // A partial ACK with the next hole not yet lost by IsLost: resent at once (RFC 6582's
      // inference), as it was sent before the retransmission that just arrived.
      {"SackPartialAckResendsTheNextHole", kSackTwoHoles + R"(
0.4   < . 1:1(0) ack 2921 <sack 4381:7301>
0.4   > . 2921:4381(1460) ack 1
)"},
      // A peer that sends data too acknowledges on its data segments: with SACK those count as
      // duplicates when they SACK new data (RFC 6675 2), so recovery does not wait for the RTO.
      {"DataSegmentsSackingNewDataCountAsDupAcks", kSackFlight + R"(
0.3   < . 1:101(100) ack 1 <sack 1461:2921>
0.3   < . 101:201(100) ack 1 <sack 1461:4381>
0.3   < . 201:301(100) ack 1 <sack 1461:5841>
0.3   > . 1:1461(1460) ack 201
0.3   stat fast_retransmits 1
0.34  > . 14601:14601(0) ack 301
)"},
      // After a timeout go-back-N resends only what was not SACKed (RFC 6675 5.1 keeps the
      // scoreboard through the first timeout).
      {"GoBackNAfterATimeoutSkipsSackedData", kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   < . 1:1(0) ack 1 <sack 4381:5841 1461:2921>
0.5   > . 1:1461(1460) ack 1
0.5   stat timeouts 1
0.6   < . 1:1(0) ack 2921 <sack 4381:5841>
0.6   > . 2921:4381(1460) ack 1
0.7   < . 1:1(0) ack 5841
0.7   > . 5841:7301(1460) ack 1
0.7   > . 7301:8761(1460) ack 1
0.7   > . 8761:10221(1460) ack 1
)"},
      // Blocks at or below the cumulative ACK (D-SACK, RFC 2883) or past what was sent are not
      // taken into the scoreboard and are not duplicate ACKs.
      {"SackBlocksOutsideTheUnackedDataAreIgnored", kSackActive + R"(
0.2   send 2920
0.2   > . 1:1461(1460) ack 1
0.2   > P. 1461:2921(1460) ack 1
0.3   < . 1:1(0) ack 1461 <sack 1:1461>
0.3   < . 1:1(0) ack 1461 <sack 2921:4381>
0.3   < . 1:1(0) ack 1461 <sack 5000:9000>
0.3   stat sacked_bytes 0
0.3   stat fast_retransmits 0
)"},
      // --- RACK-TLP (RFC 8985): losses by send time (config rack=1; RTT 100 ms, so the
      // reordering window is min_RTT / 4 = 25 ms until DupThresh segments are SACKed) ---
      // RFC 8985 3.3.1 (lost retransmission): the hole's retransmission at 0.3 is lost too. A
      // segment sent after it is SACKed at 0.4, more than RACK.rtt after the retransmission, so
      // it is deemed lost and resent at once, where RFC 6675 alone waits for the RTO.
      {"RackResendsALostRetransmissionWithoutTheRto",
       "0 config rack=1\n" + kSackActive + "0.2   send 29200\n" + segments_out("0.2", 0, 10, 0) + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:14601>
0.3   > . 1:1461(1460) ack 1
0.3   > . 14601:16061(1460) ack 1
0.3   > . 16061:17521(1460) ack 1
0.3   > . 17521:18981(1460) ack 1
0.3   > . 18981:20441(1460) ack 1
0.3   stat fast_retransmits 1
0.3   cwnd 7300
0.3   pipe 7300
0.4   < . 1:1(0) ack 1 <sack 1461:16061>
0.4   > . 1:1461(1460) ack 1
0.4   > . 20441:21901(1460) ack 1
0.4   stat lost_retransmits 1
0.4   stat rack_lost 2
0.4   pipe 7300
0.5   < . 1:1(0) ack 21901
0.5   > . 21901:23361(1460) ack 1
0.5   > . 23361:24821(1460) ack 1
0.5   stat timeouts 0
0.5   stat fast_retransmits 1
)"},
      // RFC 8985 6.2 (reordering window and timer): one SACK does not make the hole lost at
      // once; 25 ms later the timer does, without DupThresh SACKs (RFC 6675 would wait for them
      // or the RTO).
      {"RackTimerMarksTheHoleAfterTheReorderingWindow", "0 config rack=1\n" + kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.324 stat retransmits 0
0.325 > . 1:1461(1460) ack 1
0.325 stat rack_lost 1
0.325 stat fast_retransmits 1
0.4   < . 1:1(0) ack 14601
0.4   stat timeouts 0
)"},
      // One ACK newly SACKing two ranges, the higher first as RFC 2018 orders them, is not
      // reordering: with 3 segments SACKed the window is 0 and the holes are lost at once.
      {"RackTwoBlocksInOneAckAreNotReordering", "0 config rack=1\n" + kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 7301:10221 1461:2921>
0.3   > . 1:1461(1460) ack 1
0.3   > . 2921:4381(1460) ack 1
0.3   stat rack_lost 4
0.3   pipe 7300
)"},
      // The same, but the "missing" segment was only reordered: it arrives within the window, is
      // not resent, and the reordering seen keeps a window later (RFC 8985 6.2 step 4).
      {"RackDoesNotResendASegmentReorderedWithinTheWindow", "0 config rack=1\n" + kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.31  < . 1:1(0) ack 2921
0.4   stat retransmits 0
0.4   stat rack_lost 0
0.4   < . 1:1(0) ack 14601
)"},
      // Two holes, two SACKs: both are lost once the window passes (0.325); the first is resent
      // at once and the second when pipe allows. RFC 6675 alone waits for the RTO here
      // (GoBackNAfterATimeoutSkipsSackedData).
      {"RackRepairsTwoHolesWithoutTheRto", "0 config rack=1\n" + kSackFlight + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:2921>
0.3   < . 1:1(0) ack 1 <sack 4381:5841 1461:2921>
0.325 > . 1:1461(1460) ack 1
0.325 stat rack_lost 2
0.4   < . 1:1(0) ack 2921 <sack 4381:8761>
0.4   > . 2921:4381(1460) ack 1
0.5   < . 1:1(0) ack 14601
0.5   stat timeouts 0
0.5   stat retransmits 2
)"},
      // RFC 8985 7 with RACK: the tail of three is lost but the first; the probe (the last
      // segment again) is SACKed, which makes the middle one lost by its send time.
      {"RackTailLossProbeThenRackRepairsTheHole", "0 config rack=1 tlp=1\n" + kSackActive + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.3   < . 1:1(0) ack 1461
0.5   > P. 2921:4381(1460) ack 1
0.5   stat tail_loss_probes 1
0.6   < . 1:1(0) ack 1461 <sack 2921:4381>
0.6   > . 1461:2921(1460) ack 1
0.6   stat rack_lost 1
0.7   < . 1:1(0) ack 4381
0.7   stat timeouts 0
)"},
      // A loss of data sent during a recovery (14601:16061, deemed lost at 0.4 and resent) is a
      // new congestion event: when the first recovery ends at 0.45 with it still outstanding, a
      // second begins (ssthresh 0.5 x 10220 with Reno) rather than the loss costing nothing.
      {"RackLossOfDataSentInRecoveryStartsANewRecovery",
       "0 config rack=1\n" + kSackActive + "0.2   send 29200\n" + segments_out("0.2", 0, 10, 0) + R"(
0.3   < . 1:1(0) ack 1 <sack 1461:14601>
0.3   > . 1:1461(1460) ack 1
0.3   > . 14601:16061(1460) ack 1
0.3   > . 16061:17521(1460) ack 1
0.3   > . 17521:18981(1460) ack 1
0.3   > . 18981:20441(1460) ack 1
0.4   < . 1:1(0) ack 1 <sack 16061:20441 1461:14601>
0.4   > . 1:1461(1460) ack 1
0.4   > . 14601:16061(1460) ack 1
0.4   > . 20441:21901(1460) ack 1
0.4   > . 21901:23361(1460) ack 1
0.4   > . 23361:24821(1460) ack 1
0.4   stat rack_lost 3
0.4   stat lost_retransmits 1
0.45  < . 1:1(0) ack 14601 <sack 16061:20441>
0.45  stat fast_retransmits 2
0.45  ssthresh 5110
0.5   < . 1:1(0) ack 24821
0.5   > . 24821:26281(1460) ack 1
0.5   > . 26281:27741(1460) ack 1
)"},
      // After an RTO with RACK everything not SACKed is deemed lost and resent in order as cwnd
      // grows from one segment; what the peer SACKed meanwhile is not resent.
      {"RackTimeoutResendsOnlyWhatWasNotSacked", "0 config rack=1\n" + kSackActive + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.5   > . 1:1461(1460) ack 1
0.5   stat timeouts 1
0.6   < . 1:1(0) ack 1461 <sack 2921:4381>
0.6   > . 1461:2921(1460) ack 1
0.7   < . 1:1(0) ack 4381
0.7   stat retransmits 2
)"},
      // --- CUBIC (RFC 9438 4.6): the multiplicative decrease is 0.7 of the flight, not half ---
      {"CubicFastRetransmitLeavesSevenTenths", "0 config cc=cubic\n" + kActive + R"(
0.2   send 7300
)" + segments_out("0.2", 0, 5, 7301) + R"(
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   < . 1:1(0) ack 1461
0.3   > . 1461:2921(1460) ack 1
0.3   ssthresh 4088
0.3   cwnd 8468
)"},
      {"AWindowUpdateIsNotADupAck", kActive + R"(
0.2   send 4380
)" + segments_out("0.2", 0, 3, 4381) + R"(
0.3   < . 1:1(0) ack 1461 win 65535
0.3   < . 1:1(0) ack 1461 win 60000
0.3   < . 1:1(0) ack 1461 win 50000
0.3   < . 1:1(0) ack 1461 win 40000
0.3   stat fast_retransmits 0
)"},
      // --- Zero window probes (RFC 9293 3.8.6.1) and keepalive (RFC 1122 4.2.3.6) ---
      {"ZeroWindowProbesBackOffUntilTheWindowOpens", kActive + R"(
0.2   < . 1:1(0) ack 1 win 0
0.2   send 100
0.5   > . 0:0(0) ack 1
1.1   > . 0:0(0) ack 1
1.2   < . 1:1(0) ack 1 win 65535
1.2   > P. 1:101(100) ack 1
1.2   stat window_probes 2
)"},
      {"KeepaliveProbesThenTimesOut",
       passive("keepalive=1 keepalive_idle_ms=1000 keepalive_intvl_ms=100 keepalive_probes=2") + R"(
1.1   > . 0:0(0) ack 1
1.2   > . 0:0(0) ack 1
1.29  state ESTABLISHED
1.3   state CLOSED
1.3   reason timeout
)"},
      {"AnsweredKeepaliveKeepsTheConnection",
       passive("keepalive=1 keepalive_idle_ms=1000 keepalive_intvl_ms=100 keepalive_probes=2") + R"(
1.1   > . 0:0(0) ack 1
1.15  < . 1:1(0) ack 1
2.1   state ESTABLISHED
2.15  > . 0:0(0) ack 1
)"},
  };
}

// gtest prints the parameter in test names and failures: the scenario's name, not its bytes.
class TcpScript : public testing::TestWithParam<Scenario> {};

TEST_P(TcpScript, Runs) {
  const std::string err = run_tcp_script(GetParam().script);
  EXPECT_EQ(err, "");
}

INSTANTIATE_TEST_SUITE_P(Rfc, TcpScript, testing::ValuesIn(scenarios()), scenario_name);

// The runner itself must fail on a wrong expectation, a missing segment and an unexpected one.
TEST(TcpScriptRunner, CatchesWrongMissingAndUnexpectedSegments) {
  EXPECT_NE(run_tcp_script(kActive + "0.2 send 10\n0.2 > P. 1:11(10) ack 2\n"), "");  // wrong ack
  EXPECT_NE(run_tcp_script(kActive + "0.2 > . 1:1(0) ack 1\n"), "");                  // nothing sent
  EXPECT_NE(run_tcp_script(kActive + "0.2 send 10\n"), "");                           // left unmatched
  EXPECT_NE(run_tcp_script(kActive + "0.2 send 10\n0.3 > P. 1:11(10) ack 1\n"), "");  // wrong time
  EXPECT_NE(run_tcp_script(kActive + "0.2 state CLOSED\n"), "");
}

}  // namespace
