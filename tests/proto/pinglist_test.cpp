// The pinglist codec: what the controller encodes decodes to the same pinglist, and every kind of
// malformed answer is refused whole with a message naming the field (the agent then keeps the
// pinglist it has; before, a malformed one could be half applied before an exception stopped it).
#include "proto/pinglist.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace weft::proto;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

RdmaEndpoint endpoint(uint32_t qpn) {
  RdmaEndpoint e;
  e.device = "rxe0";
  inet_pton(AF_INET6, "::ffff:10.9.0.2", e.gid.data());
  e.gid_index = 1;
  e.qpn = qpn;
  return e;
}

Pinglist sample() {
  Pinglist p;
  p.version = 77;
  p.window = 10s;
  p.report_interval = 1s;
  p.sync_interval = 10s;
  p.protocols.push_back({Protocol::udp, 100ms, 1s, {{"h2", "10.0.0.2", 7777}, {"h3", "::1", 7777}}});
  p.protocols.push_back({Protocol::tcp, 250us, 500ms, {}});
  p.protocols.push_back(
      {Protocol::rdma,
       100ms,
       1s,
       {{"h2", "10.0.0.2", 0, 0, endpoint(17)}, {"h2:rxe1", "10.0.0.2", 0, 1, endpoint(18)}}});
  return p;
}

json sample_json() { return json::parse(pinglist_json(sample())); }

std::string error_of(const json& j) {
  auto r = decode_pinglist(j.dump());
  EXPECT_FALSE(r) << j.dump();
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(Pinglist, RoundTrip) {
  auto r = decode_pinglist(pinglist_json(sample()));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->unchanged);
  const Pinglist& p = r->pinglist;
  const Pinglist want = sample();
  EXPECT_EQ(p.version, 77u);
  EXPECT_EQ(p.window, want.window);
  EXPECT_EQ(p.report_interval, want.report_interval);
  EXPECT_EQ(p.sync_interval, want.sync_interval);
  ASSERT_EQ(p.protocols.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.protocols[i].protocol, want.protocols[i].protocol);
    EXPECT_EQ(p.protocols[i].interval, want.protocols[i].interval);
    EXPECT_EQ(p.protocols[i].timeout, want.protocols[i].timeout);
    EXPECT_EQ(p.protocols[i].targets, want.protocols[i].targets);
  }
  EXPECT_EQ(p.target_count(), 4u);
  // The content (what the version hashes) leaves the version out, and only the version.
  json content = json::parse(pinglist_content_json(want));
  EXPECT_FALSE(content.contains("version"));
  content["version"] = 77;
  EXPECT_EQ(content, sample_json());
}

TEST(Pinglist, Unchanged) {
  auto r = decode_pinglist(pinglist_unchanged_json(12));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->unchanged);
  EXPECT_EQ(r->pinglist.version, 12u);
  EXPECT_EQ(error_of(json{{"version", 12}, {"unchanged", 1}}), "pinglist: unchanged: expected true or false");
  // Keys a newer controller may add are ignored.
  auto extra = decode_pinglist(json{{"version", 12}, {"unchanged", true}, {"hint", 1}}.dump());
  ASSERT_TRUE(extra) << extra.error().message;
  EXPECT_TRUE(extra->unchanged);
  EXPECT_EQ(error_of(json{{"unchanged", true}}), "pinglist: version: missing");
}

TEST(Pinglist, MalformedDocuments) {
  EXPECT_EQ(decode_pinglist("{").error().message, "pinglist: not valid JSON");
  EXPECT_EQ(decode_pinglist("").error().message, "pinglist: not valid JSON");
  EXPECT_EQ(error_of(json::array()), "pinglist: expected a JSON object");
  auto j = sample_json();
  j.erase("version");
  EXPECT_EQ(error_of(j), "pinglist: version: missing");
  j = sample_json();
  j["version"] = -1;
  EXPECT_EQ(error_of(j), "pinglist: version: expected an integer in [0, 18446744073709551615]");
  j = sample_json();
  j["extra"] = 1;  // a newer controller's key: ignored, the rest still read
  {
    auto r = decode_pinglist(j.dump());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->pinglist.protocols.size(), sample_json()["protocols"].size());
  }
  // Each duration in either form (wire_duration_test.cpp has the rules): here, that the pinglist
  // reads all three and names the one that is wrong.
  for (const char* name : {"window", "report_interval", "sync_interval"}) {
    const std::string ns = std::string(name) + "_ns", ms = std::string(name) + "_ms";
    j = sample_json();
    j.erase(ns);
    j.erase(ms);
    EXPECT_EQ(error_of(j), fmt::format("pinglist: {}: missing", ns));
    j[ns] = 999'999;  // under a millisecond
    EXPECT_EQ(error_of(j),
              fmt::format("pinglist: {}: 999999 is out of range [1000000, 9223372036854775807]", ns));
    j[ns] = "10s";
    EXPECT_EQ(error_of(j),
              fmt::format("pinglist: {}: expected an integer in [1000000, 9223372036854775807]", ns));
    j.erase(ns);
    j[ms] = 9223372036855;  // an older controller's form that would overflow int64 nanoseconds
    EXPECT_EQ(error_of(j), fmt::format("pinglist: {}: 9223372036855 is out of range [1, 9223372036854]", ms));
  }
  j = sample_json();
  j["protocols"] = json::object();
  EXPECT_EQ(error_of(j), "pinglist: protocols: expected a list");
  j.erase("protocols");
  EXPECT_EQ(error_of(j), "pinglist: protocols: expected a list");
}

TEST(Pinglist, MalformedProtocols) {
  auto with = [](const char* key, const json& v) {
    auto j = sample_json();
    if (v.is_discarded())
      j["protocols"][0].erase(key);
    else
      j["protocols"][0][key] = v;
    return error_of(j);
  };
  auto j = sample_json();
  j["protocols"][0] = 7;
  EXPECT_EQ(error_of(j),
            "pinglist: protocols[0]: expected an object {protocol, interval_ns, timeout_ns, targets}");
  {  // a protocol this agent does not know is skipped and named; the others stay
    auto k = sample_json();
    k["protocols"][0]["protocol"] = "icmp";
    k["protocols"][0]["future_field"] = true;
    auto r = decode_pinglist(k.dump());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->skipped_protocols, std::vector<std::string>{"icmp"});
    EXPECT_EQ(r->pinglist.protocols.size(), sample_json()["protocols"].size() - 1);
  }
  EXPECT_EQ(with("protocol", 1), "pinglist: protocols[0]: protocol: expected a string");
  EXPECT_EQ(with("protocol", json(json::value_t::discarded)), "pinglist: protocols[0]: protocol: missing");
  EXPECT_EQ(with("interval_ns", 0),
            "pinglist: protocols[0]: interval_ns: 0 is out of range [1000, 9223372036854775807]");
  EXPECT_EQ(with("interval_ns", 1.5),
            "pinglist: protocols[0]: interval_ns: expected an integer in [1000, 9223372036854775807]");
  EXPECT_EQ(with("interval_us", 99'999),  // the legacy form disagrees with the new one
            "pinglist: protocols[0]: interval_us: 99999 disagrees with interval_ns (100000000)");
  {
    auto k = sample_json();
    k["protocols"][0].erase("timeout_ns");
    k["protocols"][0].erase("timeout_us");
    EXPECT_EQ(error_of(k), "pinglist: protocols[0]: timeout_ns: missing");
  }
  EXPECT_EQ(with("targets", json::object()), "pinglist: protocols[0]: targets: expected a list");
  j = sample_json();
  j["protocols"][0]["tcp_port"] = 1;  // unknown keys are ignored
  EXPECT_TRUE(decode_pinglist(j.dump()));
  j = sample_json();
  j["protocols"][1]["protocol"] = "udp";
  EXPECT_EQ(error_of(j), "pinglist: protocols[1]: udp is listed twice");
}

TEST(Pinglist, MalformedTargets) {
  // protocols[0] is udp, protocols[2] rdma.
  auto with = [](size_t proto, const char* key, const json& v) {
    auto j = sample_json();
    if (v.is_discarded())
      j["protocols"][proto]["targets"][0].erase(key);
    else
      j["protocols"][proto]["targets"][0][key] = v;
    return error_of(j);
  };
  const json absent(json::value_t::discarded);
  const std::string udp0 = "pinglist: protocols[0]: targets[0]: ";
  const std::string rdma0 = "pinglist: protocols[2]: targets[0]: ";
  auto j = sample_json();
  j["protocols"][0]["targets"][1] = "h3";
  EXPECT_EQ(error_of(j), "pinglist: protocols[0]: targets[1]: expected an object {name, host, port}");
  EXPECT_EQ(with(0, "name", absent), udp0 + "name: missing");
  EXPECT_EQ(with(0, "name", ""), udp0 + "name: expected 1 to 128 bytes");
  EXPECT_EQ(with(0, "name", std::string(129, 'h')), udp0 + "name: expected 1 to 128 bytes");
  EXPECT_EQ(with(0, "name", "h 2"), udp0 + "name: 'h 2' is not a host name");
  EXPECT_EQ(with(0, "name", 2), udp0 + "name: expected a string");
  EXPECT_EQ(with(0, "host", "db1.example"), udp0 + "host: 'db1.example' is not an IPv4 or IPv6 address");
  EXPECT_EQ(with(0, "host", absent), udp0 + "host: missing");
  EXPECT_EQ(with(0, "port", 0), udp0 + "port: 0 is out of range [1, 65535]");
  EXPECT_EQ(with(0, "port", 65536), udp0 + "port: 65536 is out of range [1, 65535]");
  EXPECT_EQ(with(0, "port", -7), udp0 + "port: expected an integer in [1, 65535]");
  EXPECT_EQ(with(0, "rail", 0), udp0 + "rail, rdma: only in rdma targets");
  j = sample_json();
  j["protocols"][0]["targets"][0]["weight"] = 2;  // unknown keys are ignored
  EXPECT_TRUE(decode_pinglist(j.dump()));
  EXPECT_EQ(with(2, "rdma", absent), rdma0 + "rdma: missing (the peer's RDMA address)");
  EXPECT_EQ(with(2, "rail", 16), rdma0 + "rail: 16 is out of range [0, 15]");
  EXPECT_EQ(with(2, "rail", "0"), rdma0 + "rail: expected an integer in [0, 15]");
  EXPECT_EQ(with(2, "port", 70000), rdma0 + "port: 70000 is out of range [0, 65535]");
  j = sample_json();
  j["protocols"][2]["targets"][1]["rdma"]["qpn"] = 1;
  EXPECT_EQ(error_of(j), "pinglist: protocols[2]: targets[1]: rdma: qpn: 1 is out of range [2, 16777215]");
  j = sample_json();
  j["protocols"][2]["targets"][0]["rdma"]["gid"] = "not-a-gid";
  EXPECT_EQ(error_of(j), rdma0 + "rdma: gid: required, an IPv6 address text (e.g. ::ffff:10.0.0.1)");
  // A rail entry is accepted without "rail" (rail 0).
  j = sample_json();
  j["protocols"][2]["targets"][0].erase("rail");
  auto ok = decode_pinglist(j.dump());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->pinglist.protocols[2].targets[0].rail, 0u);
}
