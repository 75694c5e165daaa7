// The window counters' one list (proto/window_counters.hpp): every counter is written under its name
// with its own value, and what the report's JSON form writes its decoder reads back.
#include "proto/window_counters.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "proto/report.hpp"

using namespace weft::proto;
using nlohmann::json;

namespace {
WindowStats numbered() {
  WindowStats w;
  w.target = "h2";
  w.target_address = "10.0.0.2:7777";
  w.start_unix_ns = 1'763'700'000'000'000'000;
  w.end_unix_ns = w.start_unix_ns + 10'000'000'000;
  w.timestamp_source = TimestampSource::kernel;
  uint64_t v = 100;
  for (const auto& c : kWindowCounters) w.*c.member = v--;  // sent 100 >= received 99 >= lost 98...
  return w;
}
}  // namespace

TEST(WindowCounters, EachUnderItsOwnNameOnce) {
  std::set<std::string> names;
  for (size_t i = 0; i < kWindowCounters.size(); ++i) {
    EXPECT_TRUE(names.insert(kWindowCounters[i].name).second) << kWindowCounters[i].name;
    for (size_t k = 0; k < i; ++k)  // member pointers compare for equality only
      EXPECT_NE(kWindowCounters[i].member, kWindowCounters[k].member) << kWindowCounters[i].name;
  }
  const WindowStats w = numbered();
  json j = json::object();
  put_window_counters(j, w);
  EXPECT_EQ(j.size(), kWindowCounters.size() + 1);
  EXPECT_EQ(j["sent"], 100);
  EXPECT_EQ(j["received"], 99);
  EXPECT_EQ(j["weird"], 94);
  EXPECT_EQ(j["timestamp_source"], "kernel");
}

TEST(WindowCounters, TheReportsJsonFormRoundTripsThem) {
  const WindowStats w = numbered();
  auto back = parse_window_json(window_json(w));
  ASSERT_TRUE(back) << back.error().message;
  for (const auto& c : kWindowCounters) EXPECT_EQ((*back).*c.member, w.*c.member) << c.name;
  EXPECT_EQ(back->timestamp_source, w.timestamp_source);
  // The required ones are required, the others default to 0 (older agents lacked them).
  for (const auto& c : kWindowCounters) {
    json j = json::parse(window_json(w));
    j.erase(c.name);
    auto r = parse_window_json(j.dump());
    if (c.required) {
      EXPECT_FALSE(r) << c.name;
    } else {
      ASSERT_TRUE(r) << c.name << ": " << r.error().message;
      EXPECT_EQ((*r).*c.member, 0u) << c.name;
    }
  }
}
