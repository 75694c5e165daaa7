#pragma once
// Redis Cluster key routing, as the cluster specification defines it: a key belongs to slot
// CRC16(key) mod 16384, where only the part between the first '{' and the next '}' is hashed when
// that part is not empty (a "hash tag": weft tags every key of one agent with {AGENT}, so one
// report's windows land on one shard and can be written in one MULTI/EXEC). Debian 12 ships no
// cluster client for C/C++ (hiredis has none), so the store routes by itself with these.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

struct redisReply;

namespace weft::controller::redis {

inline constexpr int kSlots = 16384;

// CRC16-CCITT (XModem: polynomial 0x1021, initial value 0), the checksum the cluster uses.
uint16_t crc16(std::string_view data);

// The slot of `key`, honouring a non-empty {hash tag}.
int key_slot(std::string_view key);

// One row of CLUSTER SLOTS: slots first..last are served by `master`, copied to `replicas`
// (each "HOST:PORT"; the cluster leaves out replicas it has marked failed).
struct SlotRange {
  int first = 0;
  int last = 0;
  std::string master;
  std::vector<std::string> replicas;
};

// Parses a CLUSTER SLOTS reply. An error if it is not one, or a range lies outside 0..16383.
Result<std::vector<SlotRange>> parse_cluster_slots(const redisReply& reply);

// A "-MOVED 3999 127.0.0.1:6381" or "-ASK 3999 127.0.0.1:6381" error reply (without the '-').
struct Redirect {
  bool ask = false;  // ASK: this one command goes to `node` (after ASKING); MOVED: the slot moved
  int slot = 0;
  std::string node;  // HOST:PORT
};
std::optional<Redirect> parse_redirect(std::string_view error);

}  // namespace weft::controller::redis
