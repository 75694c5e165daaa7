// The controller's two short answers (register, report): round trips and every malformed class.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "proto/register_reply.hpp"
#include "proto/report_reply.hpp"

using namespace weft::proto;
using namespace std::chrono_literals;
using nlohmann::json;

TEST(RegisterReply, RoundTrip) {
  RegisterReply r{42, 1s, 10s, 30s};
  auto out = decode_register_reply(register_reply_json(r));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, r);
}

TEST(RegisterReply, Malformed) {
  auto err = [](const std::string& body) {
    auto r = decode_register_reply(body);
    EXPECT_FALSE(r) << body;
    return r ? std::string() : r.error().message;
  };
  // As a released (pre-0.2) controller answers: durations only in milliseconds.
  const json good{{"pinglist_version", 1},
                  {"report_interval_ms", 1000},
                  {"sync_interval_ms", 10000},
                  {"window_ms", 10000}};
  {
    auto old = decode_register_reply(good.dump());
    ASSERT_TRUE(old) << old.error().message;
    EXPECT_EQ(*old, (RegisterReply{1, 1s, 10s, 10s}));
  }
  EXPECT_EQ(err("not json"), "register reply: not valid JSON");
  EXPECT_EQ(err("[1]"), "register reply: expected a JSON object");
  for (const char* key : {"pinglist_version", "report_interval_ms", "sync_interval_ms", "window_ms"}) {
    json j = good;
    j.erase(key);
    const std::string missing = key == std::string("pinglist_version")
                                    ? key
                                    : std::string(key).replace(std::string(key).size() - 2, 2, "ns");
    EXPECT_EQ(err(j.dump()), fmt::format("register reply: {}: missing", missing));
    j[key] = "1";
    EXPECT_NE(err(j.dump()).find(fmt::format("register reply: {}: expected an integer", key)),
              std::string::npos);
  }
  json j = good;
  j["window_ms"] = 0;
  EXPECT_EQ(err(j.dump()), "register reply: window_ms: 0 is out of range [1, 9223372036854]");
  j = json::parse(register_reply_json(RegisterReply{1, 1s, 10s, 10s}));
  j["window_ns"] = 999'999;
  EXPECT_EQ(err(j.dump()),
            "register reply: window_ns: 999999 is out of range [1000000, 9223372036854775807]");
  j = good;
  j["token"] = "x";  // a newer controller's key: ignored
  EXPECT_TRUE(decode_register_reply(j.dump()));
}

TEST(ReportReply, RoundTrip) {
  ReportReply r{300, 2, 1, 99};
  auto out = decode_report_reply(report_reply_json(r));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, r);
}

TEST(ReportReply, Malformed) {
  auto err = [](const std::string& body) {
    auto r = decode_report_reply(body);
    EXPECT_FALSE(r) << body;
    return r ? std::string() : r.error().message;
  };
  const json good{{"accepted", 1}, {"duplicate", 0}, {"stale", 0}, {"pinglist_version", 5}};
  EXPECT_EQ(err(""), "report reply: not valid JSON");
  EXPECT_EQ(err("\"ok\""), "report reply: expected a JSON object");
  for (const char* key : {"accepted", "duplicate", "stale", "pinglist_version"}) {
    json j = good;
    j.erase(key);
    EXPECT_EQ(err(j.dump()), fmt::format("report reply: {}: missing", key));
    j[key] = -1;
    EXPECT_EQ(err(j.dump()),
              fmt::format("report reply: {}: expected an integer in [0, 18446744073709551615]", key));
  }
  json j = good;
  j["error"] = "x";  // a newer controller's key: ignored
  EXPECT_TRUE(decode_report_reply(j.dump()));
}
