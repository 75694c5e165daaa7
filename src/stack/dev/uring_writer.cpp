#include "stack/dev/uring_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifdef WEFT_HAVE_LIBURING
#include <liburing.h>
#endif

namespace weft::stack {

#ifdef WEFT_HAVE_LIBURING

struct UringWriter::Ring {
  io_uring ring{};
  bool live = false;
  int fd = -1;
  bool fixed_buf = false;  // the buffer is registered (it may not be: RLIMIT_MEMLOCK)
  unsigned max_batch = 0;
  ~Ring() {
    if (live) io_uring_queue_exit(&ring);
  }
};

bool uring_writer_built() { return true; }

Result<std::unique_ptr<UringWriter>> UringWriter::open(int fd, uint8_t* buf, size_t len, unsigned max_batch) {
  auto r = std::make_unique<Ring>();
  r->max_batch = max_batch;
  r->fd = fd;
  // Completion work (none is expected: the writes finish inline) runs when the submitter enters
  // the kernel, never by interrupting it. (Not SINGLE_ISSUER: a device may be made in one thread
  // and driven from another.)
  io_uring_params p{};
  // SUBMIT_ALL: a write the kernel refuses to start does not leave the rest of the batch behind
  // in the submission queue.
  p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL;
  int e = io_uring_queue_init_params(max_batch, &r->ring, &p);
  if (e == -EINVAL) {  // a kernel older than 5.19 knows neither flag
    p = {};
    e = io_uring_queue_init_params(max_batch, &r->ring, &p);
  }
  if (e < 0) return fail_errno("io_uring_queue_init", -e);
  r->live = true;
  // A registered buffer: the kernel maps no pages per write. It counts against RLIMIT_MEMLOCK;
  // where that refuses it, plain writes still batch. The fd is not registered: a registered file
  // stays open until the ring's teardown, which the kernel finishes later in a worker, so a TAP
  // would outlive the process that closed it (and its name would still be taken in its netns).
  iovec iov{buf, len};
  r->fixed_buf = io_uring_register_buffers(&r->ring, &iov, 1) == 0;
  return std::unique_ptr<UringWriter>(new UringWriter(std::move(r)));
}

UringWriter::Outcome UringWriter::submit(const Write* w, size_t n) {
  Outcome out;
  io_uring* ring = &ring_->ring;
  size_t queued = 0;
  for (; queued < n && queued < ring_->max_batch; ++queued) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) break;  // cannot happen: every submit() reaps all it queued
    if (ring_->fixed_buf)
      io_uring_prep_write_fixed(sqe, ring_->fd, w[queued].data, w[queued].len, 0, 0);
    else
      io_uring_prep_write(sqe, ring_->fd, w[queued].data, w[queued].len, 0);
    sqe->user_data = queued;
  }
  out.failed = n - queued;  // more than max_batch: a caller's bug, the rest is not sent
  if (queued == 0) return out;
  int e;
  while ((e = io_uring_submit(ring)) == -EINTR) {
  }
  ++counters_.submits;
  counters_.writes += queued;
  size_t done = 0;
  const auto reap = [&] {
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(ring, head, cqe) {
      ++seen;
      if (cqe->res >= 0)
        ++out.written;
      else if (cqe->res == -EAGAIN)
        ++out.would_block;
      else
        ++out.failed;
    }
    io_uring_cq_advance(ring, seen);
    done += seen;
  };
  reap();
  // What the kernel took is in flight until its completion; what it did not take is lost.
  const size_t taken = e < 0 ? 0 : std::min(static_cast<size_t>(e), queued);
  out.failed += queued - std::max(taken, done);
  if (done < taken) {
    counters_.late += taken - done;
    while (done < taken) {
      io_uring_cqe* cqe;
      const int w = io_uring_wait_cqe_nr(ring, &cqe, static_cast<unsigned>(taken - done));
      if (w < 0 && w != -EINTR) {
        out.failed += taken - done;
        break;
      }
      reap();
    }
  }
  return out;
}

#else  // no liburing: the device writes frame by frame

struct UringWriter::Ring {};

bool uring_writer_built() { return false; }

Result<std::unique_ptr<UringWriter>> UringWriter::open(int, uint8_t*, size_t, unsigned) {
  return fail("io_uring: weft was built without liburing");
}

UringWriter::Outcome UringWriter::submit(const Write*, size_t n) { return Outcome{0, 0, n}; }

#endif

UringWriter::UringWriter(std::unique_ptr<Ring> r) : ring_(std::move(r)) {}
UringWriter::~UringWriter() = default;

}  // namespace weft::stack
