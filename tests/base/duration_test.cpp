// base/duration: the one parser of "250us" .. "7d" that config files and the CLI share.
#include "base/duration.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using weft::parse_duration;

TEST(Duration, EveryUnit) {
  EXPECT_EQ(*parse_duration("250us"), 250us);
  EXPECT_EQ(*parse_duration("100ms"), 100ms);
  EXPECT_EQ(*parse_duration("10s"), 10s);
  EXPECT_EQ(*parse_duration("3m"), 180s);
  EXPECT_EQ(*parse_duration("2h"), 7200s);
  EXPECT_EQ(*parse_duration("7d"), 7 * 24h);
  EXPECT_EQ(*parse_duration("0s"), 0s);
}

TEST(Duration, RefusesWhatIsNotOne) {
  for (const char* bad : {"", "s", "1.5s", "-1s", "10", "10 s", "10sec", "10S", " 10s", "1e3ms"}) {
    auto d = parse_duration(bad);
    ASSERT_FALSE(d) << bad;
    EXPECT_NE(d.error().message.find(bad), std::string::npos) << d.error().message;
  }
}

TEST(Duration, RefusesWhatDoesNotFit) {
  // 2^63 ns is about 106,751 days: the largest day count that fits, then one too many.
  EXPECT_TRUE(parse_duration("106751d"));
  EXPECT_FALSE(parse_duration("106752d"));
  EXPECT_FALSE(parse_duration("99999999999999999d"));
  EXPECT_FALSE(parse_duration("99999999999999999999us"));  // the digits alone overflow
}
