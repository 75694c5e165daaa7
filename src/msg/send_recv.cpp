// send_recv and send_recv_srq: the sender SENDs (with the message's sequence number as immediate)
// into one of `slots` receive buffers of max_message bytes the receiver keeps posted, on the QP's
// own receive queue or on a shared receive queue.
//
// Credits (as rsocket counts receive WQEs): the sender may have `slots` messages not yet released
// by the receiver. The receiver counts the messages it released (reposting their receive) and
// WRITEs that count into the sender's control block once a quarter of the slots has accumulated;
// a WRITE consumes no receive, so credits never cost credits (the problem rsocket and eRPC solve
// with reserved receives). Messages of up to 64 bytes go inline; longer ones are copied into a
// send slot that is only reused once its message was released, so it has certainly been read.
#include <cstring>

#include "msg/link_connection.hpp"
#include "msg/types.hpp"

namespace weft::msg {

using namespace weft::rdma;

namespace {

class SendRecv final : public LinkConnection {
 public:
  SendRecv(std::unique_ptr<Link> link, MemoryRegion inbox, MemoryRegion outbox, Kind kind)
      : LinkConnection(std::move(link)),
        inbox_(std::move(inbox)),
        outbox_(std::move(outbox)),
        kind_(kind),
        win_(*link_) {}

  Status post_all_receives() {
    return win_.post_all([&](uint64_t slot) { return repost(slot); });
  }

  Status send(std::span<const std::byte> data, milliseconds timeout) override {
    const Deadline d = Clock::now() + timeout;
    if (auto s = check_size(data.size()); !s) return s;
    if (auto s = win_.wait_credit(d); !s) return s;
    const uint32_t len = static_cast<uint32_t>(data.size());
    const uint64_t off = win_.send_offset();
    const uint32_t imm = static_cast<uint32_t>(win_.sent());
    const uint64_t id = make_wr_id(Op::data, win_.sent());
    SendWr w = SendWr::send_imm(outbox_.local(off, len), imm, id);
    if (len <= link_->qp().max_inline()) {
      w = SendWr::send_imm(LocalBuf{const_cast<std::byte*>(data.data()), len, 0}, imm, id).inlined();
    } else {
      std::memcpy(outbox_.data() + off, data.data(), len);
    }
    return win_.post_message(w, len, d);
  }

  Result<std::span<const std::byte>> receive(milliseconds timeout) override {
    const Deadline d = Clock::now() + timeout;
    auto wc = win_.next(d, [&](uint64_t slot) { return repost(slot); });
    if (!wc) return std::unexpected(wc.error());
    const uint64_t slot = win_.recv_slot(), n = win_.received();
    if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM) || wc->wr_id != slot ||
        imm_of(*wc) != static_cast<uint32_t>(n) || wc->byte_len > win_.max())
      return protocol_error(
          fmt::format("unexpected receive (opcode {}, slot {}, imm {}, {} bytes) for "
                      "message {} in slot {}",
                      static_cast<int>(wc->opcode), wc->wr_id, imm_of(*wc), wc->byte_len, n, slot));
    win_.hold(wc->byte_len);
    return std::span<const std::byte>(inbox_.data() + slot * win_.max(), wc->byte_len);
  }

  Capacity capacity() const override { return {win_.credits(), 0, win_.max(), win_.slots()}; }
  Kind kind() const override { return kind_; }

 private:
  Status repost(uint64_t slot) {
    auto r = RecvWr::into(inbox_.local(slot * win_.max(), win_.max()), slot);
    return link_->post_recv(r);
  }

  MemoryRegion inbox_, outbox_;
  Kind kind_;
  SlotWindow win_;
};

}  // namespace

Result<std::unique_ptr<Connection>> open_send_recv(SideChannel ch, const Options& o, bool use_srq) {
  auto link = Link::create(std::move(ch), o, o.slots + 16, o.slots, use_srq);
  if (!link) return std::unexpected(link.error());
  const size_t bytes = size_t{o.slots} * o.max_message;
  auto inbox = MemoryRegion::allocate((*link)->pd(), bytes, access::local);
  if (!inbox) return std::unexpected(inbox.error());
  auto outbox = MemoryRegion::allocate((*link)->pd(), bytes, access::local);
  if (!outbox) return std::unexpected(outbox.error());
  Hello h;
  h.kind = o.kind;
  h.max_message = o.max_message;
  h.slots = o.slots;
  if (auto p = (*link)->handshake(h); !p) return std::unexpected(p.error());
  Link* l = link->get();
  auto c = std::make_unique<SendRecv>(std::move(*link), std::move(*inbox), std::move(*outbox), o.kind);
  if (auto s = c->post_all_receives(); !s) return std::unexpected(s.error());
  if (auto s = l->ready(); !s) return std::unexpected(s.error());
  return std::unique_ptr<Connection>(std::move(c));
}

}  // namespace weft::msg
