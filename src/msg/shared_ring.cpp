// The receiving end of the shared ring (shared_ring.hpp). The sending end is write_ring.cpp's
// WriteRing in its `shared` mode.
#include "msg/shared_ring.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "msg/link.hpp"
#include "msg/shared_ring_math.hpp"
#include "msg/types.hpp"
#include "rdma/double_mapped_buffer.hpp"

namespace weft::msg {

using namespace weft::rdma;

namespace {

// Word 0: the reservation counter every sender FETCH_AND_ADDs. Only the NIC changes it; the
// receiver reads it (acquire) to learn how far reservations have gone.
struct alignas(64) SharedBlock {
  uint64_t words[8]{};
};

struct Sender {
  std::unique_ptr<Link> link;
  std::optional<MemoryRegion> ring_mr, shared_mr;  // the one ring and block, registered in this link's PD
  bool gone = false;
  uint64_t arrived = 0;   // its messages that arrived
  uint64_t released = 0;  // of those, released (their receives reposted)
  uint64_t next_min = 0;  // its next message starts at or after this (its reservations only grow)
};

struct Arrived {
  uint64_t len = 0;
  unsigned sender = 0;
};

class Receiver final : public SharedRingReceiver {
 public:
  Receiver(DoubleMappedBuffer ring, std::unique_ptr<SharedBlock> shared, const Options& o)
      : ring_(std::move(ring)), shared_(std::move(shared)), size_(ring_.size()), max_(o.max_message) {}

  // Sets one sender up (its handshake, its receives) and adds it.
  Status add(SideChannel ch, const Options& o) {
    auto link = Link::create(std::move(ch), o, 4, o.slots, false);
    if (!link) return std::unexpected(link.error());
    Sender s;
    s.link = std::move(*link);
    auto rmr = MemoryRegion::register_memory(s.link->pd(), ring_.data(), 2 * size_, access::remote_write);
    if (!rmr) return std::unexpected(rmr.error());
    s.ring_mr = std::move(*rmr);
    auto smr = MemoryRegion::register_memory(s.link->pd(), shared_.get(), sizeof(SharedBlock), access::all);
    if (!smr) return std::unexpected(smr.error());
    s.shared_mr = std::move(*smr);
    Hello h;
    h.kind = Kind::shared_ring;
    h.max_message = o.max_message;
    h.slots = o.slots;
    h.ring_bytes = size_;
    h.inbox = s.ring_mr->remote();
    h.outbox = s.shared_mr->remote(0, 8);
    if (auto p = s.link->handshake(h); !p) return std::unexpected(p.error());
    for (uint32_t i = 0; i < o.slots; ++i)
      if (auto r = repost(s); !r) return r;
    s.link->store(ctrl::kReleasedBytes, head_);
    if (auto r = s.link->ready(); !r) return r;
    senders_.push_back(std::move(s));
    views_.resize(senders_.size());
    return {};
  }

  Result<SharedMessage> receive(milliseconds timeout) override {
    if (dead_) return std::unexpected(*dead_);
    const Deadline d = Clock::now() + timeout;
    release_held();
    for (unsigned spins = 0;; ++spins) {
      if (dead_) return std::unexpected(*dead_);
      if (auto it = arrived_.find(tail_); it != arrived_.end()) return deliver(it);
      if (auto s = take_arrivals(); !s) return std::unexpected(s.error());
      if (arrived_.contains(tail_)) continue;
      if ((spins & 63) != 63) continue;
      const auto now = Clock::now();
      if (now >= next_check_) {
        next_check_ = now + std::chrono::milliseconds(1);
        if (auto s = check_senders(); !s) return std::unexpected(s.error());
      }
      // The order matters (judge_hole): the reservation counter first, then the arrivals, then
      // the announcements.
      const uint64_t reserved = std::atomic_ref<uint64_t>(shared_->words[0]).load(std::memory_order_acquire);
      if (auto s = take_arrivals(); !s) return std::unexpected(s.error());
      if (arrived_.contains(tail_)) continue;
      for (size_t i = 0; i < senders_.size(); ++i)
        views_[i] = {senders_[i].gone, senders_[i].arrived, senders_[i].link->load(ctrl::kReserve)};
      const auto next = arrived_.empty() ? std::nullopt : std::optional<uint64_t>(arrived_.begin()->first);
      const HoleVerdict v = judge_hole(tail_, reserved, next, views_);
      if (v.skip) {
        ++stats_.holes;
        stats_.hole_bytes += v.to - tail_;
        tail_ = v.to;
        publish_head();
        continue;
      }
      if (v.waiting_for < 0 && arrived_.empty() && stats_.senders_gone == senders_.size())
        return fail_errno("msg shared-ring: every sender is gone and all they wrote was delivered",
                          ECONNRESET);
      if (now >= d) {
        if (v.waiting_for >= 0)
          return fail_errno(fmt::format("msg shared-ring: waiting for the message reserved at {} (sender {} "
                                        "has one in flight)",
                                        tail_, v.waiting_for),
                            ETIMEDOUT);
        return fail_errno("msg shared-ring: waiting for a message", ETIMEDOUT);
      }
      if (spins > 20000) std::this_thread::yield();
    }
  }

  const SharedStats& stats() const override { return stats_; }
  uint64_t recv_wrs() const override { return recv_wrs_; }
  unsigned senders() const override { return static_cast<unsigned>(senders_.size()); }

 private:
  Status repost(Sender& s) {
    auto r = RecvWr::into(s.link->ctrl_local(ctrl::kRecvSink, 0), 0);
    if (auto st = s.link->post_recv(r); !st) return st;
    ++recv_wrs_;
    return {};
  }

  Result<SharedMessage> deliver(std::map<uint64_t, Arrived>::iterator it) {
    const uint64_t start = it->first;
    const Arrived a = it->second;
    arrived_.erase(it);
    held_ = {start, a};
    tail_ = start + reserved_bytes(a.len);
    ++stats_.delivered;
    stats_.bytes += a.len;
    return SharedMessage{std::span<const std::byte>(ring_.data() + start % size_, a.len), a.sender};
  }

  // Gives the message handed out last back: its sender gets its receive (a credit) back, every
  // sender sees the ring released up to the tail.
  void release_held() {
    if (!held_) return;
    Sender& s = senders_[held_->second.sender];
    held_.reset();
    if (!s.gone) {
      if (auto r = repost(s); !r) mark_gone(s);
      ++s.released;
      s.link->store(ctrl::kReleasedMsgs, s.released);
    }
    publish_head();
  }

  void publish_head() {
    head_ = tail_;
    for (Sender& s : senders_)
      if (!s.gone) s.link->store(ctrl::kReleasedBytes, head_);
  }

  Status take_arrivals() {
    for (unsigned i = 0; i < senders_.size(); ++i) {
      Sender& s = senders_[i];
      if (s.gone) continue;
      for (;;) {
        auto n = s.link->poll_recv(batch_);
        if (!n) {
          mark_gone(s);
          break;
        }
        for (int k = 0; k < *n; ++k) {
          const ibv_wc& wc = batch_[static_cast<size_t>(k)];
          if (wc.status != IBV_WC_SUCCESS) {
            // Its QP failed: what arrived before stands, nothing more of it is trusted.
            mark_gone(s);
            break;
          }
          if (auto a = accept(wc, i); !a) return a;
        }
        if (s.gone || *n < static_cast<int>(batch_.size())) break;
      }
    }
    return {};
  }

  // Checks an arrival and keeps it until its turn. Anything out of place ends the receiver: a
  // sender that writes outside its reservation may have overwritten another's message.
  Status accept(const ibv_wc& wc, unsigned i) {
    Sender& s = senders_[i];
    auto bad = [&](std::string what) {
      dead_ = Error{fmt::format("msg shared-ring: sender {}: {}", i, what), EPROTO};
      return std::unexpected(*dead_);
    };
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM))
      return bad(fmt::format("unexpected receive (opcode {})", static_cast<int>(wc.opcode)));
    const uint64_t len = wc.byte_len, off = imm_of(wc);
    if (len > max_) return bad(fmt::format("{} bytes, more than the max message {}", len, max_));
    if (off >= size_ || off % 8 != 0)
      return bad(fmt::format("offset {} is not a reservation in the ring", off));
    const uint64_t start = counter_at(tail_, off, size_), end = start + reserved_bytes(len);
    if (start < s.next_min)
      return bad(fmt::format("message at {} before its previous one ended ({})", start, s.next_min));
    if (end - head_ > size_)
      return bad(fmt::format("message at {} runs past the free ring (head {})", start, head_));
    auto next = arrived_.lower_bound(start);
    if (next != arrived_.end() && next->first < end)
      return bad(fmt::format("message at {} overlaps the one at {}", start, next->first));
    if (next != arrived_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + reserved_bytes(prev->second.len) > start)
        return bad(fmt::format("message at {} overlaps the one at {}", start, prev->first));
    }
    arrived_.emplace(start, Arrived{len, i});
    ++s.arrived;
    s.next_min = end;
    return {};
  }

  // Looks for senders that went away (side channel closed, QP fatal).
  Status check_senders() {
    for (Sender& s : senders_)
      if (!s.gone && !s.link->check_peer_now()) mark_gone(s);
    return {};
  }

  // Fences a sender that is gone and takes what it completed before; from here on judge_hole
  // may skip reservations it left.
  void mark_gone(Sender& s) {
    if (s.gone) return;
    (void)s.link->fence();
    const unsigned i = static_cast<unsigned>(&s - senders_.data());
    for (int rounds = 0; rounds < 1024; ++rounds) {
      auto n = s.link->poll_recv(batch_);
      if (!n || *n == 0) break;
      for (int k = 0; k < *n; ++k)
        if (batch_[static_cast<size_t>(k)].status == IBV_WC_SUCCESS)
          (void)accept(batch_[static_cast<size_t>(k)], i);
    }
    s.gone = true;
    ++stats_.senders_gone;
  }

  DoubleMappedBuffer ring_;
  std::unique_ptr<SharedBlock> shared_;
  uint64_t size_;
  uint32_t max_;
  std::vector<Sender> senders_;
  std::vector<SenderView> views_;
  std::map<uint64_t, Arrived> arrived_;  // by start counter; all at or after tail_
  uint64_t tail_ = 0, head_ = 0;         // next to deliver; released up to
  std::optional<std::pair<uint64_t, Arrived>> held_;
  std::array<ibv_wc, 16> batch_{};
  SharedStats stats_;
  uint64_t recv_wrs_ = 0;
  std::optional<Error> dead_;
  Clock::time_point next_check_{};
};

}  // namespace

Result<std::unique_ptr<SharedRingReceiver>> open_shared_receiver(std::vector<SideChannel> channels,
                                                                 const Options& o) {
  if (o.kind != Kind::shared_ring) return fail("msg: a shared receiver needs kind shared-ring");
  if (channels.empty() || channels.size() > 64)
    return fail("msg shared-ring: {} senders is outside 1..64", channels.size());
  if (o.max_message == 0 || o.max_message > (1u << 24))
    return fail("msg: max message {} bytes is outside 1..16 MiB", o.max_message);
  if (o.slots < 2 || o.slots > 4096) return fail("msg: {} slots is outside 2..4096", o.slots);
  const uint64_t size = ring_bytes_for(o);
  if (size < 4 * reserved_bytes(o.max_message) || size > (uint64_t{1} << 32))
    return fail("msg shared-ring: a {}-byte ring is outside 4 x max message ({})..4 GiB", size,
                o.max_message);
  auto ring = DoubleMappedBuffer::create(size);
  if (!ring) return std::unexpected(ring.error());
  auto r = std::make_unique<Receiver>(std::move(*ring), std::make_unique<SharedBlock>(), o);
  for (auto& ch : channels)
    if (auto s = r->add(std::move(ch), o); !s) return std::unexpected(s.error());
  return std::unique_ptr<SharedRingReceiver>(std::move(r));
}

}  // namespace weft::msg
