#include "rdma/extended_cq.hpp"

#include <fmt/format.h>

#include <cerrno>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "rdma/error.hpp"

namespace weft::rdma {

namespace {
// rxe reports vendor id 0xffffff (RXE_VENDOR_ID); its devices are also named rxe* by convention.
bool is_rxe(const Device& dev) {
  ibv_device_attr a{};
  if (ibv_query_device(dev.raw(), &a) == 0 && a.vendor_id == 0xffffff) return true;
  return dev.name().rfind("rxe", 0) == 0;
}
}  // namespace

Result<ExtendedCq> ExtendedCq::create(const Device& dev, int depth, bool timestamps,
                                      std::shared_ptr<CompletionChannel> channel) {
  if (timestamps)
    if (auto clk = dev.clock(); !clk) return std::unexpected(clk.error());
  ibv_cq_init_attr_ex attr{};
  attr.cqe = static_cast<uint32_t>(depth);
  attr.channel = channel ? channel->raw() : nullptr;
  attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP;
  if (timestamps) attr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  ibv_cq_ex* ex = ibv_create_cq_ex(dev.raw(), &attr);
  if (!ex)
    return verb_error(fmt::format("ibv_create_cq_ex depth {}{} on {}", depth,
                                  timestamps ? " with completion timestamps" : "", dev.name()),
                      errno ? errno : EOPNOTSUPP);
  auto ctx = dev.shared();
  std::shared_ptr<ibv_cq_ex> owned(ex, [ctx, channel](ibv_cq_ex* c) {
    if (int rc = ibv_destroy_cq(ibv_cq_ex_to_cq(c))) log().warn("ibv_destroy_cq: errno {}", rc);
  });
  return ExtendedCq(std::move(channel), std::move(owned), timestamps,
                    static_cast<int>(ibv_cq_ex_to_cq(ex)->cqe), is_rxe(dev));
}

Result<size_t> ExtendedCq::poll(std::span<WorkCompletion> out) {
  ibv_cq_ex* cq = ex_.get();
  size_t n = 0;
  while (n < out.size()) {
    ibv_poll_cq_attr attr{};
    int rc = ibv_start_poll(cq, &attr);
    if (rc == ENOENT) break;
    if (rc != 0) return verb_error("ibv_start_poll", rc);
    // One clock read per pass, taken once the pass found its first completion (on an emulated CPU
    // a clock read costs more than the poll): a later entry of the same pass landed at most the
    // pass's own microseconds after it. Not one per call: rxe's single-step passes can find a
    // completion that arrived long after an earlier pass, and that pass's stamp would put its
    // arrival before its sending (a responder delay longer than the whole round trip).
    const int64_t stamp = mono_ns();
    for (;;) {
      WorkCompletion& c = out[n];
      c.poll_mono_ns = stamp;
      c.wr_id = cq->wr_id;
      c.status = cq->status;
      c.opcode = ibv_wc_read_opcode(cq);
      c.byte_len = ibv_wc_read_byte_len(cq);
      c.src_qp = ibv_wc_read_src_qp(cq);
      c.nic_ticks = timestamps_ ? ibv_wc_read_completion_ts(cq) : 0;
      if (++n == out.size() || single_step_) break;
      rc = ibv_next_poll(cq);
      if (rc == ENOENT) break;
      if (rc != 0) {
        ibv_end_poll(cq);
        return verb_error("ibv_next_poll", rc);
      }
    }
    ibv_end_poll(cq);
    if (!single_step_) break;  // the pass ended on an empty queue or a full `out`
  }
  return n;
}

Status ExtendedCq::arm() {
  if (int rc = ibv_req_notify_cq(raw(), 0)) return verb_error("ibv_req_notify_cq", rc);
  return {};
}

}  // namespace weft::rdma
