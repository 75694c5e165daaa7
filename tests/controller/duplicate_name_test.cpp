// Two hosts with the same agent name (issue 14, defect 5): the default name is the host name, which
// network namespaces and cloned images share, and the controller used to merge both into one agent
// silently. Now the second is refused while the first is alive; the same address is a restart.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "controller/controller.hpp"
#include "controller/mesh.hpp"
#include "lib/test_util.hpp"
#include "proto/registration.hpp"
#include "test_controller.hpp"

using namespace weft::controller;
using namespace weft::controller::testing;
using namespace weft::testlib;

namespace {

weft::proto::Registration reg(const std::string& name, const std::string& address) {
  return weft::proto::Registration{name, {address}, {weft::proto::Protocol::udp}, "v-test", 7777, 0};
}

std::shared_ptr<const Config> config_down_after_10s() {
  auto c = parse_config("agent_down_after: 10s\ngroups:\n  - {name: all, protocols: [udp], members: ['*']}\n",
                        "<test>");
  EXPECT_TRUE(c) << c.error().message;
  return std::make_shared<const Config>(*c);
}

constexpr int64_t kSecond = 1'000'000'000;

}  // namespace

TEST(DuplicateName, SecondHostIsRefusedWhileTheFirstIsAlive) {
  Mesh mesh(config_down_after_10s());
  const int64_t t0 = 1'800'000'000 * kSecond;
  ASSERT_TRUE(mesh.check_name_free(reg("web1", "10.0.0.1"), t0));
  mesh.register_agent(reg("web1", "10.0.0.1"), t0);

  auto clash = mesh.check_name_free(reg("web1", "10.0.0.2"), t0 + 3 * kSecond);
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().message,
            "agent name 'web1' is taken by the agent at 10.0.0.1 (last seen 3 s ago); give this agent (at "
            "10.0.0.2) its own name with --name, or stop the other one");
  // The same host registering again (an agent restart) is the same agent.
  EXPECT_TRUE(mesh.check_name_free(reg("web1", "10.0.0.1"), t0 + 3 * kSecond));
  // Other names are not affected.
  EXPECT_TRUE(mesh.check_name_free(reg("web2", "10.0.0.2"), t0 + 3 * kSecond));
  // Once the first has been silent past agent_down_after, the name may move (a host that changed
  // its address, or a replacement machine).
  EXPECT_TRUE(mesh.check_name_free(reg("web1", "10.0.0.2"), t0 + 11 * kSecond));
  EXPECT_EQ(mesh.sweep(t0 + 11 * kSecond), std::vector<std::string>{"web1"});
  EXPECT_TRUE(mesh.check_name_free(reg("web1", "10.0.0.2"), t0 + 11 * kSecond));
}

// The same through a real controller: the second registration gets 409 with the reason, and the
// agent list still holds the first host's address.
TEST(DuplicateName, ControllerAnswers409AndKeepsTheFirst) {
  TempDir dir;
  auto c = start_test_controller("sqlite:" + dir.file("dup.db"), "t0k-dup-name");
  ASSERT_TRUE(c);
  httplib::Client cli("127.0.0.1", c->bound_ports().at(0));
  httplib::Headers auth{{"Authorization", "Bearer t0k-dup-name"}};
  auto first = cli.Post("/api/v1/register", auth, weft::proto::registration_json(reg("db", "10.0.0.1")),
                        "application/json");
  ASSERT_TRUE(first && first->status == 200) << (first ? first->body : "no answer");
  auto second = cli.Post("/api/v1/register", auth, weft::proto::registration_json(reg("db", "10.0.0.2")),
                         "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 409);
  EXPECT_NE(second->body.find("taken by the agent at 10.0.0.1"), std::string::npos) << second->body;
  auto agents = cli.Get("/api/v1/agents", auth);
  ASSERT_TRUE(agents && agents->status == 200);
  auto j = nlohmann::json::parse(agents->body);
  ASSERT_EQ(j["agents"].size(), 1u);
  EXPECT_EQ(j["agents"][0]["addresses"], nlohmann::json::array({"10.0.0.1"}));
  c->stop();
}
