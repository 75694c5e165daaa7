// The write-based rings: the sender RDMA-WRITEs each message straight into a ring at the receiver
// with WRITE_WITH_IMM, whose receive completion tells the receiver its length (byte_len) and
// carries a check value (imm). Four types differ in three choices (types.hpp RingMode):
//
//   simplex_ring  plain ring: a message that would cross the end skips to the next lap (both
//                 ends apply ring_math.hpp's rule to the same length, so no marker travels);
//                 the receiver WRITEs its head back (acks) every quarter ring or slots/4 messages.
//   magic_ring    the ring is double-mapped (rdma/double_mapped_buffer.hpp) on both ends, so a
//                 message is written across the end in one WRITE and read in place, contiguous.
//   duplex_ring   magic ring, but the receiver makes no outbound call at all: a sender that finds
//                 its cached head too old RDMA-READs the receiver's head (the thesis's read-ack),
//                 so the receiver stays passive and one QP carries both directions cheaply.
//   faa_ring      magic ring; the sender reserves space by FETCH_AND_ADD on the receiver's
//                 reservation counter (the thesis's shared write: several senders could share
//                 the ring; here each connection has one, so reservations arrive in order) and
//                 names the reserved offset in imm; head by READ as in duplex_ring.
//
// Credits: each WRITE_WITH_IMM consumes a receive (posted zero-length), so the sender also counts
// messages against `slots`, like send_recv. The ring has room for the message the receiver
// still holds, a quarter ring not yet acknowledged, a skipped tail and the next message because
// open_connection requires ring >= 4 x max_message.
//
// The sender copies a message into a local shadow ring at the same offset it will have in the
// peer's ring and WRITEs from there (messages of up to 64 bytes go inline): the shadow bytes are
// only overwritten once the peer released that part of its ring, so the WRITE has completed.
#include <cstring>
#include <optional>

#include "msg/link_connection.hpp"
#include "msg/ring_math.hpp"
#include "msg/shared_ring_math.hpp"
#include "msg/types.hpp"
#include "rdma/double_mapped_buffer.hpp"

namespace weft::msg {

using namespace weft::rdma;

namespace {

// A ring's memory: plain, or double-mapped and registered over both mappings.
struct RingMemory {
  std::optional<DoubleMappedBuffer> magic;
  std::optional<MemoryRegion> mr;
  uint64_t size = 0;

  static Result<RingMemory> make(const ProtectionDomain& pd, uint64_t size, bool double_mapped, int access) {
    RingMemory r;
    r.size = size;
    if (double_mapped) {
      auto b = DoubleMappedBuffer::create(size);
      if (!b) return std::unexpected(b.error());
      r.magic = std::move(*b);
      auto mr = MemoryRegion::register_memory(pd, r.magic->data(), 2 * size, access);
      if (!mr) return std::unexpected(mr.error());
      r.mr = std::move(*mr);
    } else {
      auto mr = MemoryRegion::allocate(pd, size, access);
      if (!mr) return std::unexpected(mr.error());
      r.mr = std::move(*mr);
    }
    return r;
  }
  std::byte* at(uint64_t counter) const { return mr->data() + counter % size; }
};

class WriteRing final : public LinkConnection {
 public:
  WriteRing(std::unique_ptr<Link> link, RingMemory ring, RingMemory shadow, RingMode mode)
      : LinkConnection(std::move(link)), ring_(std::move(ring)), shadow_(std::move(shadow)), mode_(mode) {
    const auto& o = link_->options();
    slots_ = o.slots;
    max_ = o.max_message;
    size_ = ring_.size;
    batch_ = std::max<uint32_t>(1, slots_ / 4);
  }

  Status post_all_receives() {
    for (uint32_t i = 0; i < slots_; ++i)
      if (auto s = repost(); !s) return s;
    return {};
  }

  Status send(std::span<const std::byte> data, milliseconds timeout) override {
    const Deadline d = Clock::now() + timeout;
    if (auto s = check_size(data.size()); !s) return s;
    const uint64_t len = data.size();
    bool waited = false;
    // A receive at the peer for the WRITE_WITH_IMM.
    if (auto s = until([&] { return credits(sent_, acked_msgs_, slots_) > 0; }, d, waited,
                       "waiting for a credit (the peer has released no message)");
        !s)
      return s;
    Placement p;
    if (mode_.shared) {
      auto r = reserve_shared(len, d, waited);
      if (!r) return std::unexpected(r.error());
      p = *r;
    } else if (mode_.reserve_faa) {
      auto start = link_->fetch_add_peer(ctrl::kReserve, len, d);
      if (!start) return std::unexpected(start.error());
      if (*start != tail_)
        return link_->die(
            Error{fmt::format("msg faa-ring: reserved at {}, expected {} (another sender on this "
                              "ring?)",
                              *start, tail_),
                  EPROTO});
      p = {*start, *start + len};
    } else {
      p = place(tail_, len, size_, mode_.double_mapped);
    }
    if (auto s = until([&] { return fits(p, acked_bytes_, size_); }, d, waited,
                       "waiting for ring space (the peer has not released enough)");
        !s) {
      // A reservation that is never written would stall the peer's ring for good.
      if (mode_.reserve_faa) return link_->die(s.error());
      return s;
    }
    if (waited) ++link_->stats().credit_waits;
    const uint64_t off = p.start % size_;
    const uint32_t imm = mode_.reserve_faa ? static_cast<uint32_t>(off) : static_cast<uint32_t>(sent_);
    const auto& peer = link_->peer().inbox;
    RemoteBuf to{peer.addr + off, peer.rkey, static_cast<uint32_t>(len)};
    SendWr w = SendWr::write_imm(shadow_.mr->local(off, len), to, imm, make_wr_id(Op::data, sent_));
    if (len <= link_->qp().max_inline()) {
      w = SendWr::write_imm(LocalBuf{const_cast<std::byte*>(data.data()), static_cast<uint32_t>(len), 0}, to,
                            imm, make_wr_id(Op::data, sent_))
              .inlined();
    } else {
      std::memcpy(shadow_.at(p.start), data.data(), len);
    }
    if (auto s = link_->post(w, d); !s) return s;
    tail_ = p.end;
    ++sent_;
    count_sent(len);
    return {};
  }

  Result<std::span<const std::byte>> receive(milliseconds timeout) override {
    if (mode_.shared)
      return fail("msg shared-ring: this end only sends (the receiver is a SharedRingReceiver)");
    const Deadline d = Clock::now() + timeout;
    if (auto s = release_held(d); !s) return std::unexpected(s.error());
    auto wc = link_->next_recv(d);
    if (!wc) return std::unexpected(wc.error());
    if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM) || wc->byte_len > max_)
      return protocol_error(fmt::format("unexpected receive (opcode {}, {} bytes) for message {}",
                                        static_cast<int>(wc->opcode), wc->byte_len, received_));
    const uint64_t len = wc->byte_len;
    const Placement p =
        mode_.reserve_faa ? Placement{rtail_, rtail_ + len} : place(rtail_, len, size_, mode_.double_mapped);
    const uint32_t want =
        mode_.reserve_faa ? static_cast<uint32_t>(p.start % size_) : static_cast<uint32_t>(received_);
    if (imm_of(*wc) != want)
      return protocol_error(
          fmt::format("message {}: immediate {}, expected {}", received_, imm_of(*wc), want));
    held_ = p;
    rtail_ = p.end;
    ++received_;
    count_received(len);
    return std::span<const std::byte>(ring_.at(p.start), len);
  }

  Capacity capacity() const override {
    return {credits(sent_, acked_msgs_, slots_), size_ - used(acked_bytes_, tail_), max_, slots_};
  }
  Kind kind() const override {
    if (mode_.shared) return Kind::shared_ring;
    if (mode_.reserve_faa) return Kind::faa_ring;
    if (mode_.read_ack) return Kind::duplex_ring;
    return mode_.double_mapped ? Kind::magic_ring : Kind::simplex_ring;
  }

 private:
  // Refreshes the sender's view of what the peer released: from the words the peer WRITEs into
  // our control block, or by READing the peer's own counters.
  Status refresh(Deadline d) {
    if (mode_.read_ack) {
      if (auto s = link_->read_peer_ctrl(ctrl::kReleasedMsgs, 16, d); !s) return s;
      acked_msgs_ = link_->load(ctrl::kScratch);
      acked_bytes_ = link_->load(ctrl::kScratch + 8);
    } else {
      acked_msgs_ = link_->load(ctrl::kAckedMsgs);
      acked_bytes_ = link_->load(ctrl::kAckedBytes);
    }
    return {};
  }

  template <typename Pred>
  Status until(Pred ok, Deadline d, bool& waited, const char* what) {
    if (ok()) return {};
    if (auto s = refresh(d); !s) return s;
    if (ok()) return {};
    waited = true;
    if (!mode_.read_ack) return link_->wait_until([&] { return (void)refresh(d), ok(); }, d, what);
    // Each look is a READ round trip; between looks, let the receiver run.
    for (;;) {
      if (Clock::now() >= d) return fail_errno(fmt::format("msg {}: {}", to_string(kind()), what), ETIMEDOUT);
      if (auto s = link_->check_peer(); !s) return s;
      std::this_thread::yield();
      if (auto s = refresh(d); !s) return s;
      if (ok()) return {};
    }
  }

  // shared_ring: reserves reserved_bytes(len) of the peer's ring among other senders. First the
  // announcement {sequence, start unknown} and the FETCH_AND_ADD in one list (RC makes the
  // announcement visible before the reservation exists); if the space is not free yet, a second
  // announcement with the start, so the receiver knows this sender does not own an older hole
  // while it waits (shared_ring_math.hpp judge_hole).
  Result<Placement> reserve_shared(uint64_t len, Deadline d, bool& waited) {
    const uint64_t rsv = reserved_bytes(len);
    announce_ = announce_word(sent_ + 1, std::nullopt);
    auto a = SendWr::write(LocalBuf{&announce_, 8, 0}, link_->peer_ctrl(ctrl::kReserve, 8),
                           make_wr_id(Op::announce, sent_))
                 .inlined();
    auto start = link_->fetch_add(link_->peer().outbox, rsv, d, &a);
    if (!start) return std::unexpected(start.error());
    if (sent_ == link_->options().test_abandon_at) {
      // Test hook: the hole a sender leaves when it dies between reserving and writing.
      (void)link_->flush(d);
      return std::unexpected(
          link_
              ->die(Error{fmt::format("msg shared-ring: abandoned the reservation at {} (test hook)", *start),
                          ECANCELED})
              .error());
    }
    const Placement p{*start, *start + rsv};
    if (p.start % 8 != 0)
      return std::unexpected(
          link_
              ->die(
                  Error{fmt::format("msg shared-ring: reserved at {}, not a multiple of 8", p.start), EPROTO})
              .error());
    if (fits(p, acked_bytes_, size_)) return p;
    if (auto s = refresh(d); !s) return std::unexpected(s.error());
    if (fits(p, acked_bytes_, size_)) return p;
    announce_ = announce_word(sent_ + 1, p.start);
    auto b = SendWr::write(LocalBuf{&announce_, 8, 0}, link_->peer_ctrl(ctrl::kReserve, 8),
                           make_wr_id(Op::announce, sent_))
                 .inlined();
    if (auto s = link_->post(b, d); !s) return std::unexpected(s.error());
    waited = true;
    return p;
  }

  Status repost() {
    auto r = RecvWr::into(link_->ctrl_local(ctrl::kRecvSink, 0), 0);
    return link_->post_recv(r);
  }

  Status release_held(Deadline d) {
    if (!held_) return {};
    const Placement p = *held_;
    held_.reset();
    if (auto s = repost(); !s) return s;
    ++released_msgs_;
    released_bytes_ = p.end;
    link_->store(ctrl::kReleasedMsgs, released_msgs_);
    link_->store(ctrl::kReleasedBytes, released_bytes_);
    if (mode_.read_ack) return {};
    if (ack_due(released_msgs_, acked_out_msgs_, batch_) ||
        ack_due(released_bytes_, acked_out_bytes_, size_ / 4)) {
      acked_out_msgs_ = released_msgs_;
      acked_out_bytes_ = released_bytes_;
      return link_->write_ack(d);
    }
    return {};
  }

  RingMemory ring_, shadow_;
  RingMode mode_;
  uint32_t slots_ = 0, max_ = 0, batch_ = 1;
  uint64_t size_ = 0;
  // Sender: counters of what we placed and what the peer released (cached).
  uint64_t sent_ = 0, tail_ = 0, acked_msgs_ = 0, acked_bytes_ = 0;
  // Receiver.
  uint64_t received_ = 0, rtail_ = 0, released_msgs_ = 0, released_bytes_ = 0, acked_out_msgs_ = 0,
           acked_out_bytes_ = 0;
  std::optional<Placement> held_;
  // shared_ring sender: the announcement word (inline WRITEs copy it at post time).
  uint64_t announce_ = 0;
};

}  // namespace

Result<std::unique_ptr<Connection>> open_write_ring(SideChannel ch, const Options& o, RingMode mode) {
  auto link = Link::create(std::move(ch), o, o.slots + 16, o.slots, false);
  if (!link) return std::unexpected(link.error());
  const uint64_t size = ring_bytes_for(o);
  auto ring = RingMemory::make((*link)->pd(), size, mode.double_mapped, access::remote_write);
  if (!ring) return std::unexpected(ring.error());
  auto shadow = RingMemory::make((*link)->pd(), size, mode.double_mapped, access::local);
  if (!shadow) return std::unexpected(shadow.error());
  Hello h;
  h.kind = o.kind;
  h.max_message = o.max_message;
  h.slots = o.slots;
  h.ring_bytes = size;
  h.inbox = ring->mr->remote();
  if (auto p = (*link)->handshake(h); !p) return std::unexpected(p.error());
  Link* l = link->get();
  auto c = std::make_unique<WriteRing>(std::move(*link), std::move(*ring), std::move(*shadow), mode);
  if (auto s = c->post_all_receives(); !s) return std::unexpected(s.error());
  if (auto s = l->ready(); !s) return std::unexpected(s.error());
  return std::unique_ptr<Connection>(std::move(c));
}

}  // namespace weft::msg
