// read_pull: the receiver pulls. The sender copies a message into one of `slots` send slots it
// exposes for RDMA READ and SENDs a 16-byte notice (seq, length, offset; inline). The receiver
// checks the notice against the sequence it expects, RDMA-READs the bytes into its own slot and
// hands them out once the READ completed. Releasing the message reposts the notice's receive and
// frees the sender's slot: one count, acknowledged by WRITE in batches as in send_recv, covers
// both (the thesis's direct read signals per message instead). Work per message: 1 SEND at the
// sender, 1 RECV + 1 READ at the receiver, plus an ack WRITE per slots/4 messages.
#include <cstring>

#include "msg/link_connection.hpp"
#include "msg/read_notice.hpp"
#include "msg/types.hpp"

namespace weft::msg {

using namespace weft::rdma;

namespace {

class ReadPull final : public LinkConnection {
 public:
  ReadPull(std::unique_ptr<Link> link, MemoryRegion inbox, MemoryRegion outbox, MemoryRegion notices)
      : LinkConnection(std::move(link)),
        inbox_(std::move(inbox)),
        outbox_(std::move(outbox)),
        notices_(std::move(notices)),
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
    std::memcpy(outbox_.data() + off, data.data(), len);
    auto notice = ReadNotice{static_cast<uint32_t>(win_.sent()), len, off}.encode();
    auto w = SendWr::send(LocalBuf{notice.data(), static_cast<uint32_t>(notice.size()), 0},
                          make_wr_id(Op::data, win_.sent()))
                 .inlined();
    return win_.post_message(w, len, d);
  }

  Result<std::span<const std::byte>> receive(milliseconds timeout) override {
    const Deadline d = Clock::now() + timeout;
    auto wc = win_.next(d, [&](uint64_t slot) { return repost(slot); });
    if (!wc) return std::unexpected(wc.error());
    const uint64_t slot = win_.recv_slot(), seq = win_.received();
    if (wc->opcode != IBV_WC_RECV || wc->wr_id != slot || wc->byte_len != ReadNotice::kWireSize)
      return protocol_error(
          fmt::format("unexpected receive (opcode {}, slot {}, {} bytes) for notice {} in slot {}",
                      static_cast<int>(wc->opcode), wc->wr_id, wc->byte_len, seq, slot));
    auto n =
        ReadNotice::decode_expected({notices_.data() + slot * ReadNotice::kWireSize, ReadNotice::kWireSize},
                                    seq, win_.slots(), win_.max());
    if (!n) return protocol_error(n.error().message);
    const auto& peer = link_->peer().outbox;
    if (n->offset + n->length > peer.length)
      return protocol_error(fmt::format("notice {} points past the peer's send area", n->seq));
    std::byte* into = inbox_.data() + slot * win_.max();
    if (n->length > 0) {
      RemoteBuf from{peer.addr + n->offset, peer.rkey, n->length};
      if (auto s = link_->read(inbox_.local(slot * win_.max(), n->length), from, d); !s)
        return std::unexpected(s.error());
    }
    win_.hold(n->length);
    return std::span<const std::byte>(into, n->length);
  }

  Capacity capacity() const override { return {win_.credits(), 0, win_.max(), win_.slots()}; }
  Kind kind() const override { return Kind::read_pull; }

 private:
  Status repost(uint64_t slot) {
    auto r = RecvWr::into(notices_.local(slot * ReadNotice::kWireSize, ReadNotice::kWireSize), slot);
    return link_->post_recv(r);
  }

  MemoryRegion inbox_, outbox_, notices_;
  SlotWindow win_;
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
