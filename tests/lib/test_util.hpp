#pragma once
// Helpers the C++ tests of several modules share (proto, agent, controller): windows with plausible
// numbers, the wall clock in ns, and temporary directories removed at the end of a test.
#include <chrono>
#include <filesystem>
#include <string>

#include "proto/window_stats.hpp"

namespace weft::testlib {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline proto::WindowStats window(const std::string& target, int64_t start_ns, uint64_t sent = 100,
                                 uint64_t lost = 0, proto::Protocol p = proto::Protocol::udp) {
  proto::WindowStats w;
  w.protocol = p;
  w.target = target;
  w.target_address = "10.0.0.2:7777";
  w.start_unix_ns = start_ns;
  w.end_unix_ns = start_ns + 1'000'000'000;
  w.sent = sent;
  w.lost = lost;
  w.received = sent - lost;
  w.timestamp_source = proto::TimestampSource::kernel;
  auto& s = w.network_rtt;
  s.count = w.received;
  if (s.count) {
    s.min_ns = 40'000;
    s.mean_ns = 55'000;
    s.p50_ns = 50'000;
    s.p90_ns = 70'000;
    s.p95_ns = 80'000;
    s.p99_ns = 90'000;
    s.p999_ns = 95'000;
    s.max_ns = 99'000;
    w.rtt_incl_responder_delay = s;
  }
  return w;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/wms-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace weft::testlib
