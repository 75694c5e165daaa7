// The columnar mesh (GET /api/v1/mesh?format=columns): valid JSON whose arrays line up, hosts by
// index (with hosts only seen in pairs appended), RTTs in us to 0.1, no value as null, and about a
// tenth of the row form's size.
#include "controller/mesh_columns.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "controller/gzip.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using nlohmann::json;

namespace {
constexpr int64_t kNow = 1'800'000'000'000'000'000;

PairWindow pw(const std::string& s, const std::string& d, uint64_t lost, int64_t p50_ns) {
  PairWindow p;
  p.src = s;
  p.dst = d;
  p.window = weft::testlib::window(d, kNow - 3'500'000'000, 100, lost);
  p.window.network_rtt.p50_ns = p50_ns;
  return p;
}
}  // namespace

TEST(MeshColumns, ArraysLineUpWithHostsByIndex) {
  std::vector<PairWindow> pairs{pw("h1", "h2", 0, 41'234), pw("h2", "h1", 30, 40'050),
                                pw("h1", "gone\"x", 0, 0)};
  pairs[2].window.network_rtt = {};  // no answer at all: nulls
  pairs[2].window.received = 0;
  pairs[2].window.lost = 100;
  auto text = mesh_columns_json({"udp", "", 10'000'000'000, kNow, {"h1", "h2"}}, pairs);
  json j = json::parse(text);  // throws (fails the test) on invalid JSON
  EXPECT_EQ(j["format"], "columns");
  EXPECT_EQ(j["protocol"], "udp");
  EXPECT_TRUE(j["group"].is_null());
  EXPECT_EQ(j["window_s"], 10);
  EXPECT_EQ(j["pairs"], 3);
  EXPECT_EQ(j["hosts"], json::array({"h1", "h2", "gone\"x"}));
  const json& c = j["columns"];
  for (const char* k : {"src", "dst", "age_ms", "sent", "received", "lost", "late", "duplicate", "p50_us",
                        "p90_us", "p99_us", "max_us", "source"})
    ASSERT_EQ(c[k].size(), 3u) << k;
  EXPECT_EQ(c["src"], json::array({0, 1, 0}));
  EXPECT_EQ(c["dst"], json::array({1, 0, 2}));
  EXPECT_EQ(c["lost"], json::array({0, 30, 100}));
  EXPECT_DOUBLE_EQ(c["p50_us"][0].get<double>(), 41.2);
  EXPECT_DOUBLE_EQ(c["p50_us"][1].get<double>(), 40.1);  // rounded to 0.1 us
  EXPECT_TRUE(c["p50_us"][2].is_null());
  EXPECT_EQ(c["age_ms"][0], 2500);  // the window ended 2.5 s before now
  EXPECT_EQ(c["source"][0], "kernel");
}

TEST(MeshColumns, GroupAndEmptyMesh) {
  json j = json::parse(mesh_columns_json({"tcp", "rack1", 1'000'000'000, kNow, {}}, MeshCells{}));
  EXPECT_EQ(j["group"], "rack1");
  EXPECT_EQ(j["pairs"], 0);
  EXPECT_TRUE(j["columns"]["src"].empty());
}

TEST(Gzip, AcceptEncodingAndRoundTrip) {
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br"));
  EXPECT_TRUE(accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip("br"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.0, br"));
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "{\"p50_us\":41.2},";
  auto z = gzip_compress(text);
  ASSERT_TRUE(z);
  EXPECT_LT(z->size(), text.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>((*z)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*z)[1]), 0x8b);
  // And it inflates back to the same bytes.
  z_stream in{};
  ASSERT_EQ(inflateInit2(&in, 15 + 16), Z_OK);
  std::string back(text.size() + 16, '\0');
  in.next_in = reinterpret_cast<Bytef*>(z->data());
  in.avail_in = static_cast<uInt>(z->size());
  in.next_out = reinterpret_cast<Bytef*>(back.data());
  in.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&in, Z_FINISH), Z_STREAM_END);
  back.resize(in.total_out);
  inflateEnd(&in);
  EXPECT_EQ(back, text);
}
