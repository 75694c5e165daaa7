#include "msg/read_notice.hpp"

#include <gtest/gtest.h>

using namespace weft::msg;

TEST(ReadNotice, RoundTripsAndChecksWhatTheReceiverExpects) {
  const uint32_t slots = 8, slot_bytes = 4096;
  ReadNotice n{13, 100, (13 % slots) * slot_bytes};
  auto w = n.encode();
  auto d = ReadNotice::decode_expected(w, 13, slots, slot_bytes);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->seq, 13u);
  EXPECT_EQ(d->length, 100u);
  EXPECT_EQ(d->offset, 5u * 4096);
  // The 32-bit sequence on the wire matches a 64-bit counter past 2^32.
  const uint64_t big = (uint64_t{1} << 32) + 13;
  EXPECT_TRUE(ReadNotice::decode_expected(w, big, slots, slot_bytes) || (big % slots) != 13 % slots);

  EXPECT_NE(
      ReadNotice::decode_expected(w, 14, slots, slot_bytes).error().message.find("sequence 13, expected 14"),
      std::string::npos);
  auto wrong_slot = ReadNotice{13, 100, 0}.encode();
  EXPECT_NE(ReadNotice::decode_expected(wrong_slot, 13, slots, slot_bytes)
                .error()
                .message.find("offset 0, expected"),
            std::string::npos);
  auto too_long = ReadNotice{13, slot_bytes + 1, 5 * 4096}.encode();
  EXPECT_NE(ReadNotice::decode_expected(too_long, 13, slots, slot_bytes).error().message.find("at most 4096"),
            std::string::npos);
  EXPECT_FALSE(ReadNotice::decode(std::span(w).first(15)));
  EXPECT_FALSE(ReadNotice::decode_expected(w, 13, 0, slot_bytes));
}
