#pragma once
// Batched writes to one file descriptor through io_uring: a device that would otherwise make one
// write() per frame (a tun fd has no sendmmsg) queues each frame's write as one SQE into a buffer
// registered with the ring and submits the whole batch with one io_uring_enter. Writes to a tun fd
// complete inline during that call (the kernel runs the receiver's path for each frame there, as it
// does for write()), so the completions are reaped from the shared ring without another system
// call. Built only with liburing (WEFT_HAVE_LIBURING); without it, or where the kernel refuses a
// ring (io_uring disabled by sysctl or seccomp), open() says so and the device falls back to one
// write() per frame.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/result.hpp"

namespace weft::stack {

class UringWriter {
 public:
  // `buf` (`len` bytes, alive as long as the writer) is registered once; every write of submit()
  // lies inside it. At most `max_batch` writes per submit().
  static Result<std::unique_ptr<UringWriter>> open(int fd, uint8_t* buf, size_t len, unsigned max_batch);
  ~UringWriter();
  UringWriter(const UringWriter&) = delete;
  UringWriter& operator=(const UringWriter&) = delete;

  struct Write {
    const uint8_t* data;  // inside the registered buffer
    uint32_t len;
  };
  struct Outcome {
    size_t written = 0;      // writes the kernel took
    size_t would_block = 0;  // EAGAIN (the device's queue was full): dropped, as on a wire
    size_t failed = 0;       // any other error
  };
  // Queues `n` (<= max_batch) writes in order and submits them with one io_uring_enter; returns
  // once all have completed, so their bytes may be reused at once. Completions the kernel did not
  // post during the submit (it handed a write to a worker thread) are waited for, and counted.
  Outcome submit(const Write* w, size_t n);

  struct Counters {
    uint64_t submits = 0;  // io_uring_enter calls that submitted a batch
    uint64_t writes = 0;   // SQEs submitted
    uint64_t late = 0;     // completions not posted by the time the submit returned
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Ring;
  explicit UringWriter(std::unique_ptr<Ring> r);
  std::unique_ptr<Ring> ring_;
  Counters counters_;
};

// Whether this build can use io_uring at all (liburing found at configure time).
bool uring_writer_built();

}  // namespace weft::stack
