// The SQLite store copies its WAL into the database in the background (store_sqlite.cpp): once the
// WAL holds 16 MB the database file grows while appends go on, without a commit waiting for the
// disk; nothing is lost across a reopen.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "controller/store.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;

namespace {

// One agent's report of `targets` windows, about 80 bytes each once encoded.
std::vector<weft::proto::WindowStats> batch(size_t round, size_t targets, int64_t base_ns) {
  std::vector<weft::proto::WindowStats> ws(targets);
  for (size_t t = 0; t < targets; ++t) {
    auto& w = ws[t];
    w.protocol = weft::proto::Protocol::udp;
    w.target = "target-" + std::to_string(t);
    w.target_address = "10.1." + std::to_string(t / 250) + "." + std::to_string(t % 250);
    w.start_unix_ns = base_ns + static_cast<int64_t>(round) * 10'000'000'000;
    w.end_unix_ns = w.start_unix_ns + 10'000'000'000;
    w.sent = 100 + t;
    w.received = w.sent;
    w.network_rtt = {w.received, 10'000, 16'500, 15'000, 16'000, 17'000, 18'000, 19'000, 20'000};
  }
  return ws;
}

uintmax_t size_of(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace

TEST(SqliteCheckpoint, TheWalIsCopiedInTheBackgroundAndNothingIsLost) {
  TempDir dir;
  const std::string db = dir.file("h.db");
  const int64_t base = now_ns() - 3600LL * 1'000'000'000;
  constexpr size_t kRounds = 1000, kTargets = 300;
  size_t bytes = 0;
  {
    auto s = open_sqlite_store(db);
    ASSERT_TRUE(s) << s.error().message;
    for (size_t r = 0; r < kRounds; ++r) {
      auto ws = batch(r, kTargets, base);
      ASSERT_TRUE((*s)->append("agent-" + std::to_string(r % 50), ws, now_ns()));
    }
    bytes = size_of(db + "-wal") + size_of(db);
    ASSERT_GT(bytes, 20u << 20) << "the batches should make well over 16 MB";
    // SQLite's own checkpoint would have waited for 64 MB of WAL (1000 pages of 64 KiB); the
    // background one copies from 16 MB on, while the store stays open and idle.
    uintmax_t in_db = 0;
    for (int i = 0; i < 200 && (in_db = size_of(db)) < (16u << 20); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GE(in_db, 16u << 20) << "the WAL was not checkpointed into the database file";
  }
  auto s = open_sqlite_store(db);
  ASSERT_TRUE(s) << s.error().message;
  size_t windows = 0;
  ASSERT_TRUE((*s)->load_recent(base, [&](const std::string&, std::span<const weft::proto::WindowStats> ws,
                                          int64_t) { windows += ws.size(); }));
  EXPECT_EQ(windows, kRounds * kTargets);
}
