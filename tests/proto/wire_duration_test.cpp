// Durations on the agent wire (proto/wire_duration.hpp): one form in memory (Duration), one unit on
// the wire (nanoseconds), and the pre-0.2 forms (interval_us, window_ms...) still written for released
// agents and still read from released controllers.
#include "proto/wire_duration.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "proto/pinglist.hpp"
#include "proto/register_reply.hpp"

using namespace weft;
using namespace weft::proto;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {
std::string error_of(const json& j, const WireDuration& f) {
  auto r = duration_field(j, f);
  EXPECT_FALSE(r) << j.dump();
  return r ? std::string() : r.error().message;
}
}  // namespace

TEST(WireDuration, WritesNanosecondsAndTheOldForm) {
  json j = json::object();
  put_duration(j, kProbeIntervalField, 1500us);
  put_duration(j, kWindowField, 10s);
  EXPECT_EQ(j, json::parse(R"({"interval_ns":1500000,"interval_us":1500,"window_ns":10000000000,
                               "window_ms":10000})"));
  // The old form is the new one truncated to its unit: nothing finer than it is lost on the new form.
  json k = json::object();
  put_duration(k, kProbeIntervalField, 2500ns);
  EXPECT_EQ(k["interval_us"], 2);
  auto back = duration_field(k, kProbeIntervalField);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, 2500ns);
}

TEST(WireDuration, ReadsEitherFormToTheSameDuration) {
  for (Duration d : {Duration(1us), Duration(250us), Duration(100ms), Duration(1s), Duration(7 * 24h)}) {
    json both = json::object();
    put_duration(both, kProbeIntervalField, d);
    json only_new{{"interval_ns", both["interval_ns"]}};
    json only_old{{"interval_us", both["interval_us"]}};  // what a released controller sends
    for (const json& j : {both, only_new, only_old}) {
      auto r = duration_field(j, kProbeIntervalField);
      ASSERT_TRUE(r) << j.dump() << ": " << r.error().message;
      EXPECT_EQ(*r, d) << j.dump();
    }
  }
}

TEST(WireDuration, RefusesWhatDoesNotFit) {
  EXPECT_EQ(error_of(json::object(), kProbeIntervalField), "interval_ns: missing");
  EXPECT_EQ(error_of(json{{"interval_ns", 999}}, kProbeIntervalField),
            "interval_ns: 999 is out of range [1000, 9223372036854775807]");
  EXPECT_EQ(error_of(json{{"interval_ns", -1}}, kProbeIntervalField),
            "interval_ns: expected an integer in [1000, 9223372036854775807]");
  EXPECT_EQ(error_of(json{{"interval_ns", 9223372036854775808ull}}, kProbeIntervalField),
            "interval_ns: 9223372036854775808 is out of range [1000, 9223372036854775807]");
  EXPECT_EQ(error_of(json{{"interval_us", 0}}, kProbeIntervalField),
            "interval_us: 0 is out of range [1, 9223372036854775]");
  EXPECT_EQ(error_of(json{{"interval_us", 9223372036854776}}, kProbeIntervalField),
            "interval_us: 9223372036854776 is out of range [1, 9223372036854775]");
  EXPECT_EQ(error_of(json{{"window_ms", 1.5}}, kWindowField),
            "window_ms: expected an integer in [1, 9223372036854]");
  // Both forms: they must say the same (the old one truncated), else the document is refused.
  EXPECT_TRUE(duration_field(json{{"interval_ns", 1999}, {"interval_us", 1}}, kProbeIntervalField));
  EXPECT_EQ(error_of(json{{"interval_ns", 2000}, {"interval_us", 1}}, kProbeIntervalField),
            "interval_us: 1 disagrees with interval_ns (2000)");
  EXPECT_EQ(error_of(json{{"window_ns", 10'000'000'000}, {"window_ms", "10000"}}, kWindowField),
            "window_ms: \"10000\" disagrees with window_ns (10000000000)");
}

// A released controller's pinglist (docs/api.md before 0.2, verbatim field set) decodes to the
// durations it meant.
TEST(WireDuration, AReleasedControllersPinglistDecodes) {
  auto r = decode_pinglist(R"({"version":5,"window_ms":10000,"report_interval_ms":1000,
    "sync_interval_ms":10000,"protocols":[{"protocol":"udp","interval_us":100000,"timeout_us":1000000,
    "targets":[{"name":"h2","host":"10.0.0.2","port":7777}]}]})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pinglist.window, 10s);
  EXPECT_EQ(r->pinglist.report_interval, 1s);
  EXPECT_EQ(r->pinglist.sync_interval, 10s);
  ASSERT_EQ(r->pinglist.protocols.size(), 1u);
  EXPECT_EQ(r->pinglist.protocols[0].interval, 100ms);
  EXPECT_EQ(r->pinglist.protocols[0].timeout, 1s);
}

// What a released agent's strict decoder requires is still in what this controller sends: every
// old field, with the value it means in its unit.
TEST(WireDuration, AReleasedAgentStillFindsItsFields) {
  Pinglist p;
  p.version = 9;
  p.window = 10s;
  p.report_interval = 1s;
  p.sync_interval = 10s;
  p.protocols.push_back({Protocol::udp, 100ms, 1s, {{"h2", "10.0.0.2", 7777}}});
  auto j = json::parse(pinglist_json(p));
  EXPECT_EQ(j["window_ms"], 10000);
  EXPECT_EQ(j["report_interval_ms"], 1000);
  EXPECT_EQ(j["sync_interval_ms"], 10000);
  EXPECT_EQ(j["protocols"][0]["interval_us"], 100000);
  EXPECT_EQ(j["protocols"][0]["timeout_us"], 1000000);
  auto reply = json::parse(register_reply_json(RegisterReply{9, 1s, 10s, 10s}));
  EXPECT_EQ(reply["report_interval_ms"], 1000);
  EXPECT_EQ(reply["sync_interval_ms"], 10000);
  EXPECT_EQ(reply["window_ms"], 10000);
  EXPECT_EQ(reply["window_ns"], 10'000'000'000);
}
