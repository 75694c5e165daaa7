#include "probe/rdma/windows.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace weft::probe;

namespace {
constexpr int64_t W = 1'000'000'000;  // 1 s windows

RttSample answer(int64_t total, int64_t delay, bool weird = false) {
  RttSample s;
  s.total_ns = total;
  s.weird = weird;
  if (!weird) {
    s.responder_delay_ns = delay;
    s.has_responder_delay = true;
    s.network_ns = total - delay;
    s.has_network = true;
  }
  return s;
}
}  // namespace

TEST(RdmaWindows, FoldsProbesIntoTheWindowOfTheirDeadlineAndClosesInOrder) {
  RdmaWindows w;
  std::vector<WindowStats> out;
  auto emit = [&](WindowAccumulator& a) {
    WindowStats s;
    s.protocol = Protocol::rdma;
    a.finish(W, s);
    out.push_back(s);
  };
  // Window 10 gets 3 answers (one weird) and a loss; window 11 one answer, added in between.
  w.at(10 * W + 5, W, emit).add_answer(answer(100'000, 10'000));
  w.at(11 * W + 5, W, emit).add_answer(answer(300'000, 10'000));
  w.at(10 * W + 7, W, emit).add_answer(answer(200'000, 20'000));
  w.at(10 * W + 9, W, emit).add_answer(answer(50'000, 90'000, true));
  w.at(10 * W + 9, W, emit).add_lost();
  w.close_until(11 * W, W, emit);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].start_unix_ns, 10 * W);
  EXPECT_EQ(out[0].sent, 4u);
  EXPECT_EQ(out[0].received, 3u);
  EXPECT_EQ(out[0].lost, 1u);
  EXPECT_EQ(out[0].weird, 1u);
  // The weird sample counts in the total RTT but not in the network RTT or the delay.
  EXPECT_EQ(out[0].rtt_incl_responder_delay.count, 3u);
  EXPECT_EQ(out[0].network_rtt.count, 2u);
  EXPECT_EQ(out[0].responder_delay.count, 2u);
  EXPECT_LE(out[0].network_rtt.max_ns, 180'000 * 102 / 100);
  w.close_all(emit);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].start_unix_ns, 11 * W);
  EXPECT_EQ(out[1].received, 1u);
}

TEST(RdmaWindows, TooManyOpenWindowsFinishTheOldestEarly) {
  RdmaWindows w;
  std::vector<int64_t> starts;
  auto emit = [&](WindowAccumulator& a) {
    WindowStats s;
    a.finish(W, s);
    starts.push_back(s.start_unix_ns);
  };
  for (int64_t i = 0; i < static_cast<int64_t>(RdmaWindows::kOpen) + 2; ++i) w.at(i * W, W, emit).add_lost();
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0], 0);
  EXPECT_EQ(starts[1], W);
}
