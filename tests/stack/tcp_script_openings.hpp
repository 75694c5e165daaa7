#pragma once
// The openings most scenarios of the script runner (tcp_script.hpp) start from, shared by the RFC
// scenarios (tcp_script_test.cpp) and issue 26's (tcp_hostile_test.cpp). Scenarios append their
// lines; times are seconds of virtual time.
#include <string>

namespace weft::stack::test {

// Active and passive opens without window scaling or timestamps plus `config` (KEY=VALUE ...);
// RTT 100 ms, so RTO = 100 + 4 * 50 = 300 ms.
inline std::string active(const std::string& config = "") {
  return "0     config ts=0 ws=0 " + config +
         "\n0     connect\n"
         "0     > S 0:0(0) win 65535 <mss 1460>\n"
         "0.1   < S. 0:0(0) ack 1 win 65535 <mss 1460>\n"
         "0.1   > . 1:1(0) ack 1\n";
}

inline std::string passive(const std::string& config = "") {
  return "0     config ts=0 ws=0 " + config +
         "\n0     < S 0:0(0) win 65535 <mss 1460>\n"
         "0     > S. 0:0(0) ack 1 <mss 1460>\n"
         "0.1   < . 1:1(0) ack 1\n";
}

}  // namespace weft::stack::test
