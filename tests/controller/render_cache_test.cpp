// RenderCache (controller/render_cache.hpp): cheap answers are computed per request; expensive ones
// at most once per max age, refreshed off the request path.
#include "controller/render_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace weft::controller {
namespace {

using namespace std::chrono_literals;

TEST(RenderCache, CheapAnswersAreComputedForEveryRequest) {
  RenderCache c(/*max_age_ns=*/60'000'000'000, /*cheap_ns=*/1'000'000'000);
  int n = 0;
  auto f = [&n] { return std::to_string(++n); };
  EXPECT_EQ(c.get("k", f), "1");
  EXPECT_EQ(c.get("k", f), "2");  // no caching: the state may have changed
  EXPECT_EQ(c.stats().computed_inline, 2u);
  EXPECT_EQ(c.stats().served_cached, 0u);
}

TEST(RenderCache, ExpensiveAnswersAreServedCachedAndRefreshedInTheBackground) {
  RenderCache c(/*max_age_ns=*/50'000'000, /*cheap_ns=*/0);  // every answer counts as expensive
  std::atomic<int> n{0};
  auto f = [&n] { return std::to_string(++n); };
  EXPECT_EQ(c.get("k", f), "1");  // the first request computes
  EXPECT_EQ(c.get("k", f), "1");  // younger than max age: cached, nothing recomputed
  EXPECT_EQ(n.load(), 1);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(c.get("k", f), "1");  // too old: still answered at once, a refresh starts
  // The refresh lands within a bounded wait (the cache's own thread).
  std::string v;
  for (int i = 0; i < 500 && (v = c.get("k", f)) == "1"; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(v, "2");
  EXPECT_EQ(c.stats().refreshed, 1u);
  // Keys are separate.
  EXPECT_EQ(c.get("other", f), "3");
}

TEST(RenderCache, AnAnswerOlderThanTheStaleLimitIsComputedAgainInline) {
  RenderCache c(/*max_age_ns=*/50'000'000, /*cheap_ns=*/0, /*max_stale_ns=*/200'000'000);
  std::atomic<int> n{0};
  auto f = [&n] { return std::to_string(++n); };
  EXPECT_EQ(c.get("k", f), "1");
  EXPECT_EQ(c.get("k", f), "1");  // young: cached
  std::this_thread::sleep_for(300ms);
  // Older than the stale limit (load only makes it older): this request waits for a new answer
  // instead of getting the old one while a refresh starts.
  EXPECT_EQ(c.get("k", f), "2");
  EXPECT_EQ(c.stats().computed_inline, 2u);
}

TEST(RenderCache, KeysBeyondTheCapAreComputedUncached) {
  RenderCache c(60'000'000'000, 0);
  int n = 0;
  auto f = [&n] { return std::to_string(++n); };
  for (size_t k = 0; k < RenderCache::kMaxKeys; ++k) c.get("k" + std::to_string(k), f);
  const int before = n;
  EXPECT_EQ(c.get("k0", f), "1");  // cached
  c.get("extra", f);
  c.get("extra", f);
  EXPECT_EQ(n, before + 2);  // beyond the cap: computed each time
}

}  // namespace
}  // namespace weft::controller
