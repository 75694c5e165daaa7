#pragma once
// What `weft ping` prints, shared by its udp/tcp mode (cmd_ping.cpp) and its rdma mode
// (cmd_ping_rdma.cpp) so both speak the same JSON and text.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/histogram.hpp"
#include "probe/window.hpp"

namespace weft::cli {

double ms(int64_t ns);
double us(int64_t ns);  // microseconds rounded to 10 ns

nlohmann::json summary_json(const LogHistogram& h);
nlohmann::json latency_json(const probe::LatencySummary& s);
std::string summary_text(const char* what, const LogHistogram& h);  // "" when empty
// One finished window as printed by --window: {"type":"window", ...}.
nlohmann::json window_json(const probe::WindowStats& w);
int bad_args(const std::string& msg);  // prints "weft ping: MSG", returns exit status 2

}  // namespace weft::cli
