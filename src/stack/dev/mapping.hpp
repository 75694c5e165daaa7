#pragma once
// An owned memory mapping (a packet socket's receive ring, an AF_XDP UMEM), unmapped on
// destruction, so a device's set-up that gives up half way leaves nothing mapped.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/result.hpp"

namespace weft::stack {

class Mapping {
 public:
  Mapping() = default;
  // mmap(nullptr, len, prot, flags, fd, 0); the error names `what`.
  static Result<Mapping> map(size_t len, int prot, int flags, int fd, const char* what) {
    void* p = ::mmap(nullptr, len, prot, flags, fd, 0);
    if (p == MAP_FAILED) return fail_errno(what);
    Mapping m;
    m.p_ = static_cast<uint8_t*>(p);
    m.len_ = len;
    return m;
  }
  ~Mapping() { reset(); }
  Mapping(Mapping&& o) noexcept : p_(std::exchange(o.p_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  uint8_t* data() const { return p_; }
  size_t size() const { return len_; }
  void reset() {
    if (p_ != nullptr) ::munmap(p_, len_);
    p_ = nullptr;
    len_ = 0;
  }

 private:
  uint8_t* p_ = nullptr;
  size_t len_ = 0;
};

}  // namespace weft::stack
