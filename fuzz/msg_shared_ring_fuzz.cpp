// libFuzzer target for the shared ring's hole rule (src/msg/shared_ring_math, judge_hole): the
// input is a schedule. Each byte is one event: which sender steps (and with what message length)
// or dies, or a receiver step; senders the input never schedules are stalled, not dead. The model
// (tests/msg/shared_ring_sim.hpp) aborts on the first broken rule: a live sender's reservation
// skipped, a message delivered out of its sender's order, or, once the input is used up and the
// survivors run fairly, a ring that does not drain.
#include <cstdio>
#include <cstdlib>

#include "shared_ring_sim.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const unsigned senders = 1 + data[0] % 4;
  weft::msg::sim::SharedRingSim sim(senders, 1024, 64);
  for (size_t k = 1; k < size; ++k) {
    const uint8_t b = data[k];
    const unsigned who = b % (senders + 1);
    std::string e;
    if (who == senders)
      e = sim.receiver_step();
    else if ((b >> 5) == 7)
      sim.die(who);
    else
      sim.sender_step(who, (b >> 3) * 37 % 257);  // 0..256 bytes: up to a quarter ring
    if (!e.empty()) {
      std::fprintf(stderr, "shared ring: %s\n", e.c_str());
      std::abort();
    }
  }
  if (auto e = sim.drain(100000, 40); !e.empty()) {
    std::fprintf(stderr, "shared ring: %s\n", e.c_str());
    std::abort();
  }
  return 0;
}
