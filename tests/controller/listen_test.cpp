// The controller's listen addresses go through net::split_host_port like every other HOST:PORT
// (issue 16): a bad one fails start() with a message naming it; port 0 takes any free port.
#include <gtest/gtest.h>

#include "controller/controller.hpp"
#include "lib/test_util.hpp"

using namespace weft::controller;
using namespace weft::testlib;

namespace {

Config config(const TempDir& dir, const std::string& listen) {
  auto cfg = parse_config(fmt::format("store: sqlite:{}\ntokens: [t0k-listen]\nshared_tokens: true\n"
                                      "groups:\n  - {{name: all, protocols: [udp], members: ['*']}}\n",
                                      dir.file("listen.db")),
                          "<test>");
  EXPECT_TRUE(cfg) << cfg.error().message;
  cfg->listen = {listen};
  return *cfg;
}

}  // namespace

TEST(Listen, RefusesBadAddresses) {
  for (std::string bad :
       {"127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:70000", "[::1", "[::1]x", ":80", "::1"}) {
    TempDir dir;
    Controller c;
    auto st = c.start(config(dir, bad));
    ASSERT_FALSE(st) << bad;
    EXPECT_NE(st.error().message.find("listen '" + bad + "'"), std::string::npos) << st.error().message;
    c.stop();
  }
}

TEST(Listen, PortZeroTakesAFreePort) {
  TempDir dir;
  Controller c;
  auto st = c.start(config(dir, "127.0.0.1:0"));
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_EQ(c.bound_ports().size(), 1u);
  EXPECT_NE(c.bound_ports()[0], 0);
  c.stop();
}
