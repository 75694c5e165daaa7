// IPv4 reassembly: any arrival order gives the original bytes; duplicates are ignored; partial
// overlaps, conflicting ends and timeouts drop the datagram; memory is bounded in all and per
// source, and bogus first fragments never push a real datagram out.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "stack/wire/ipv4_reassembly.hpp"

using namespace weft::stack::wire;

namespace {
struct Frag {
  uint16_t offset;
  std::vector<uint8_t> bytes;
  bool more;
};

std::vector<uint8_t> datagram(size_t n) {
  std::vector<uint8_t> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(i * 7 + i / 251);
  return d;
}

std::vector<Frag> split(const std::vector<uint8_t>& d, size_t piece) {
  std::vector<Frag> out;
  for (size_t off = 0; off < d.size(); off += piece) {
    const size_t n = std::min(piece, d.size() - off);
    out.push_back(
        {static_cast<uint16_t>(off),
         std::vector<uint8_t>(d.begin() + static_cast<long>(off), d.begin() + static_cast<long>(off + n)),
         off + n < d.size()});
  }
  return out;
}

Ipv4Packet packet(const Frag& f, uint16_t ident = 1, Ipv4Addr src = Ipv4Addr::of(1, 1, 1, 1)) {
  Ipv4Packet p;
  p.src = src;
  p.dst = Ipv4Addr::of(2, 2, 2, 2);
  p.protocol = ipproto::udp;
  p.ident = ident;
  p.frag_offset = f.offset;
  p.more_fragments = f.more;
  p.payload = f.bytes;
  return p;
}
}  // namespace

TEST(WireReassembly, AnyOrderGivesTheOriginalBytes) {
  std::mt19937 rng(3);
  for (size_t size : {size_t{9}, size_t{1480}, size_t{4000}, size_t{65515}}) {
    const auto d = datagram(size);
    auto frags = split(d, 1480);
    for (int round = 0; round < 5; ++round) {
      std::shuffle(frags.begin(), frags.end(), rng);
      Ipv4Reassembler r;
      Bytes out;
      for (size_t i = 0; i < frags.size(); ++i) {
        const auto o = r.feed(packet(frags[i]), 0, out);
        if (i + 1 < frags.size()) {
          ASSERT_EQ(o, Ipv4Reassembler::Outcome::pending);
        } else {
          ASSERT_EQ(o, Ipv4Reassembler::Outcome::complete) << size;
          EXPECT_TRUE(std::equal(out.begin(), out.end(), d.begin(), d.end()));
        }
      }
      EXPECT_EQ(r.in_progress(), 0u);
    }
  }
}

TEST(WireReassembly, DuplicatesAreIgnored) {
  const auto d = datagram(3000);
  const auto frags = split(d, 1000);
  Ipv4Reassembler r;
  Bytes out;
  EXPECT_EQ(r.feed(packet(frags[0]), 0, out), Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet(frags[0]), 0, out), Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet(frags[2]), 0, out), Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet(frags[2]), 0, out), Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet(frags[1]), 0, out), Ipv4Reassembler::Outcome::complete);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), d.begin(), d.end()));
  EXPECT_EQ(r.stats().duplicates, 2u);
}

TEST(WireReassembly, PartialOverlapDropsTheDatagram) {
  const auto d = datagram(3000);
  const auto frags = split(d, 1000);  // offsets 0, 1000 (not /8? 1000 = 125*8: yes)
  Ipv4Reassembler r;
  Bytes out;
  r.feed(packet(frags[0]), 0, out);
  Frag overlapping{992, std::vector<uint8_t>(16, 0xee), true};  // straddles 1000
  EXPECT_EQ(r.feed(packet(overlapping), 0, out), Ipv4Reassembler::Outcome::dropped);
  EXPECT_EQ(r.in_progress(), 0u);
  EXPECT_EQ(r.stats().overlaps, 1u);
  // The rest of the datagram then starts a new one that never completes without the first piece.
  EXPECT_EQ(r.feed(packet(frags[1]), 0, out), Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet(frags[2]), 0, out), Ipv4Reassembler::Outcome::pending);
}

TEST(WireReassembly, ConflictingEndsDropTheDatagram) {
  Ipv4Reassembler r;
  Bytes out;
  EXPECT_EQ(r.feed(packet({0, std::vector<uint8_t>(8, 1), true}), 0, out), Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet({16, std::vector<uint8_t>(4, 1), false}), 0, out),
            Ipv4Reassembler::Outcome::pending);
  // A second last fragment that ends elsewhere.
  EXPECT_EQ(r.feed(packet({24, std::vector<uint8_t>(4, 1), false}), 0, out),
            Ipv4Reassembler::Outcome::dropped);
  // Data past a known end.
  EXPECT_EQ(r.feed(packet({16, std::vector<uint8_t>(4, 1), false}), 0, out),
            Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet({24, std::vector<uint8_t>(8, 1), true}), 0, out),
            Ipv4Reassembler::Outcome::dropped);
  // A last fragment ending before data already received.
  EXPECT_EQ(r.feed(packet({64, std::vector<uint8_t>(8, 1), true}), 0, out),
            Ipv4Reassembler::Outcome::pending);
  EXPECT_EQ(r.feed(packet({8, std::vector<uint8_t>(8, 1), false}), 0, out),
            Ipv4Reassembler::Outcome::dropped);
  EXPECT_EQ(r.stats().overlaps, 3u);
}

TEST(WireReassembly, Timeout) {
  Ipv4Reassembler r({.timeout_ns = 1000});
  Bytes out;
  const Frag first{0, std::vector<uint8_t>(8, 1), true};
  const Frag last{8, std::vector<uint8_t>(1, 2), false};
  r.feed(packet(first, 1), 0, out);
  r.feed(packet(first, 2), 10, out);
  r.feed(packet(first, 3), 20, out);
  EXPECT_EQ(r.in_progress(), 3u);
  EXPECT_EQ(r.feed(packet(last, 2), 30, out), Ipv4Reassembler::Outcome::complete);
  r.expire(1000);  // ident 1 (started at 0) is dropped, ident 3 (started at 20) is still within its time
  EXPECT_EQ(r.in_progress(), 1u);
  EXPECT_EQ(r.feed(packet(last, 1), 1001, out), Ipv4Reassembler::Outcome::pending);  // starts over
  r.expire(1020);
  EXPECT_EQ(r.in_progress(), 1u);
  EXPECT_EQ(r.stats().timeouts, 2u);
  r.expire(2001);
  EXPECT_EQ(r.in_progress(), 0u);
  EXPECT_EQ(r.memory(), 0u);
}

// Issue 26: with 4 slots and the oldest evicted, 10 bogus first fragments (other idents, the same
// or other sources) between the pieces of a real datagram pushed it out and it never completed.
// Linux reassembles it: nothing in progress is evicted to make room while memory lasts.
TEST(WireReassembly, BogusFirstFragmentsDoNotStarveARealDatagram) {
  for (const bool same_source : {true, false}) {
    Ipv4Reassembler r;
    Bytes out;
    const std::vector<uint8_t> d = datagram(4000);
    const std::vector<Frag> frags = split(d, 1480);
    ASSERT_EQ(frags.size(), 3u);
    EXPECT_EQ(r.feed(packet(frags[0], 7), 0, out), Ipv4Reassembler::Outcome::pending);
    const Frag bogus{0, std::vector<uint8_t>(1480, 9), true};
    for (uint16_t k = 0; k < 10; ++k)
      r.feed(packet(bogus, static_cast<uint16_t>(100 + k),
                    same_source ? Ipv4Addr::of(1, 1, 1, 1)
                                : Ipv4Addr::of(198, 51, 100, static_cast<uint8_t>(k))),
             1, out);
    EXPECT_EQ(r.feed(packet(frags[1], 7), 2, out), Ipv4Reassembler::Outcome::pending);
    for (uint16_t k = 0; k < 10; ++k) r.feed(packet(bogus, static_cast<uint16_t>(200 + k)), 3, out);
    ASSERT_EQ(r.feed(packet(frags[2], 7), 4, out), Ipv4Reassembler::Outcome::complete);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), d.begin(), d.end()));
    EXPECT_EQ(r.in_progress(), 20u);
  }
}

// The budget holds under a flood of first fragments: new ones are refused, those in progress
// stay; one source gets its share only, so another's datagram still goes through.
TEST(WireReassembly, MemoryIsBoundedInAllAndPerSource) {
  Ipv4Reassembler r({.memory_limit = 256 * 1024, .per_source_limit = 64 * 1024});
  Bytes out;
  const Frag first{0, std::vector<uint8_t>(1480, 1), true};
  const Ipv4Addr flooder = Ipv4Addr::of(203, 0, 113, 1);
  for (uint16_t k = 0; k < 1000; ++k) r.feed(packet(first, k, flooder), 0, out);
  EXPECT_LE(r.memory(), 64u * 1024);
  EXPECT_GT(r.stats().over_source, 900u);
  // A real datagram from another source completes beside it.
  const std::vector<uint8_t> d = datagram(3000);
  const std::vector<Frag> frags = split(d, 1480);
  for (size_t k = 0; k + 1 < frags.size(); ++k)
    EXPECT_EQ(r.feed(packet(frags[k], 5), 1, out), Ipv4Reassembler::Outcome::pending);
  ASSERT_EQ(r.feed(packet(frags.back(), 5), 1, out), Ipv4Reassembler::Outcome::complete);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), d.begin(), d.end()));
  // Spoofed sources, each within its share, fill the whole budget and no further.
  for (uint32_t k = 0; k < 1000; ++k) r.feed(packet(first, 1, Ipv4Addr{0x0a000000u + k}), 2, out);
  EXPECT_LE(r.memory(), 256u * 1024);
  EXPECT_GT(r.stats().over_memory, 800u);
  // They age out after the timeout and the budget is free again.
  r.expire(30'000'000'000 + 2);
  EXPECT_EQ(r.memory(), 0u);
  EXPECT_EQ(r.in_progress(), 0u);
}
