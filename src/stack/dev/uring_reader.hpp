#pragma once
// Batched reads of one file descriptor through io_uring: a device that would otherwise make one
// read() per frame (a tun fd has no recvmmsg) submits up to `max_batch` reads, one per slot of a
// buffer it registered with the ring, with one io_uring_enter. Each read carries RWF_NOWAIT, so one
// that finds the queue empty completes at once with EAGAIN instead of being parked until a frame
// comes (what a plain io_uring read of a non-blocking tun fd does); all of them complete inline
// during that call, in the order they were queued, and are reaped from the shared ring without
// another system call. Built only with liburing (WEFT_HAVE_LIBURING); without it, or where the
// kernel refuses a ring or RWF_NOWAIT on this fd, open() or the first fill() says so and the
// device reads frame by frame.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/result.hpp"
#include "stack/wire/types.hpp"

namespace weft::stack {

class UringReader {
 public:
  // `max_batch` slots of `slot_size` bytes each, owned by the reader.
  static Result<std::unique_ptr<UringReader>> open(int fd, size_t slot_size, unsigned max_batch);
  ~UringReader();
  UringReader(const UringReader&) = delete;
  UringReader& operator=(const UringReader&) = delete;

  // Reads up to `n` (<= max_batch) frames into slots 0..n-1 with one io_uring_enter; returns how
  // many slots hold one (they are filled from slot 0 on, in arrival order: frame(i) for i below
  // the result). An error other than EAGAIN (RWF_NOWAIT refused: EOPNOTSUPP) is returned when no
  // frame came with it.
  Result<size_t> fill(unsigned n);
  wire::Bytes frame(size_t i) const;
  unsigned max_batch() const;

  struct Counters {
    uint64_t submits = 0;  // io_uring_enter calls
    uint64_t reads = 0;    // reads submitted
    uint64_t frames = 0;   // reads that returned a frame
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Ring;
  explicit UringReader(std::unique_ptr<Ring> r);
  std::unique_ptr<Ring> ring_;
  Counters counters_;
};

}  // namespace weft::stack
