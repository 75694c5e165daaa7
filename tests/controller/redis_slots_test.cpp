// Redis Cluster key routing (controller/redis_slots.hpp) against the specification's own examples
// and replies as a cluster sends them.
#include "controller/redis_slots.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <string>

using namespace weft::controller::redis;

namespace {
// A reply parsed from RESP bytes, as hiredis would hand it over from a socket.
redisReply* parse_resp(const std::string& bytes) {
  redisReader* r = redisReaderCreate();
  redisReaderFeed(r, bytes.data(), bytes.size());
  void* out = nullptr;
  EXPECT_EQ(redisReaderGetReply(r, &out), REDIS_OK);
  redisReaderFree(r);
  return static_cast<redisReply*>(out);
}
std::string bulk(const std::string& s) { return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n"; }
std::string node(const std::string& host, int port, const std::string& id) {
  return "*3\r\n" + bulk(host) + ":" + std::to_string(port) + "\r\n" + bulk(id);
}
}  // namespace

TEST(RedisSlots, Crc16IsTheXmodemVariant) {
  // The cluster specification's test vector: CRC16 of "123456789" is 0x31C3.
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(crc16(""), 0);
}

TEST(RedisSlots, KeySlotsMatchTheServer) {
  // Values from CLUSTER KEYSLOT on redis-server 7.0.
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot("weft:sources"), key_slot("weft:sources"));
  // A hash tag: only the part inside the first {...} counts.
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("weft:{h1}:hist:udp:h2"), key_slot("weft:{h1}:latest:udp"));
  EXPECT_EQ(key_slot("weft:{h1}:hist:udp:h2"), key_slot("h1"));
  // "{}" is not a tag, and only the first '{' and the next '}' count.
  EXPECT_EQ(key_slot("foo{}{bar}"), crc16("foo{}{bar}") % kSlots);
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
  EXPECT_EQ(key_slot("unclosed{tag"), crc16("unclosed{tag") % kSlots);
}

TEST(RedisSlots, ParsesClusterSlots) {
  std::string resp =
      "*2\r\n"
      "*4\r\n:0\r\n:5460\r\n" +
      node("127.0.0.1", 7000, "a") + node("127.0.0.1", 7003, "d") + "*3\r\n:5461\r\n:16383\r\n" +
      node("::1", 7001, "b");
  redisReply* r = parse_resp(resp);
  ASSERT_NE(r, nullptr);
  auto ranges = parse_cluster_slots(*r);
  freeReplyObject(r);
  ASSERT_TRUE(ranges) << ranges.error().message;
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_EQ((*ranges)[0].first, 0);
  EXPECT_EQ((*ranges)[0].last, 5460);
  EXPECT_EQ((*ranges)[0].master, "127.0.0.1:7000");
  ASSERT_EQ((*ranges)[0].replicas.size(), 1u);
  EXPECT_EQ((*ranges)[0].replicas[0], "127.0.0.1:7003");
  EXPECT_EQ((*ranges)[1].master, "[::1]:7001");
  EXPECT_TRUE((*ranges)[1].replicas.empty());
}

TEST(RedisSlots, RejectsBadClusterSlots) {
  for (std::string resp :
       {std::string("-ERR This instance has cluster support disabled\r\n"), std::string(":1\r\n"),
        "*1\r\n*3\r\n:0\r\n:16384\r\n" + node("127.0.0.1", 7000, "a"),
        "*1\r\n*3\r\n:10\r\n:5\r\n" + node("127.0.0.1", 7000, "a"), std::string("*1\r\n*2\r\n:0\r\n:5\r\n"),
        "*1\r\n*3\r\n:0\r\n:5\r\n" + node("", 7000, "a")}) {
    redisReply* r = parse_resp(resp);
    ASSERT_NE(r, nullptr) << resp;
    EXPECT_FALSE(parse_cluster_slots(*r)) << resp;
    freeReplyObject(r);
  }
}

TEST(RedisSlots, ParsesRedirects) {
  auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->ask);
  EXPECT_EQ(m->slot, 3999);
  EXPECT_EQ(m->node, "127.0.0.1:6381");
  auto a = parse_redirect("ASK 12 [::1]:7002");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->ask);
  EXPECT_EQ(a->slot, 12);
  EXPECT_EQ(a->node, "[::1]:7002");
  for (const char* bad : {"ERR unknown", "MOVED", "MOVED x 1.2.3.4:5", "MOVED 16384 1.2.3.4:5", "MOVED 1 ",
                          "MOVED 1 nohostport", "ASK -1 1.2.3.4:5"})
    EXPECT_FALSE(parse_redirect(bad)) << bad;
}
