// read_pull: the receiver pulls. The sender copies a message into one of `slots` send slots it
// exposes for RDMA READ and SENDs a 16-byte notice (seq, length, offset; inline). The receiver
// checks the notice against the sequence it expects, RDMA-READs the bytes into its own slot and
// hands them out once the READ completed. Releasing the message reposts the notice's receive and
// frees the sender's slot: one count, acknowledged by WRITE in batches as in send_recv, covers
// both (the thesis's direct read signals per message instead). Work per message: 1 SEND at the
// sender, 1 RECV + 1 READ at the receiver, plus an ack WRITE per slots/4 messages.
#include <cstring>

#include "msg/link.hpp"
#include "msg/read_notice.hpp"
#include "msg/ring_math.hpp"
#include "msg/types.hpp"

namespace weft::msg {

using namespace weft::rdma;

namespace {

class ReadPull final : public Connection {
 public:
  ReadPull(std::unique_ptr<Link> link, MemoryRegion inbox, MemoryRegion outbox, MemoryRegion notices)
      : link_(std::move(link)),
        inbox_(std::move(inbox)),
        outbox_(std::move(outbox)),
        notices_(std::move(notices)) {
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
      return fail("msg read-pull: {} bytes is more than the max message {}", data.size(), max_);
    auto have = [&] { return credits(sent_, link_->load(ctrl::kAckedMsgs), slots_) > 0; };
    if (!have()) {
      ++link_->stats().credit_waits;
      if (auto s = link_->wait_until(have, d, "waiting for a credit (the peer has released no slot)"); !s)
        return s;
    }
    const uint32_t len = static_cast<uint32_t>(data.size());
    const uint64_t off = (sent_ % slots_) * uint64_t{max_};
    std::memcpy(outbox_.data() + off, data.data(), len);
    auto notice = ReadNotice{static_cast<uint32_t>(sent_), len, off}.encode();
    auto w = SendWr::send(LocalBuf{notice.data(), static_cast<uint32_t>(notice.size()), 0},
                          make_wr_id(Op::data, sent_))
                 .inlined();
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
    if (wc->opcode != IBV_WC_RECV || wc->wr_id != slot || wc->byte_len != ReadNotice::kWireSize)
      return protocol_error(
          fmt::format("unexpected receive (opcode {}, slot {}, {} bytes) for notice {} in slot {}",
                      static_cast<int>(wc->opcode), wc->wr_id, wc->byte_len, received_, slot));
    auto n = ReadNotice::decode_expected(
        {notices_.data() + slot * ReadNotice::kWireSize, ReadNotice::kWireSize}, received_, slots_, max_);
    if (!n) return protocol_error(n.error().message);
    const auto& peer = link_->peer().outbox;
    if (n->offset + n->length > peer.length)
      return protocol_error(fmt::format("notice {} points past the peer's send area", n->seq));
    if (n->length > 0) {
      RemoteBuf from{peer.addr + n->offset, peer.rkey, n->length};
      if (auto s = link_->read(inbox_.local(slot * max_, n->length), from, d); !s)
        return std::unexpected(s.error());
    }
    held_ = true;
    ++received_;
    ++link_->stats().msgs_received;
    link_->stats().bytes_received += n->length;
    return std::span<const std::byte>(inbox_.data() + slot * max_, n->length);
  }

  Status flush(milliseconds timeout) override { return link_->flush(Clock::now() + timeout); }
  int event_fd() const override { return link_->event_fd(); }
  Capacity capacity() const override {
    return {credits(sent_, link_->load(ctrl::kAckedMsgs), slots_), 0, max_, slots_};
  }
  const Stats& stats() const override { return link_->stats(); }
  Kind kind() const override { return Kind::read_pull; }

 private:
  std::unexpected<Error> protocol_error(std::string what) {
    return std::unexpected(link_->die(Error{fmt::format("msg read-pull: {}", what), EPROTO}).error());
  }

  Status repost(uint64_t slot) {
    auto r = RecvWr::into(notices_.local(slot * ReadNotice::kWireSize, ReadNotice::kWireSize), slot);
    return link_->post_recv(r);
  }

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
  MemoryRegion inbox_, outbox_, notices_;
  uint32_t slots_ = 0, max_ = 0, batch_ = 1;
  uint64_t sent_ = 0, received_ = 0, released_ = 0, acked_ = 0;
  bool held_ = false;
};

}  // namespace

Result<std::unique_ptr<Connection>> open_read_pull(SideChannel ch, const Options& o) {
  auto link = Link::create(std::move(ch), o, o.slots + 16, o.slots, false);
  if (!link) return std::unexpected(link.error());
  const size_t bytes = size_t{o.slots} * o.max_message;
  auto inbox = MemoryRegion::allocate((*link)->pd(), bytes, access::local);
  if (!inbox) return std::unexpected(inbox.error());
  auto outbox = MemoryRegion::allocate((*link)->pd(), bytes, access::local | access::remote_read);
  if (!outbox) return std::unexpected(outbox.error());
  auto notices =
      MemoryRegion::allocate((*link)->pd(), size_t{o.slots} * ReadNotice::kWireSize, access::local);
  if (!notices) return std::unexpected(notices.error());
  Hello h;
  h.kind = o.kind;
  h.max_message = o.max_message;
  h.slots = o.slots;
  h.outbox = outbox->remote();
  if (auto p = (*link)->handshake(h); !p) return std::unexpected(p.error());
  Link* l = link->get();
  auto c = std::make_unique<ReadPull>(std::move(*link), std::move(*inbox), std::move(*outbox),
                                      std::move(*notices));
  if (auto s = c->post_all_receives(); !s) return std::unexpected(s.error());
  if (auto s = l->ready(); !s) return std::unexpected(s.error());
  return std::unique_ptr<Connection>(std::move(c));
}

}  // namespace weft::msg
