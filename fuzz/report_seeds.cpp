// Writes the seed corpus for fuzz_report: reports in both encodings (empty, one window, many
// windows sharing names, alarms) so the fuzzer starts from inputs that get past the header.
#include <string>
#include <vector>

#include "proto/report.hpp"
#include "seed_corpus.hpp"

using namespace weft::proto;

namespace {

WindowStats window(const std::string& target, int64_t start, Protocol p) {
  WindowStats w;
  w.protocol = p;
  w.target = target;
  w.target_address = "10.0.0.2:7777";
  w.start_unix_ns = start;
  w.end_unix_ns = start + 10'000'000'000;
  w.sent = 100;
  w.received = 98;
  w.lost = 2;
  w.late = 1;
  w.timestamp_source = TimestampSource::kernel;
  w.rtt_incl_responder_delay = {98, 40'000, 52'000, 50'000, 60'000, 65'000, 80'000, 90'000, 95'000};
  w.network_rtt = {98, 30'000, 42'000, 40'000, 50'000, 55'000, 70'000, 80'000, 85'000};
  w.responder_delay = {98, 9'000, 10'000, 10'000, 10'000, 10'000, 10'000, 10'000, 11'000};
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Report> reports(4);
  reports[0].agent = "h1";
  reports[1] = reports[0];
  reports[1].seq = 7;
  reports[1].health = {12.5, 40'000, 1000, 1, 2, 3};
  reports[1].windows.push_back(window("h2", 1'700'000'000'000'000'000, Protocol::udp));
  reports[2] = reports[1];
  reports[2].alarms.push_back(
      {"prober_restarted", "udp prober stopped: bind: Address in use", 1'700'000'000'000'000'000});
  for (int i = 0; i < 20; ++i)
    reports[2].windows.push_back(
        window("h" + std::to_string(3 + i % 4), 1'700'000'000'000'000'000 + i, static_cast<Protocol>(i % 3)));
  reports[3] = reports[2];
  reports[3].windows[0].rtt_incl_responder_delay = {};  // a window with no answers
  // Per-flow counters and traced paths (the report's optional sections, issue 24).
  reports.push_back(reports[2]);
  for (uint16_t k = 0; k < 4; ++k)
    reports[4].windows[1].flows.push_back({static_cast<uint16_t>(40000 + k), 10, 9, 1, 51'000});
  reports[4].paths.push_back(
      {Protocol::udp, "h3", 40001, 7777, 1'700'000'000'000'000'000, true, {"10.0.0.1", "", "10.0.1.2"}});
  std::vector<std::string> seeds;
  for (const auto& r : reports) {
    seeds.push_back(encode_binary(r));
    seeds.push_back(encode_json(r));
  }
  return weft::fuzz::write_seed_corpus(argc, argv, seeds);
}
