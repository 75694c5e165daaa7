#include "controller/redis_slots.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

namespace weft::controller::redis {

uint16_t crc16(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char c : data) {
    crc ^= static_cast<uint16_t>(c << 8);
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
  }
  return crc;
}

int key_slot(std::string_view key) {
  if (auto open = key.find('{'); open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    // "{}" or an unclosed brace: the whole key is hashed (the specification's rule).
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) % kSlots;
}

namespace {

std::optional<std::string> node_address(const redisReply* node) {
  // [host, port, id, ...]: host may be empty when the node does not know its own address
  // (cluster-announce-ip unset and reached through a name); it is then useless to us.
  if (node->type != REDIS_REPLY_ARRAY || node->elements < 2) return std::nullopt;
  const redisReply* host = node->element[0];
  const redisReply* port = node->element[1];
  if (host->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_INTEGER || host->len == 0)
    return std::nullopt;
  std::string h(host->str, host->len);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 literal
  return h + ":" + std::to_string(port->integer);
}

}  // namespace

Result<std::vector<SlotRange>> parse_cluster_slots(const redisReply& reply) {
  if (reply.type == REDIS_REPLY_ERROR)
    return fail("CLUSTER SLOTS: {}", std::string_view(reply.str, reply.len));
  if (reply.type != REDIS_REPLY_ARRAY) return fail("CLUSTER SLOTS: not an array");
  std::vector<SlotRange> out;
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply* row = reply.element[i];
    if (row->type != REDIS_REPLY_ARRAY || row->elements < 3 || row->element[0]->type != REDIS_REPLY_INTEGER ||
        row->element[1]->type != REDIS_REPLY_INTEGER)
      return fail("CLUSTER SLOTS: row {} is malformed", i);
    SlotRange r;
    r.first = static_cast<int>(row->element[0]->integer);
    r.last = static_cast<int>(row->element[1]->integer);
    if (r.first < 0 || r.last >= kSlots || r.first > r.last)
      return fail("CLUSTER SLOTS: range {}-{} out of 0-{}", r.first, r.last, kSlots - 1);
    auto master = node_address(row->element[2]);
    if (!master) return fail("CLUSTER SLOTS: row {} has no usable master address", i);
    r.master = std::move(*master);
    for (size_t k = 3; k < row->elements; ++k)
      if (auto rep = node_address(row->element[k])) r.replicas.push_back(std::move(*rep));
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<Redirect> parse_redirect(std::string_view error) {
  Redirect r;
  if (error.starts_with("MOVED "))
    error.remove_prefix(6);
  else if (error.starts_with("ASK ")) {
    error.remove_prefix(4);
    r.ask = true;
  } else
    return std::nullopt;
  auto space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto [p, ec] = std::from_chars(error.data(), error.data() + space, r.slot);
  if (ec != std::errc() || p != error.data() + space || r.slot < 0 || r.slot >= kSlots) return std::nullopt;
  r.node = std::string(error.substr(space + 1));
  if (r.node.empty() || r.node.find(':') == std::string::npos) return std::nullopt;
  return r;
}

}  // namespace weft::controller::redis
