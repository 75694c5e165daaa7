#include "stack/dev/uring_reader.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#ifdef WEFT_HAVE_LIBURING
#include <liburing.h>
#endif

namespace weft::stack {

#ifdef WEFT_HAVE_LIBURING

struct UringReader::Ring {
  io_uring ring{};
  bool live = false;
  int fd = -1;
  bool fixed_buf = false;  // the slots are registered (they may not be: RLIMIT_MEMLOCK)
  unsigned max_batch = 0;
  size_t slot_size = 0;
  std::vector<uint8_t> buf;
  std::vector<int32_t> res;     // per slot: the read's result of the last fill
  std::vector<uint16_t> order;  // the slots that hold a frame, in the order the reads were queued
  ~Ring() {
    if (live) io_uring_queue_exit(&ring);
  }
};

Result<std::unique_ptr<UringReader>> UringReader::open(int fd, size_t slot_size, unsigned max_batch) {
  if (max_batch == 0 || max_batch > 1024) return fail("io_uring reader: batch of {} reads", max_batch);
  auto r = std::make_unique<Ring>();
  r->fd = fd;
  r->max_batch = max_batch;
  r->slot_size = slot_size;
  r->buf.resize(slot_size * max_batch);
  r->res.resize(max_batch);
  r->order.reserve(max_batch);
  // As UringWriter: completion work runs when this thread enters the kernel, never by
  // interrupting it; a read the kernel refuses does not leave the rest in the submission queue.
  io_uring_params p{};
  p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL;
  int e = io_uring_queue_init_params(max_batch, &r->ring, &p);
  if (e == -EINVAL) {  // a kernel older than 5.19 knows neither flag
    p = {};
    e = io_uring_queue_init_params(max_batch, &r->ring, &p);
  }
  if (e < 0) return fail_errno("io_uring_queue_init", -e);
  r->live = true;
  // Registered slots: the kernel maps no user pages per read (no fd registration: see UringWriter).
  iovec iov{r->buf.data(), r->buf.size()};
  r->fixed_buf = io_uring_register_buffers(&r->ring, &iov, 1) == 0;
  return std::unique_ptr<UringReader>(new UringReader(std::move(r)));
}

Result<size_t> UringReader::fill(unsigned n) {
  Ring& g = *ring_;
  io_uring* ring = &g.ring;
  n = std::min(n, g.max_batch);
  unsigned queued = 0;
  for (; queued < n; ++queued) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) break;  // cannot happen: every fill() reaps all it queued
    uint8_t* slot = g.buf.data() + queued * g.slot_size;
    const auto len = static_cast<unsigned>(g.slot_size);
    if (g.fixed_buf)
      io_uring_prep_read_fixed(sqe, g.fd, slot, len, 0, 0);
    else
      io_uring_prep_read(sqe, g.fd, slot, len, 0);
    sqe->rw_flags = RWF_NOWAIT;  // an empty queue answers EAGAIN now, not when a frame comes
    sqe->user_data = queued;
    g.res[queued] = -EINPROGRESS;
  }
  g.order.clear();
  if (queued == 0) return size_t{0};
  int e;
  while ((e = io_uring_submit(ring)) == -EINTR) {
  }
  if (e < 0) return fail_errno("io_uring_enter (tap reads)", -e);
  ++counters_.submits;
  counters_.reads += queued;
  unsigned done = 0;
  const auto reap = [&] {
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(ring, head, cqe) {
      ++seen;
      if (cqe->user_data < queued) g.res[cqe->user_data] = cqe->res;
    }
    io_uring_cq_advance(ring, seen);
    done += seen;
  };
  reap();
  // RWF_NOWAIT reads complete inline; should one not have, its slot must not be reused before it
  // has (e counts the reads the kernel took).
  const unsigned taken = std::min(static_cast<unsigned>(e), queued);
  while (done < taken) {
    io_uring_cqe* cqe;
    const int w = io_uring_wait_cqe_nr(ring, &cqe, taken - done);
    if (w < 0 && w != -EINTR) return fail_errno("io_uring wait (tap reads)", -w);
    reap();
  }
  int err = 0;
  for (unsigned i = 0; i < queued; ++i) {
    if (g.res[i] > 0)
      g.order.push_back(static_cast<uint16_t>(i));
    else if (g.res[i] < 0 && g.res[i] != -EAGAIN && g.res[i] != -EINPROGRESS && err == 0)
      err = -g.res[i];
  }
  counters_.frames += g.order.size();
  if (g.order.empty() && err != 0) return fail_errno("io_uring read (tap)", err);
  return g.order.size();
}

wire::Bytes UringReader::frame(size_t i) const {
  const Ring& g = *ring_;
  const uint16_t s = g.order[i];
  return wire::Bytes(g.buf.data() + s * g.slot_size, static_cast<size_t>(g.res[s]));
}

unsigned UringReader::max_batch() const { return ring_->max_batch; }

#else  // no liburing: the device reads frame by frame

struct UringReader::Ring {};

Result<std::unique_ptr<UringReader>> UringReader::open(int, size_t, unsigned) {
  return fail("io_uring: weft was built without liburing");
}
Result<size_t> UringReader::fill(unsigned) { return fail("io_uring: weft was built without liburing"); }
wire::Bytes UringReader::frame(size_t) const { return {}; }
unsigned UringReader::max_batch() const { return 0; }

#endif

UringReader::UringReader(std::unique_ptr<Ring> r) : ring_(std::move(r)) {}
UringReader::~UringReader() = default;

}  // namespace weft::stack
