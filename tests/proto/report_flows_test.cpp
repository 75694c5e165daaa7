// The report's per-flow counters and traced paths (issue 24): both encodings round-trip them, a
// report without them (an older agent's) still decodes, and malformed sections are refused with a
// message that names what is wrong.
#include <gtest/gtest.h>

#include <random>

#include "lib/test_util.hpp"
#include "proto/pinglist.hpp"
#include "proto/report.hpp"

using namespace weft::proto;
using weft::testlib::window;

namespace {

Report report_with_flows() {
  Report r;
  r.agent = "h1";
  r.seq = 7;
  for (int i = 0; i < 4; ++i)
    r.windows.push_back(window("peer-" + std::to_string(i), 1'700'000'000'000'000'000LL));
  for (uint16_t k = 0; k < 8; ++k)
    r.windows[1].flows.push_back({static_cast<uint16_t>(40000 + k), 10,
                                  static_cast<uint64_t>(k == 3 ? 7 : 10),
                                  static_cast<uint64_t>(k == 3 ? 3 : 0), 50'000 + k});
  r.windows[3].flows.push_back({65535, 1, 0, 1, 0});
  PathTrace p;
  p.target = "peer-1";
  p.src_port = 40003;
  p.dst_port = 7777;
  p.traced_at_unix_ns = 1'700'000'000'123'000'000LL;
  p.reached = true;
  p.hops = {"10.0.0.1", "", "10.0.1.1", "10.0.1.2"};
  r.paths.push_back(p);
  p.hops.clear();
  p.reached = false;
  p.src_port = 40004;
  r.paths.push_back(p);
  return r;
}

void expect_same_flows(const Report& a, const Report& b) {
  ASSERT_EQ(a.windows.size(), b.windows.size());
  for (size_t i = 0; i < a.windows.size(); ++i) EXPECT_EQ(a.windows[i].flows, b.windows[i].flows) << i;
  EXPECT_EQ(a.paths, b.paths);
}

}  // namespace

TEST(ReportFlows, BinaryRoundTrip) {
  const Report r = report_with_flows();
  auto d = decode_binary(encode_binary(r));
  ASSERT_TRUE(d) << d.error().message;
  expect_same_flows(r, *d);
  EXPECT_EQ(d->windows[1].flows[3].lost, 3u);
}

TEST(ReportFlows, JsonRoundTrip) {
  const Report r = report_with_flows();
  auto d = decode_json(encode_json(r));
  ASSERT_TRUE(d) << d.error().message;
  expect_same_flows(r, *d);
}

// The window list the controller stores as it is (history) ends before the sections: it decodes on
// its own, to the pair aggregates without flows.
TEST(ReportFlows, EncodedWindowsLeaveTheSectionsOut) {
  const std::string bytes = encode_binary(report_with_flows());
  auto d = decode_binary(bytes);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_LT(d->encoded_windows.size() + 8, bytes.size() - 4);
  auto list = decode_window_list(d->encoded_windows);
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 4u);
  EXPECT_TRUE((*list)[1].flows.empty());
  EXPECT_EQ((*list)[1].sent, d->windows[1].sent);
}

// An agent from before issue 24 sends neither section; its report decodes as before.
TEST(ReportFlows, OldReportsStillDecode) {
  Report r = report_with_flows();
  for (auto& w : r.windows) w.flows.clear();
  r.paths.clear();
  const std::string bytes = encode_binary(r);
  auto d = decode_binary(bytes);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->encoded_windows.size(), bytes.size() - (d->encoded_windows.data() - bytes.data()));
  auto j = decode_json(
      R"({"agent":"a","windows":[{"protocol":"udp","target":"b","start_unix_ns":1,"end_unix_ns":2,"sent":1,"received":1,"lost":0}]})");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_TRUE(j->windows[0].flows.empty());
  EXPECT_TRUE(j->paths.empty());
}

// Decoding stays strict: every malformed section is an error naming the section, never a crash.
TEST(ReportFlows, MalformedBinarySectionsAreRefused) {
  Report r = report_with_flows();
  r.paths.clear();
  for (auto& w : r.windows) w.flows.clear();
  const std::string base = encode_binary(r);  // ends after the window list
  auto refused = [&](const std::string& tail, const char* needle) {
    auto d = decode_binary(base + tail);
    ASSERT_FALSE(d) << "accepted tail of " << tail.size() << " bytes";
    EXPECT_NE(d.error().message.find(needle), std::string::npos) << d.error().message;
  };
  refused(std::string("\x09", 1), "unknown section 9");
  refused(std::string("\x01\x01\x07\x01\x01\x01\x01\x00\x00", 9), "window index 7");        // only 4 windows
  refused(std::string("\x01\x01\x00\x00", 4), "0 flows");                                   // flow count 0
  refused(std::string("\x01\x01\x00\x41", 4), "65 flows");                                  // above 64
  refused(std::string("\x01\x01\x00\x01\xff\xff\x04\x01\x01\x00\x00", 11), "source port");  // 65535*4+...
  refused(std::string("\x01\x05", 2), "5 entries for 4 windows");
  refused(std::string("\x01\x02\x01\x01\x01\x01\x01\x00\x00\x01\x01\x01\x01\x01\x00\x00", 16),
          "out of order");
  refused(std::string("\x01\x01\x00\x01\x01\x01", 6), "flows section");  // truncated
  refused(std::string("\x02\x01\x05\x01h\x01\x01\x00\x00\x00", 10), "unknown protocol 5");
  refused(std::string("\x02\x01\x00\x01h\x01\x01\x00\x02\x00", 10), "reached must be 0 or 1");
  refused(std::string("\x02\x01\x00\x01h\x01\x01\x00\x01\x41", 10), "65 hops");
  refused(std::string("\x02\x01\x00\x01h\x01\x01\x00\x01\x01\x05"
                      "ab",
                      13),
          "paths section");                                                 // truncated hop
  refused(std::string("\x02\x00\x01\x00", 4), "out of order or repeated");  // flows after paths
  refused(std::string("\x02\x00\x02\x00", 4), "out of order or repeated");
  // Every truncation of a report with both sections is an error, unless it ends exactly where a
  // section does (then it is a report without the sections after it).
  Report flows_only = report_with_flows();
  flows_only.paths.clear();
  const size_t flows_end = encode_binary(flows_only).size();
  const std::string full = encode_binary(report_with_flows());
  auto list_end = decode_binary(full)->encoded_windows;
  const size_t old_size = static_cast<size_t>(list_end.data() + list_end.size() - full.data());
  for (size_t n = old_size + 1; n < full.size(); ++n)
    EXPECT_EQ(static_cast<bool>(decode_binary(full.substr(0, n))), n == flows_end) << n;
  std::mt19937 rng(24);
  for (int i = 0; i < 20000; ++i) {  // flipped bytes in the sections: errors or values, never a crash
    std::string s = full;
    for (int k = 0; k < 3; ++k) s[old_size + rng() % (s.size() - old_size)] = static_cast<char>(rng());
    (void)decode_binary(s);
  }
}

TEST(ReportFlows, MalformedJsonIsRefusedWithTheField) {
  const std::string w =
      R"({"protocol":"udp","target":"b","start_unix_ns":1,"end_unix_ns":2,"sent":1,"received":1,"lost":0)";
  auto refused = [](const std::string& body, const char* needle) {
    auto d = decode_json(body);
    ASSERT_FALSE(d) << body;
    EXPECT_NE(d.error().message.find(needle), std::string::npos) << d.error().message;
  };
  refused(R"({"agent":"a","windows":[)" + w + R"(,"flows":{}}]})", "windows[0].flows: expected an array");
  refused(R"({"agent":"a","windows":[)" + w + R"(,"flows":[]}]})", "0 flows");
  refused(R"({"agent":"a","windows":[)" + w +
              R"(,"flows":[{"src_port":70000,"sent":1,"received":1,"lost":0}]}]})",
          "flows[0].src_port: 70000 is not a port");
  refused(R"({"agent":"a","windows":[)" + w + R"(,"flows":[{"src_port":1,"received":1,"lost":0}]}]})",
          "missing field 'sent'");
  const std::string ok_windows = R"({"agent":"a","windows":[)" + w + "}]";
  refused(ok_windows + R"(,"paths":{}})", "report.paths: expected an array");
  refused(
      ok_windows +
          R"(,"paths":[{"protocol":"udp","target":"b","src_port":1,"dst_port":2,"traced_at_unix_ns":3,"hops":[1]}]})",
      "paths[0].hops[0]: expected a string");
  refused(
      ok_windows +
          R"(,"paths":[{"protocol":"udp","target":"b","src_port":1,"dst_port":2,"traced_at_unix_ns":3}]})",
      "paths[0].hops: expected an array");
  refused(
      ok_windows +
          R"(,"paths":[{"protocol":"udp","target":"b","src_port":1,"dst_port":2,"traced_at_unix_ns":3,"reached":1,"hops":[]}]})",
      "paths[0].reached");
  auto ok = decode_json(
      ok_windows +
      R"(,"paths":[{"protocol":"udp","target":"b","src_port":1,"dst_port":2,"traced_at_unix_ns":3,"reached":true,"hops":["10.0.0.1",""]}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->paths[0].hops, (std::vector<std::string>{"10.0.0.1", ""}));
}

// The pinglist's per-protocol flow count: sent when not 1, read back, bounded, absent = 1 (an
// older controller's pinglist).
TEST(ReportFlows, PinglistCarriesTheFlowCount) {
  Pinglist p;
  p.version = 3;
  p.window = std::chrono::seconds(10);
  p.report_interval = std::chrono::seconds(1);
  p.sync_interval = std::chrono::seconds(10);
  p.protocols.push_back({Protocol::udp,
                         std::chrono::milliseconds(100),
                         std::chrono::seconds(1),
                         {{"h2", "10.0.0.2", 7777}},
                         8});
  p.protocols.push_back({Protocol::tcp, std::chrono::milliseconds(100), std::chrono::seconds(1), {}});
  const std::string text = pinglist_json(p);
  auto d = decode_pinglist(text);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->pinglist.protocols[0].flows, 8u);
  EXPECT_EQ(d->pinglist.protocols[1].flows, 1u);
  EXPECT_EQ(text.find("\"flows\":1"), std::string::npos) << "one flow is not sent";
  std::string bad = text;
  bad.replace(bad.find("\"flows\":8"), 9, "\"flows\":65");
  auto e = decode_pinglist(bad);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("flows"), std::string::npos) << e.error().message;
}

// The JSON decode takes windows and paths out as their objects end: a window with the most flows
// and a path with the most hops fit its per-item bounds, and the per-call bounds on windows and
// paths are errors naming the bound.
TEST(ReportFlows, JsonStreamingDecodeKeepsFullWindowsAndPaths) {
  Report r = report_with_flows();
  for (uint16_t k = 0; k < kMaxFlowsPerWindow; ++k)
    r.windows[0].flows.push_back({static_cast<uint16_t>(30000 + k), 100, 99, 1, 70'000});
  PathTrace p = r.paths[0];
  p.hops.assign(kMaxHops, "fd00:1234:5678:9abc:def0:1234:5678:9abc");
  r.paths.assign(500, p);
  const std::string text = encode_json(r);
  auto d = decode_json(text);
  ASSERT_TRUE(d) << d.error().message;
  expect_same_flows(r, *d);
  auto few_paths = decode_json(text, kMaxWindowsPerReport, 499);
  ASSERT_FALSE(few_paths);
  EXPECT_NE(few_paths.error().message.find("more than 499 paths"), std::string::npos)
      << few_paths.error().message;
  auto few_windows = decode_json(text, 3);
  ASSERT_FALSE(few_windows);
  EXPECT_NE(few_windows.error().message.find("more than 3 windows"), std::string::npos)
      << few_windows.error().message;
  auto bin = decode_binary(encode_binary(r), kMaxWindowsPerReport, 499);
  ASSERT_FALSE(bin);
  EXPECT_NE(bin.error().message.find("499"), std::string::npos) << bin.error().message;
  // A path with more values than any path has is refused as it is read.
  std::string many_hops;
  for (int i = 0; i < 200; ++i) many_hops += "\"\",";
  std::string big = text;
  big.insert(big.find("\"hops\":[") + 8, many_hops);
  auto bad = decode_json(big);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("paths[0]: more than"), std::string::npos) << bad.error().message;
}
