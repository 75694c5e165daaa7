// RDMA windows as an agent's engine reports them (GID/QPN target address, software stamps, a
// responder delay, weird samples) go through ingest into the mesh's latest and the pair history,
// kept apart from the same pair's UDP windows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "controller/ingest.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;
using weft::proto::Protocol;

namespace {

weft::proto::WindowStats rdma_window(const std::string& target, int64_t start_ns) {
  auto w = window(target, start_ns, 50, 0, Protocol::rdma);
  w.target_address = "::ffff:10.9.1.2 qpn 18";
  w.timestamp_source = weft::proto::TimestampSource::user;
  w.weird = 1;  // counted in received, not sampled
  w.network_rtt.count = 49;
  w.responder_delay = {49, 20'000, 31'000, 30'000, 40'000, 45'000, 50'000, 55'000, 60'000};
  return w;
}

}  // namespace

TEST(RdmaWindows, ReachLatestAndHistory) {
  TempDir dir;
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store) << store.error().message;
  auto cfg = parse_config("groups:\n  - {name: all, protocols: [udp, rdma], members: ['*']}\n", "<test>");
  ASSERT_TRUE(cfg) << cfg.error().message;
  Mesh mesh(std::make_shared<const Config>(*cfg));
  Ingest ingest(mesh, **store);
  for (const char* n : {"h1", "h2"})
    mesh.register_agent({n, {"10.9.1.1"}, {Protocol::udp, Protocol::rdma}, "", 7777, 0}, now_ns());

  const int64_t t = now_ns() - 20'000'000'000;
  weft::proto::Report rep;
  rep.agent = "h1";
  rep.windows = {rdma_window("h2", t), rdma_window("h2", t + 1'000'000'000), window("h2", t)};
  auto r =
      ingest.handle(std::string(weft::proto::kBinaryContentType), weft::proto::encode_binary(rep), now_ns());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["accepted"], 3);

  auto latest = mesh.latest_pair(Protocol::rdma, "h1", "h2");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->window.start_unix_ns, t + 1'000'000'000);
  EXPECT_EQ(latest->window.target_address, "::ffff:10.9.1.2 qpn 18");
  EXPECT_EQ(latest->window.weird, 1u);
  EXPECT_EQ(latest->window.responder_delay.p50_ns, 30'000);
  EXPECT_EQ(mesh.latest(Protocol::rdma).size(), 1u);

  auto h = (*store)->history(Protocol::rdma, "h1", "h2", 0, INT64_MAX, 100);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[0].protocol, Protocol::rdma);
  EXPECT_EQ((*h)[0].timestamp_source, weft::proto::TimestampSource::user);
  EXPECT_EQ((*h)[1].start_unix_ns, t + 1'000'000'000);
  auto udp = (*store)->history(Protocol::udp, "h1", "h2", 0, INT64_MAX, 100);
  ASSERT_TRUE(udp);
  EXPECT_EQ(udp->size(), 1u);
}
