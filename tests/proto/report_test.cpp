// The report codec: round trips, and garbage never crashes or over-reads.
#include "proto/report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "lib/test_util.hpp"

using namespace weft::proto;
using weft::testlib::window;

TEST(Wire, BinaryRoundTrip) {
  Report r;
  r.agent = "host-1";
  r.seq = 42;
  r.health = {3.25, 12345, 1000.5, 7, 8, 9};
  r.alarms.push_back({"prober_restarted", "x", 123});
  for (int i = 0; i < 50; ++i)
    r.windows.push_back(window("peer-" + std::to_string(i % 7), 1'700'000'000'000'000'000LL + i));
  r.windows[3].network_rtt.min_ns = 0;
  auto bytes = encode_binary(r);
  EXPECT_LT(bytes.size(), r.windows.size() * 80);  // compact: the point of the format
  auto d = decode_binary(bytes);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->agent, r.agent);
  EXPECT_EQ(d->seq, 42u);
  EXPECT_DOUBLE_EQ(d->health.cpu_percent, 3.25);
  ASSERT_EQ(d->windows.size(), r.windows.size());
  for (size_t i = 0; i < r.windows.size(); ++i) {
    EXPECT_EQ(d->windows[i].target, r.windows[i].target);
    EXPECT_EQ(d->windows[i].start_unix_ns, r.windows[i].start_unix_ns);
    EXPECT_EQ(d->windows[i].network_rtt.p99_ns, r.windows[i].network_rtt.p99_ns);
    EXPECT_EQ(d->windows[i].network_rtt.min_ns, r.windows[i].network_rtt.min_ns);
  }
  auto j = decode_json(encode_json(r));
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->windows.size(), r.windows.size());
  EXPECT_EQ(j->windows[5].rtt_incl_responder_delay.p90_ns, r.windows[5].rtt_incl_responder_delay.p90_ns);
}

// Every varint length from 1 to 10 bytes, at both ends of each length, in every position of a
// window (the decoder reads up to 8 bytes at once and must stop exactly at the varint's end).
TEST(Wire, VarintsOfEveryLengthRoundTrip) {
  std::vector<uint64_t> values{0, 1, UINT64_MAX, UINT64_MAX - 1};
  for (int bits = 7; bits < 64; bits += 7) {
    values.push_back((uint64_t{1} << bits) - 1);
    values.push_back(uint64_t{1} << bits);
  }
  Report r;
  r.agent = "h";
  for (size_t i = 0; i < values.size(); ++i) {
    auto w = window("p", 0);
    w.start_unix_ns = static_cast<int64_t>(values[i] >> 1);
    w.end_unix_ns = static_cast<int64_t>(values[(i + 1) % values.size()]);
    w.sent = values[i];
    w.lost = values[(i + 3) % values.size()];
    w.weird = values[(i + 5) % values.size()];
    w.rtt_incl_responder_delay.count =
        values[(i + 7) % values.size()] | 1;  // 0 would mean "no samples": nothing encoded
    w.rtt_incl_responder_delay.min_ns = -static_cast<int64_t>(values[i] >> 1);
    w.rtt_incl_responder_delay.max_ns = static_cast<int64_t>(values[(i + 2) % values.size()]);
    r.windows.push_back(w);
  }
  auto d = decode_binary(encode_binary(r));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->windows.size(), r.windows.size());
  for (size_t i = 0; i < r.windows.size(); ++i) {
    const auto &a = r.windows[i], &b = d->windows[i];
    EXPECT_EQ(b.start_unix_ns, a.start_unix_ns) << i;
    EXPECT_EQ(b.end_unix_ns, a.end_unix_ns) << i;
    EXPECT_EQ(b.sent, a.sent) << i;
    EXPECT_EQ(b.lost, a.lost) << i;
    EXPECT_EQ(b.weird, a.weird) << i;
    EXPECT_EQ(b.rtt_incl_responder_delay.count, a.rtt_incl_responder_delay.count) << i;
    EXPECT_EQ(b.rtt_incl_responder_delay.min_ns, a.rtt_incl_responder_delay.min_ns) << i;
    EXPECT_EQ(b.rtt_incl_responder_delay.max_ns, a.rtt_incl_responder_delay.max_ns) << i;
    EXPECT_EQ(b.rtt_incl_responder_delay.p99_ns, a.rtt_incl_responder_delay.p99_ns) << i;
  }
}

TEST(Wire, TruncationsAndRandomBytesAreErrorsNotCrashes) {
  Report r;
  r.agent = "h";
  for (int i = 0; i < 5; ++i) r.windows.push_back(window("p", 1000 + i));
  auto bytes = encode_binary(r);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_binary(bytes.substr(0, n))) << n;
  std::mt19937 rng(1);
  for (int i = 0; i < 20000; ++i) {
    std::string s = bytes;
    for (int k = 0; k < 3; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    (void)decode_binary(s);  // must not crash (run under ASan/UBSan)
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    (void)decode_binary("WFT1" + junk);
    (void)decode_json(junk);
  }
}

TEST(Wire, JsonTypesAreStrict) {
  EXPECT_FALSE(decode_json(R"({"agent":1,"windows":[]})"));
  EXPECT_FALSE(decode_json(R"({"agent":"a","windows":{}})"));
  EXPECT_FALSE(decode_json(
      R"({"agent":"a","windows":[{"protocol":"udp","target":"b","start_unix_ns":"1","end_unix_ns":2,"sent":1,"received":1,"lost":0}]})"));
  EXPECT_FALSE(decode_json(
      R"({"agent":"a","windows":[{"protocol":"udp","target":"b","start_unix_ns":1,"end_unix_ns":2,"sent":-1,"received":1,"lost":0}]})"));
  EXPECT_FALSE(decode_json(
      R"({"agent":"a","windows":[{"protocol":"icmp","target":"b","start_unix_ns":1,"end_unix_ns":2,"sent":1,"received":1,"lost":0}]})"));
  EXPECT_TRUE(decode_json(
      R"({"agent":"a","windows":[{"protocol":"udp","target":"b","start_unix_ns":1,"end_unix_ns":2,"sent":1,"received":1,"lost":0}]})"));
}

// 0.1 called rtt_incl_responder_delay "rtt" (issue 17: users took it for the network's RTT). The
// JSON form writes both names, so a released controller (and a Redis value it reads) still finds
// "rtt"; it reads the new name, else the old one (a 0.1 agent or a stored value), and rejects the
// two disagreeing.
TEST(Wire, JsonRttNamesOldAndNew) {
  auto w = window("b", 1'700'000'000'000'000'000LL);
  w.rtt_incl_responder_delay.p50_ns = 2'500'000;  // a held probe: far above the network RTT
  const auto text = window_json(w);
  const auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("rtt_incl_responder_delay"));
  ASSERT_TRUE(j.contains("rtt"));
  EXPECT_EQ(j["rtt"], j["rtt_incl_responder_delay"]);
  EXPECT_EQ(j["rtt"]["p50_ns"], 2'500'000);
  auto back = parse_window_json(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rtt_incl_responder_delay, w.rtt_incl_responder_delay);
  EXPECT_EQ(back->network_rtt, w.network_rtt);

  auto old_only = j;  // what 0.1 wrote
  old_only.erase("rtt_incl_responder_delay");
  auto from_old = parse_window_json(old_only.dump());
  ASSERT_TRUE(from_old) << from_old.error().message;
  EXPECT_EQ(from_old->rtt_incl_responder_delay, w.rtt_incl_responder_delay);

  auto new_only = j;  // a later encoder that dropped the old name
  new_only.erase("rtt");
  auto from_new = parse_window_json(new_only.dump());
  ASSERT_TRUE(from_new) << from_new.error().message;
  EXPECT_EQ(from_new->rtt_incl_responder_delay, w.rtt_incl_responder_delay);

  auto disagree = j;
  disagree["rtt"]["p50_ns"] = 1;
  auto bad = parse_window_json(disagree.dump());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("rtt: disagrees with rtt_incl_responder_delay"), std::string::npos)
      << bad.error().message;

  // The same through a whole report.
  Report r;
  r.agent = "a";
  r.windows.push_back(w);
  auto rep = nlohmann::json::parse(encode_json(r));
  rep["windows"][0].erase("rtt_incl_responder_delay");
  auto d = decode_json(rep.dump());
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->windows[0].rtt_incl_responder_delay.p50_ns, 2'500'000);
}
