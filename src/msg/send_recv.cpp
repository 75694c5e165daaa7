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

#include "msg/link.hpp"
#include "msg/ring_math.hpp"
#include "msg/types.hpp"

namespace weft::msg {

using namespace weft::rdma;

namespace {

class SendRecv final : public Connection {
 public:
  SendRecv(std::unique_ptr<Link> link, MemoryRegion inbox, MemoryRegion outbox, Kind kind)
      : link_(std::move(link)), inbox_(std::move(inbox)), outbox_(std::move(outbox)), kind_(kind) {
    const auto& o = link_->options();
    slots_ = o.slots;
    max_ = o.max_message;
    batch_ = std::max<uint32_t>(1, slots_ / 4);
  }

  Status post_all_receives() {
    for (uint32_t i = 0; i < slots_; ++i)
      if (auto s = repost(i); !s) return s;
    return {};
  }

  Status send(std::span<const std::byte> data, milliseconds timeout) override {
    const Deadline d = Clock::now() + timeout;
    if (data.size() > max_)
      return fail("msg {}: {} bytes is more than the max message {}", to_string(kind_), data.size(), max_);
    auto have = [&] { return credits(sent_, link_->load(ctrl::kAckedMsgs), slots_) > 0; };
    if (!have()) {
      ++link_->stats().credit_waits;
      if (auto s = link_->wait_until(have, d, "waiting for a credit (the peer has released no slot)"); !s)
        return s;
    }
    const uint32_t len = static_cast<uint32_t>(data.size());
    const uint64_t off = (sent_ % slots_) * uint64_t{max_};
    SendWr w =
        SendWr::send_imm(outbox_.local(off, len), static_cast<uint32_t>(sent_), make_wr_id(Op::data, sent_));
    if (len <= link_->qp().max_inline()) {
      w = SendWr::send_imm(LocalBuf{const_cast<std::byte*>(data.data()), len, 0},
                           static_cast<uint32_t>(sent_), make_wr_id(Op::data, sent_))
              .inlined();
    } else {
      std::memcpy(outbox_.data() + off, data.data(), len);
    }
    if (auto s = link_->post(w, d); !s) return s;
    ++sent_;
    ++link_->stats().msgs_sent;
    link_->stats().bytes_sent += len;
    return {};
  }

  Result<std::span<const std::byte>> receive(milliseconds timeout) override {
    const Deadline d = Clock::now() + timeout;
    if (auto s = release_held(d); !s) return std::unexpected(s.error());
    auto wc = link_->next_recv(d);
    if (!wc) return std::unexpected(wc.error());
    const uint64_t slot = received_ % slots_;
    if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM) || wc->wr_id != slot ||
        imm_of(*wc) != static_cast<uint32_t>(received_) || wc->byte_len > max_)
      return std::unexpected(
          link_
              ->die(Error{fmt::format("msg {}: unexpected receive (opcode {}, slot {}, imm {}, {} "
                                      "bytes) for message {} in slot {}",
                                      to_string(kind_), static_cast<int>(wc->opcode), wc->wr_id, imm_of(*wc),
                                      wc->byte_len, received_, slot),
                          EPROTO})
              .error());
    held_ = true;
    ++received_;
    ++link_->stats().msgs_received;
    link_->stats().bytes_received += wc->byte_len;
    return std::span<const std::byte>(inbox_.data() + slot * max_, wc->byte_len);
  }

  Status flush(milliseconds timeout) override { return link_->flush(Clock::now() + timeout); }
  int event_fd() const override { return link_->event_fd(); }
  Capacity capacity() const override {
    return {credits(sent_, link_->load(ctrl::kAckedMsgs), slots_), 0, max_, slots_};
  }
  const Stats& stats() const override { return link_->stats(); }
  Kind kind() const override { return kind_; }

 private:
  Status repost(uint64_t slot) {
    auto r = RecvWr::into(inbox_.local(slot * max_, max_), slot);
    return link_->post_recv(r);
  }

  // Gives the slot of the message handed out last back, and acknowledges in batches.
  Status release_held(Deadline d) {
    if (!held_) return {};
    held_ = false;
    if (auto s = repost((received_ - 1) % slots_); !s) return s;
    ++released_;
    link_->store(ctrl::kReleasedMsgs, released_);
    if (ack_due(released_, acked_, batch_)) {
      acked_ = released_;
      return link_->write_ack(d);
    }
    return {};
  }

  std::unique_ptr<Link> link_;
  MemoryRegion inbox_, outbox_;
  Kind kind_;
  uint32_t slots_ = 0, max_ = 0, batch_ = 1;
  uint64_t sent_ = 0, received_ = 0, released_ = 0, acked_ = 0;
  bool held_ = false;
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
