// Writes the seed corpus for fuzz_probe_wire: one valid packet of each type and some near misses.
#include <vector>

#include "probe/wire.hpp"
#include "seed_corpus.hpp"

using namespace weft::probe::wire;

int main(int argc, char** argv) {
  std::vector<std::vector<uint8_t>> seeds;
  auto add = [&](Packet p) {
    std::vector<uint8_t> b(kSize);
    encode(p, std::span<uint8_t, kSize>(b.data(), kSize));
    seeds.push_back(b);
  };
  Packet probe{Type::probe, 0, 0x1122334455667788ULL, 1, 1'700'000'000'000'000'000, 0, 0};
  add(probe);
  Packet reply = probe;
  reply.type = Type::reply;
  reply.flags = kRxKernel | kFollowupComing;
  reply.responder_rx_ns = probe.prober_tx_ns + 1000;
  reply.responder_tx_ns = probe.prober_tx_ns + 2000;
  add(reply);
  Packet followup = reply;
  followup.type = Type::followup;
  followup.flags = kRxKernel | kTxKernel;
  add(followup);
  followup.flags = kRxHardware | kTxHardware;
  add(followup);
  Followups batch;
  batch.flags = kRxKernel | kTxKernel;
  batch.session = 0x1122334455667788ULL;
  for (size_t n : {size_t{1}, size_t{3}, kMaxFollowups}) {
    batch.count = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i)
      batch.entries[i] = {i + 1, 1'700'000'000'000'001'000, 1'700'000'000'000'002'000};
    std::vector<uint8_t> b(kMaxFollowupsSize);
    b.resize(encode_followups(batch, b));
    seeds.push_back(b);
  }
  // Replies carrying 1 and kMaxFollowups follow-ups (same session), and one whose follow-ups are
  // another session's.
  for (size_t n : {size_t{1}, kMaxFollowups}) {
    batch.count = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i)
      batch.entries[i] = {i + 1, 1'700'000'000'000'001'000, 1'700'000'000'000'002'000};
    std::vector<uint8_t> b(kMaxReplyFollowupsSize);
    b.resize(encode_reply_followups(reply, batch, b));
    seeds.push_back(b);
  }
  {
    auto foreign = seeds.back();
    foreign[kSize + 15] ^= 1;
    seeds.push_back(foreign);
  }
  auto broken = seeds[1];
  broken[7] = 1;  // reserved byte set
  seeds.push_back(broken);
  seeds.push_back(std::vector<uint8_t>(seeds[0].begin(), seeds[0].begin() + 47));  // one byte short
  return weft::fuzz::write_seed_corpus(argc, argv, seeds);
}
