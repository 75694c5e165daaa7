// The remote-write spool (controller/remote_write_spool.hpp): a queue "killed" (destroyed without
// a flush, which is what SIGKILL leaves: the appends are in the file, nothing else ran) gives back,
// when opened again, exactly the windows the receiver had not acknowledged; damage in the file
// costs the damaged records and nothing else, and a spool that cannot be used leaves the queue
// working in memory.
#include "controller/remote_write_spool.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "base/little_endian.hpp"
#include "lib/test_util.hpp"

namespace weft::controller {
namespace {

using testlib::TempDir;

std::vector<proto::WindowStats> windows(int first, int n) {
  std::vector<proto::WindowStats> out;
  for (int k = first; k < first + n; ++k) {
    proto::WindowStats w;
    w.protocol = k % 2 ? proto::Protocol::tcp : proto::Protocol::udp;
    w.target = "dst-" + std::to_string(k % 3);
    w.end_unix_ns = 1'700'000'000'000'000'000 + k * 1'000'000'000LL;
    w.sent = 100;
    w.lost = static_cast<uint64_t>(k % 10);
    w.late = 1;
    w.duplicate = 2;
    w.network_rtt.count = 90;
    w.network_rtt.p50_ns = 1000 + k;
    w.network_rtt.p90_ns = 2000 + k;
    w.network_rtt.p99_ns = 3000 + k;
    w.network_rtt.max_ns = 4000 + k;
    out.push_back(w);
  }
  return out;
}

std::vector<int64_t> ends(const std::vector<QueuedWindow>& b) {
  std::vector<int64_t> out;
  for (const auto& w : b) out.push_back(w.end_unix_ns);
  return out;
}

std::vector<int64_t> ends_of(int first, int n) {
  std::vector<int64_t> out;
  for (const auto& w : windows(first, n)) out.push_back(w.end_unix_ns);
  return out;
}

// A controller's queue on `path`, as Controller::start sets it up.
std::unique_ptr<RemoteWriteQueue> queue_on(const std::string& path) {
  auto q = std::make_unique<RemoteWriteQueue>();
  q->set_spool_path(path);
  q->set_enabled(true);
  return q;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void spit(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

TEST(RemoteWriteSpool, ChecksumIsCrc32c) {
  // The check value of CRC-32C (RFC 3720), whichever of the two implementations this CPU runs.
  EXPECT_EQ(RemoteWriteSpool::checksum("123456789"), 0xe3069283u);
  EXPECT_EQ(RemoteWriteSpool::checksum(""), 0u);
  EXPECT_EQ(RemoteWriteSpool::checksum(std::string(1000, 'x')),
            RemoteWriteSpool::checksum(std::string(1000, 'x')));
}

TEST(RemoteWriteSpool, AKilledQueueSendsWhatItOwedAfterTheRestart) {
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    EXPECT_EQ(q->spool_path(), path);
    q->enqueue("a", windows(0, 3));  // one report
    q->enqueue("b", windows(3, 2));  // another
    auto b = q->take(2);
    q->acknowledged(b.size());   // the receiver took the first two
    auto inflight = q->take(1);  // the third is out when the controller dies
  }                              // killed: no flush, no stop
  auto q = queue_on(path);
  EXPECT_EQ(q->stats().recovered, 3u);
  auto owed = q->take(10);
  EXPECT_EQ(ends(owed), ends_of(2, 3));
  // Every field comes back as it went in.
  auto want = windows(3, 1)[0];
  const QueuedWindow& got = owed[1];
  EXPECT_EQ(got.src, "b");
  EXPECT_EQ(got.dst, want.target);
  EXPECT_EQ(got.protocol, want.protocol);
  EXPECT_EQ(got.lost, want.lost);
  EXPECT_EQ(got.late, 1u);
  EXPECT_EQ(got.duplicate, 2u);
  EXPECT_EQ(got.rtt_count, 90u);
  EXPECT_EQ(got.p99_ns, want.network_rtt.p99_ns);
  EXPECT_EQ(got.max_ns, want.network_rtt.max_ns);
}

TEST(RemoteWriteSpool, AWindowKilledBetweenTheStoreAndTheQueueIsInTheSpool) {
  // The ingest prepares (spools) before the store commits and queues after: a crash in between
  // must not leave a window stored (the agent's resend then a duplicate) and owed to no one.
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    auto p = q->prepare("a", windows(0, 2));
    EXPECT_EQ(q->size(), 0u);  // not queued before the store said yes
  }
  EXPECT_EQ(ends(queue_on(path)->take(10)), ends_of(0, 2));
}

TEST(RemoteWriteSpool, AReportCommittedLateHoldsTheAcknowledgementBack) {
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    auto first = q->prepare("a", windows(0, 1));   // its store commit is slow ...
    auto second = q->prepare("b", windows(1, 1));  // ... this one's is quick
    q->commit(std::move(second));
    auto b = q->take(10);
    q->acknowledged(b.size());  // the receiver took the second: the first is still owed
    q->commit(std::move(first));
    auto again = q->take(10);
    EXPECT_EQ(ends(again), ends_of(0, 1));
  }  // killed with the first one out
  // The first is owed; the second, after it in the spool, is sent again (the same sample).
  EXPECT_EQ(ends(queue_on(path)->take(10)), ends_of(0, 2));
}

TEST(RemoteWriteSpool, AnAbandonedReportIsPassedOver) {
  TempDir d;
  const auto path = d.file("rw.spool");
  auto q = queue_on(path);
  q->abandon(q->prepare("a", windows(0, 1)));  // the store failed: the agent gets a 503
  q->enqueue("a", windows(1, 1));
  auto b = q->take(10);
  EXPECT_EQ(ends(b), ends_of(1, 1));
  q->acknowledged(b.size());
  EXPECT_EQ(std::filesystem::file_size(path), RemoteWriteSpool::kHeaderBytes);  // nothing owed
}

TEST(RemoteWriteSpool, ABatchRetriedBehindALateCommitKeepsSpoolOrder) {
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    auto late = q->prepare("a", windows(0, 1));
    q->enqueue("a", windows(1, 2));
    auto b = q->take(10);  // 1, 2 out
    q->commit(std::move(late));
    q->retry(std::move(b));  // receiver down
    EXPECT_EQ(ends(q->take(1)), ends_of(0, 1));
  }
  EXPECT_EQ(ends(queue_on(path)->take(10)), ends_of(0, 3));
}

TEST(RemoteWriteSpool, WindowsQueuedAfterTheRestartFollowTheRecoveredOnes) {
  TempDir d;
  const auto path = d.file("rw.spool");
  queue_on(path)->enqueue("a", windows(0, 2));
  {
    auto q = queue_on(path);
    q->enqueue("a", windows(2, 2));
  }
  auto q = queue_on(path);
  EXPECT_EQ(ends(q->take(10)), ends_of(0, 4));
}

TEST(RemoteWriteSpool, EverythingAcknowledgedShrinksTheFileToItsHeader) {
  TempDir d;
  const auto path = d.file("rw.spool");
  auto q = queue_on(path);
  q->enqueue("a", windows(0, 50));
  EXPECT_GT(std::filesystem::file_size(path), 50 * 100u);
  auto b = q->take(100);
  q->acknowledged(b.size());
  EXPECT_EQ(std::filesystem::file_size(path), RemoteWriteSpool::kHeaderBytes);
  EXPECT_EQ(q->stats().spool_bytes, RemoteWriteSpool::kHeaderBytes);
  q->enqueue("a", windows(50, 1));  // positions go on growing after the truncation
  q.reset();
  auto again = queue_on(path);
  EXPECT_EQ(ends(again->take(10)), ends_of(50, 1));
}

TEST(RemoteWriteSpool, RejectedAndDroppedWindowsAreNotSentAgain) {
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    q->set_capacity(3);
    q->enqueue("a", windows(0, 5));  // 0 and 1 dropped past the bound
    auto b = q->take(1);
    q->rejected(b.size());  // 2 refused for good
  }
  auto q = queue_on(path);
  EXPECT_EQ(ends(q->take(10)), ends_of(3, 2));
}

TEST(RemoteWriteSpool, ATornLastRecordIsCutOffAndTheRestKept) {
  TempDir d;
  const auto path = d.file("rw.spool");
  queue_on(path)->enqueue("a", windows(0, 4));
  const auto full = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, full - 7);  // killed in the middle of the last record
  {
    auto q = queue_on(path);
    EXPECT_EQ(ends(q->take(10)), ends_of(0, 3));
    EXPECT_LT(std::filesystem::file_size(path), full - 7);  // the torn bytes are gone ...
    q->enqueue("a", windows(10, 1));                        // ... so a new record follows whole ones
  }
  auto q = queue_on(path);
  auto want = ends_of(0, 3);
  want.push_back(ends_of(10, 1)[0]);
  EXPECT_EQ(ends(q->take(10)), want);
}

TEST(RemoteWriteSpool, ACorruptRecordIsSkippedAndItsNeighboursKept) {
  TempDir d;
  const auto path = d.file("rw.spool");
  queue_on(path)->enqueue("a", windows(0, 5));
  std::string data = slurp(path);
  const size_t record = (data.size() - RemoteWriteSpool::kHeaderBytes) / 5;
  data[RemoteWriteSpool::kHeaderBytes + 2 * record + 20] ^= 0x5a;  // a byte of the third record's payload
  spit(path, data);
  auto q = queue_on(path);
  auto want = ends_of(0, 2);
  for (auto e : ends_of(3, 2)) want.push_back(e);
  EXPECT_EQ(ends(q->take(10)), want);
}

TEST(RemoteWriteSpool, ADamagedLengthIsResynchronisedOnTheNextRecord) {
  TempDir d;
  const auto path = d.file("rw.spool");
  queue_on(path)->enqueue("a", windows(0, 4));
  std::string data = slurp(path);
  const size_t record = (data.size() - RemoteWriteSpool::kHeaderBytes) / 4;
  data[RemoteWriteSpool::kHeaderBytes + record + 6] = '\x7f';  // the second record's length: 8 MB
  spit(path, data);
  const auto scan = RemoteWriteSpool::scan(std::string_view(data).substr(RemoteWriteSpool::kHeaderBytes),
                                           RemoteWriteSpool::kHeaderBytes, 0);
  EXPECT_EQ(scan.corrupt_frames, 1u);
  EXPECT_EQ(scan.torn_bytes, 0u);
  auto q = queue_on(path);
  auto want = ends_of(0, 1);
  for (auto e : ends_of(2, 2)) want.push_back(e);
  EXPECT_EQ(ends(q->take(10)), want);
}

TEST(RemoteWriteSpool, AnAcknowledgedOffsetPastTheEndSendsEverythingAgain) {
  TempDir d;
  const auto path = d.file("rw.spool");
  queue_on(path)->enqueue("a", windows(0, 3));
  std::string data = slurp(path);
  // Header: magic(8) version(4) crc(4) base(8) acked(8); a valid CRC over an impossible offset.
  auto* h = reinterpret_cast<uint8_t*>(data.data());
  le::store(h + 24, uint64_t{1} << 40);
  le::store(h + 12, RemoteWriteSpool::checksum(std::string_view(data).substr(16, 16)));
  spit(path, data);
  auto q = queue_on(path);
  EXPECT_EQ(ends(q->take(10)), ends_of(0, 3));  // resent: identical samples, the receiver keeps one
}

TEST(RemoteWriteSpool, ADamagedHeaderSendsEverythingAgain) {
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    q->enqueue("a", windows(0, 3));
    auto b = q->take(1);
    q->acknowledged(b.size());
  }
  std::string data = slurp(path);
  data[20] ^= 1;  // the base offset, under the header's CRC
  spit(path, data);
  auto q = queue_on(path);
  EXPECT_EQ(ends(q->take(10)), ends_of(0, 3));
}

TEST(RemoteWriteSpool, ASpoolOfAnotherFormatIsMovedAsideNotRead) {
  TempDir d;
  const auto path = d.file("rw.spool");
  queue_on(path)->enqueue("a", windows(0, 3));
  std::string data = slurp(path);
  data[8] = 0;  // format version 0: an older build's
  spit(path, data);
  auto q = queue_on(path);
  EXPECT_EQ(q->size(), 0u);
  EXPECT_EQ(q->spool_path(), path);  // a new spool in its place
  EXPECT_EQ(slurp(path + ".unreadable"), data);
  q->enqueue("a", windows(5, 1));
  q.reset();
  EXPECT_EQ(ends(queue_on(path)->take(10)), ends_of(5, 1));
}

TEST(RemoteWriteSpool, NotASpoolAtAllIsMovedAside) {
  TempDir d;
  const auto path = d.file("rw.spool");
  spit(path, "hello, this is somebody's file and not a spool\n");
  auto q = queue_on(path);
  EXPECT_EQ(q->size(), 0u);
  EXPECT_EQ(slurp(path + ".unreadable"), "hello, this is somebody's file and not a spool\n");
}

TEST(RemoteWriteSpool, AnUnusablePathLeavesTheQueueInMemory) {
  TempDir d;
  spit(d.file("file"), "x");
  // A directory that cannot exist (its parent is a file): ENOTDIR even for root.
  auto q = queue_on(d.file("file") + "/rw.spool");
  EXPECT_EQ(q->spool_path(), "");
  q->enqueue("a", windows(0, 2));
  EXPECT_EQ(ends(q->take(10)), ends_of(0, 2));
}

TEST(RemoteWriteSpool, TwoQueuesCannotShareOneSpool) {
  TempDir d;
  const auto path = d.file("rw.spool");
  auto first = queue_on(path);
  first->enqueue("a", windows(0, 2));
  auto second = queue_on(path);
  EXPECT_EQ(second->spool_path(), "");  // locked: memory only, the first one's windows left alone
  EXPECT_EQ(second->size(), 0u);
  EXPECT_EQ(first->size(), 2u);
}

TEST(RemoteWriteSpool, TurningRemoteWriteOffForgetsTheSpool) {
  TempDir d;
  const auto path = d.file("rw.spool");
  {
    auto q = queue_on(path);
    q->enqueue("a", windows(0, 3));
    q->set_enabled(false);
  }
  EXPECT_EQ(queue_on(path)->size(), 0u);
}

TEST(RemoteWriteSpool, CompactionKeepsTheOwedTailAndItsPositions) {
  TempDir d;
  const auto path = d.file("rw.spool");
  auto opened = RemoteWriteSpool::open(path);
  ASSERT_TRUE(opened) << opened.error().message;
  auto& sp = *opened->spool;
  sp.set_compact_bytes(0);
  std::vector<QueuedWindow> ws;
  for (const auto& w : windows(0, 10)) ws.push_back(queued_window("a", w));
  std::string frames;
  RemoteWriteSpool::encode(ws, frames);
  auto at = sp.append(frames);
  ASSERT_TRUE(at);
  for (auto& w : ws) w.spool_pos += *at;
  const auto before = sp.file_bytes();
  ASSERT_TRUE(sp.acknowledge_until(ws[7].spool_pos));  // 7 done, 3 owed: the head is rewritten away
  EXPECT_LT(sp.file_bytes(), before / 2);
  EXPECT_EQ(sp.end(), ws.back().spool_pos + (before - RemoteWriteSpool::kHeaderBytes) / 10);
  EXPECT_FALSE(std::filesystem::exists(path + ".compact"));
  ASSERT_TRUE(sp.acknowledge_until(ws[8].spool_pos));  // positions still mean the same windows
  opened->spool.reset();
  auto again = RemoteWriteSpool::open(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(ends(again->scan.windows), ends_of(8, 2));
}

}  // namespace
}  // namespace weft::controller
