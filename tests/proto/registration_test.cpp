// POST /api/v1/register bodies: the agent's encoding decodes to the same registration (with its
// RDMA addresses), and malformed RDMA addresses are refused with a message naming the field.
#include "proto/registration.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace weft;
using nlohmann::json;
using weft::proto::Protocol;

namespace {

proto::RdmaEndpoint endpoint(const char* gid, uint32_t qpn, const char* device = "rxe0") {
  proto::RdmaEndpoint e;
  e.device = device;
  e.port = 1;
  inet_pton(AF_INET6, gid, e.gid.data());
  e.gid_index = 1;
  e.qpn = qpn;
  e.qkey = 0x11111111;
  return e;
}

proto::Registration sample() {
  proto::Registration r{"h1",    {"10.9.0.1"}, {Protocol::udp, Protocol::tcp, Protocol::rdma},
                        "1.2.3", 7777,         7778};
  r.rdma = {endpoint("::ffff:10.9.0.1", 17), endpoint("::ffff:10.9.1.1", 0xFFFFFF, "mlx5_1")};
  r.rdma[1].port = 2;
  r.rdma[1].gid_index = 3;
  r.rdma[1].qkey = 0xFFFFFFFF;
  return r;
}

// The sample's JSON with one field of rdma[0] changed (or removed, when value is discarded).
std::string with_rdma0(const std::string& key, const json& value) {
  json j = json::parse(proto::registration_json(sample()));
  if (value.is_discarded())
    j["rdma"][0].erase(key);
  else
    j["rdma"][0][key] = value;
  return j.dump();
}

std::string error_of(const std::string& body) {
  auto r = proto::parse_registration(body);
  EXPECT_FALSE(r) << body;
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(Registration, RoundTripWithRdmaAddresses) {
  auto in = sample();
  auto out = proto::parse_registration(proto::registration_json(in));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->name, "h1");
  EXPECT_EQ(out->addresses, in.addresses);
  EXPECT_EQ(out->protocols, in.protocols);
  EXPECT_EQ(out->version, "1.2.3");
  EXPECT_EQ(out->udp_port, 7777);
  EXPECT_EQ(out->tcp_port, 7778);
  ASSERT_EQ(out->rdma.size(), 2u);
  EXPECT_EQ(out->rdma, in.rdma);
  EXPECT_EQ(out->rdma[0].gid_text(), "::ffff:10.9.0.1");
  EXPECT_EQ(out->rdma[1].qpn, 0xFFFFFFu);
  EXPECT_EQ(out->rdma[1].qkey, 0xFFFFFFFFu);
}

TEST(Registration, InfinibandEndpointByLid) {
  auto in = sample();
  in.rdma.resize(1);
  in.rdma[0].ethernet = false;
  in.rdma[0].lid = 17;
  in.rdma[0].gid = {};  // a GID is not needed to reach it by LID
  auto out = proto::parse_registration(proto::registration_json(in));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_FALSE(out->rdma[0].ethernet);
  EXPECT_EQ(out->rdma[0].lid, 17);
}

TEST(Registration, WithoutRdmaIsTheOldFormat) {
  proto::Registration in{"h2", {"10.0.0.2"}, {Protocol::udp}, "", 7777, 0};
  auto text = proto::registration_json(in);
  EXPECT_FALSE(json::parse(text).contains("rdma"));
  auto out = proto::parse_registration(text);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(out->rdma.empty());
  // The body an agent without RDMA sent before this field existed.
  auto old = proto::parse_registration(R"({"name":"h3","addresses":["10.0.0.3"],"protocols":["udp","tcp"]})");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_TRUE(old->rdma.empty());
}

TEST(Registration, MalformedRdmaAddressesAreRefusedByField) {
  EXPECT_EQ(error_of(with_rdma0("qpn", 0)), "rdma[0]: qpn: 0 is out of range [2, 16777215]");
  EXPECT_EQ(error_of(with_rdma0("qpn", 0x1000000)), "rdma[0]: qpn: 16777216 is out of range [2, 16777215]");
  EXPECT_EQ(error_of(with_rdma0("qpn", "17")), "rdma[0]: qpn: expected an integer in [2, 16777215]");
  EXPECT_EQ(error_of(with_rdma0("qpn", json::value_t::discarded)), "rdma[0]: qpn: missing");
  EXPECT_EQ(error_of(with_rdma0("qkey", -1)), "rdma[0]: qkey: expected an integer in [0, 4294967295]");
  EXPECT_EQ(error_of(with_rdma0("qkey", 1.5)), "rdma[0]: qkey: expected an integer in [0, 4294967295]");
  EXPECT_EQ(error_of(with_rdma0("port", 0)), "rdma[0]: port: 0 is out of range [1, 255]");
  EXPECT_EQ(error_of(with_rdma0("lid", 70000)), "rdma[0]: lid: 70000 is out of range [0, 65535]");
  EXPECT_EQ(error_of(with_rdma0("gid_index", json::value_t::discarded)), "rdma[0]: gid_index: missing");
  EXPECT_EQ(error_of(with_rdma0("gid", "10.9.0.1")),
            "rdma[0]: gid: required, an IPv6 address text (e.g. ::ffff:10.0.0.1)");
  EXPECT_EQ(error_of(with_rdma0("gid", "::")), "rdma[0]: gid: a RoCE endpoint needs a non-zero GID");
  EXPECT_EQ(error_of(with_rdma0("device", "rxe 0")),
            "rdma[0]: device: required, a device name of 1 to 64 letters, digits, '_', '-' or '.'");
  EXPECT_EQ(error_of(with_rdma0("device", std::string(65, 'x'))),
            "rdma[0]: device: required, a device name of 1 to 64 letters, digits, '_', '-' or '.'");
  EXPECT_EQ(error_of(with_rdma0("link_layer", "roce")),
            "rdma[0]: link_layer: 'ethernet' (RoCE) or 'infiniband'");
  EXPECT_EQ(error_of(with_rdma0("link_layer", "infiniband")),
            "rdma[0]: lid: an InfiniBand endpoint needs a LID (1..65535)");
  EXPECT_EQ(error_of(with_rdma0("qp", 17)),
            "rdma[0]: unknown key 'qp' (allowed: device, port, link_layer, gid, gid_index, lid, qpn, qkey)");

  json j = json::parse(proto::registration_json(sample()));
  j["rdma"][1] = "rxe1";
  EXPECT_EQ(error_of(j.dump()), "rdma[1]: expected an object {device, port, gid, gid_index, lid, qpn, qkey}");
  j["rdma"] = json::object();
  EXPECT_EQ(error_of(j.dump()),
            "rdma: a list of at most 16 RDMA addresses {device, port, gid, gid_index, lid, qpn, qkey}");
  j["rdma"] = json::array();
  for (int i = 0; i < 17; ++i)
    j["rdma"].push_back(proto::rdma_endpoint_json(endpoint("::ffff:10.9.0.1", 17)));
  EXPECT_EQ(error_of(j.dump()),
            "rdma: a list of at most 16 RDMA addresses {device, port, gid, gid_index, lid, qpn, qkey}");
  j = json::parse(proto::registration_json(sample()));
  j["protocols"] = {"udp"};
  EXPECT_EQ(error_of(j.dump()), "rdma: RDMA addresses given, but 'rdma' is not among the protocols");
}

TEST(Registration, OtherFieldsKeepTheirMessages) {
  EXPECT_EQ(error_of("[]"), "body must be a JSON object");
  EXPECT_EQ(error_of(R"({"addresses":["10.0.0.1"],"protocols":[]})"), "name: required, a host name");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":[],"protocols":[]})"),
            "addresses: required, a list of 1 to 16 addresses");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"],"protocols":["icmp"]})"),
            "protocols: unknown protocol 'icmp' (expected udp, tcp or rdma)");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"],"protocols":[],"udp_port":70000})"),
            "udp_port: 0..65535");
}

// Issue 14: "addresses":["not-an-ip"] was accepted, and every peer then probed a name it could
// not reach and reported loss.
TEST(Registration, AddressesMustBeIpLiterals) {
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["not-an-ip"],"protocols":["udp"]})"),
            "addresses[0]: \"not-an-ip\" is not an IPv4 or IPv6 address");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1","10.0.0.256"],"protocols":["udp"]})"),
            "addresses[1]: \"10.0.0.256\" is not an IPv4 or IPv6 address");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":[7],"protocols":["udp"]})"),
            "addresses[0]: 7 is not an IPv4 or IPv6 address");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1:7777"],"protocols":["udp"]})"),
            "addresses[0]: \"10.0.0.1:7777\" is not an IPv4 or IPv6 address");
  for (const char* ok : {"10.0.0.1", "fd00::2", "::ffff:10.1.2.3"}) {
    auto r = weft::proto::parse_registration(
        fmt::format(R"({{"name":"h","addresses":["{}"],"protocols":["udp"]}})", ok));
    ASSERT_TRUE(r) << ok << ": " << r.error().message;
    EXPECT_EQ(r->addresses.front(), ok);
  }
}

TEST(Registration, EveryOtherMalformedClass) {
  EXPECT_EQ(error_of("{"), "body must be a JSON object");
  EXPECT_EQ(error_of(R"({"name":7,"addresses":["10.0.0.1"],"protocols":[]})"), "name: required, a host name");
  EXPECT_EQ(error_of(R"({"name":"h 1","addresses":["10.0.0.1"],"protocols":[]})"),
            "name: required, a host name");
  EXPECT_EQ(error_of(R"({"name":"h","version":3,"addresses":["10.0.0.1"],"protocols":[]})"),
            "version: a string of at most 64 bytes");
  EXPECT_EQ(error_of(R"({"name":"h","version":")" + std::string(65, 'v') +
                     R"(","addresses":["10.0.0.1"],"protocols":[]})"),
            "version: a string of at most 64 bytes");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":"10.0.0.1","protocols":[]})"),
            "addresses: required, a list of 1 to 16 addresses");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"]})"), "protocols: required, a list");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"],"protocols":["udp","tcp","rdma","udp"]})"),
            "protocols: required, a list");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"],"protocols":[1]})"),
            "protocols: each must be a string");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"],"protocols":[],"tcp_port":"7778"})"),
            "tcp_port: 0..65535");
  EXPECT_EQ(error_of(R"({"name":"h","addresses":["10.0.0.1"],"protocols":["rdma"],"rdma":{}})"),
            "rdma: a list of at most 16 RDMA addresses {device, port, gid, gid_index, lid, qpn, qkey}");
}
