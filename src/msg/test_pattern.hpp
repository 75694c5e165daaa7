#pragma once
// Messages whose every byte a receiver can check without being told anything: message i of a run
// with seed s has a length and contents that are functions of (s, i) only. Used by
// `weft msg bench --mode check` and the guest tests (1 M messages, every byte compared).
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::msg {

// A length in [0, max], log-uniform-ish: each power-of-two range is as likely as any other, so
// small messages and messages near max both occur often.
uint32_t pattern_length(uint64_t seed, uint64_t i, uint32_t max);
// Fills out with message i's bytes.
void pattern_fill(uint64_t seed, uint64_t i, std::span<std::byte> out);
// The index of the first byte that differs from message i, or SIZE_MAX if all match.
size_t pattern_mismatch(uint64_t seed, uint64_t i, std::span<const std::byte> got);

}  // namespace weft::msg
