// The ARP cache: entries past their lifetime are used while they are confirmed, and requests
// nobody answers (a flood's spoofed sources) never push a neighbour that answers out of the table.
#include "stack/arp_cache.hpp"

#include <gtest/gtest.h>

using namespace weft::stack;
using weft::stack::wire::Ipv4Addr;
using weft::stack::wire::MacAddr;

namespace {
constexpr int64_t kS = 1'000'000'000;
const Ipv4Addr kPeer = Ipv4Addr::of(10, 7, 0, 2);
const MacAddr kPeerMac{{2, 0, 0, 0, 0, 0xb}};
}  // namespace

// The differential runner's SYN flood from 100 addresses nobody answers for made weft ask for
// each of them; the 64-entry table evicted the oldest entry, the prober's, and the next real
// client's SYN-ACK waited for ARP past the client's patience.
TEST(ArpCache, RequestsNobodyAnswersDoNotPushOutANeighbourThatAnswered) {
  ArpCache c;
  c.insert(kPeer, kPeerMac, 1 * kS);
  for (int i = 0; i < 300; ++i)
    EXPECT_TRUE(c.may_request(Ipv4Addr::of(10, 7, 1, static_cast<uint8_t>(i % 200)), 2 * kS + i));
  MacAddr m;
  EXPECT_EQ(c.lookup(kPeer, 3 * kS, m), ArpLookup::fresh);
  EXPECT_EQ(m, kPeerMac);
}

TEST(ArpCache, AFullTableOfNeighboursEvictsTheOldest) {
  ArpCache c;
  for (size_t i = 0; i < ArpCache::kEntries; ++i)
    c.insert(Ipv4Addr::of(10, 7, 2, static_cast<uint8_t>(i)), kPeerMac, kS + static_cast<int64_t>(i));
  c.insert(kPeer, kPeerMac, 2 * kS);
  MacAddr m;
  EXPECT_EQ(c.lookup(kPeer, 2 * kS, m), ArpLookup::fresh);
  EXPECT_EQ(c.lookup(Ipv4Addr::of(10, 7, 2, 0), 2 * kS, m), ArpLookup::miss);  // the oldest
  EXPECT_EQ(c.lookup(Ipv4Addr::of(10, 7, 2, 1), 2 * kS, m), ArpLookup::fresh);
}

// Linux keeps using a STALE neighbour while unicast probes confirm it; an entry that simply
// expired made every long connection wait for a broadcast round trip once a minute.
TEST(ArpCache, PastItsLifetimeAnEntryIsUsedWhileConfirmingThenForgotten) {
  ArpCache c(60 * kS);
  c.insert(kPeer, kPeerMac, 0);
  MacAddr m;
  EXPECT_EQ(c.lookup(kPeer, 60 * kS - 1, m), ArpLookup::fresh);
  m = MacAddr{};
  EXPECT_EQ(c.lookup(kPeer, 60 * kS, m), ArpLookup::stale);
  EXPECT_EQ(m, kPeerMac);
  EXPECT_TRUE(c.may_request(kPeer, 60 * kS));       // the first confirmation
  EXPECT_FALSE(c.may_request(kPeer, 60 * kS + 1));  // at most one a second
  EXPECT_EQ(c.lookup(kPeer, 60 * kS + ArpCache::kConfirmNs - 1, m), ArpLookup::stale);
  EXPECT_EQ(c.lookup(kPeer, 60 * kS + ArpCache::kConfirmNs, m), ArpLookup::miss);  // unanswered
  c.insert(kPeer, kPeerMac, 70 * kS);  // the answer, late: fresh again
  EXPECT_EQ(c.lookup(kPeer, 70 * kS, m), ArpLookup::fresh);
}

TEST(ArpCache, AnEntryPastConfirmingGivesWayToARequest) {
  ArpCache c(60 * kS);
  c.insert(kPeer, kPeerMac, 0);
  for (size_t i = 0; i + 1 < ArpCache::kEntries; ++i)
    c.insert(Ipv4Addr::of(10, 7, 2, static_cast<uint8_t>(i)), kPeerMac, 62 * kS);
  EXPECT_TRUE(c.may_request(Ipv4Addr::of(10, 7, 3, 1), 64 * kS));  // kPeer is dead by now
  MacAddr m;
  EXPECT_EQ(c.lookup(kPeer, 64 * kS, m), ArpLookup::miss);
  EXPECT_FALSE(c.has(kPeer));
  for (size_t i = 0; i + 1 < ArpCache::kEntries; ++i)
    EXPECT_EQ(c.lookup(Ipv4Addr::of(10, 7, 2, static_cast<uint8_t>(i)), 64 * kS, m), ArpLookup::fresh);
}
