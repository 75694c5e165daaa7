#include "stack/tcp/ring_memory.hpp"

#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace weft::stack::tcp {
namespace {

struct Cache {
  std::mutex m;
  std::unordered_map<size_t, std::vector<uint8_t*>> free;  // by capacity
  size_t bytes = 0;
};

// Never destroyed: rings in static storage (or on other threads) may be released during exit.
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

}  // namespace

uint8_t* ring_memory_take(size_t capacity) {
  Cache& c = cache();
  {
    std::lock_guard g(c.m);
    if (auto it = c.free.find(capacity); it != c.free.end() && !it->second.empty()) {
      uint8_t* p = it->second.back();
      it->second.pop_back();
      c.bytes -= capacity;
      return p;
    }
  }
  return new uint8_t[capacity];
}

void ring_memory_give(uint8_t* p, size_t capacity) {
  if (p == nullptr) return;
  Cache& c = cache();
  {
    std::lock_guard g(c.m);
    if (c.bytes + capacity <= kRingCacheBytes) {
      c.free[capacity].push_back(p);
      c.bytes += capacity;
      return;
    }
  }
  delete[] p;
}

size_t ring_memory_cached() {
  Cache& c = cache();
  std::lock_guard g(c.m);
  return c.bytes;
}

}  // namespace weft::stack::tcp
