#pragma once
// What the connection types share on top of a Link (internal to src/msg):
//  - LinkConnection: the calls every type answers the same way (flush, event fd, stats), the
//    size check, the counting and the protocol error that kills the connection;
//  - SlotWindow: the credit window of the slot types (send_recv, send_recv_srq, read_pull):
//    which slot a message uses at each end, the wait for a credit and the batched release (repost
//    the receive, count it, WRITE the count back every slots/4 messages).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

#include "msg/link.hpp"
#include "msg/ring_math.hpp"

namespace weft::msg {

class LinkConnection : public Connection {
 public:
  Status flush(milliseconds timeout) override { return link_->flush(Clock::now() + timeout); }
  int event_fd() const override { return link_->event_fd(); }
  const Stats& stats() const override { return link_->stats(); }

 protected:
  explicit LinkConnection(std::unique_ptr<Link> link) : link_(std::move(link)) {}

  Status check_size(size_t n) {
    const uint32_t max = link_->options().max_message;
    if (n > max) return fail("msg {}: {} bytes is more than the max message {}", to_string(kind()), n, max);
    return {};
  }
  // Ends the connection: what arrived is not what this end expects, so nothing more is trusted.
  std::unexpected<Error> protocol_error(std::string what) {
    return std::unexpected(
        link_->die(Error{fmt::format("msg {}: {}", to_string(kind()), what), EPROTO}).error());
  }
  void count_sent(uint64_t len) {
    ++link_->stats().msgs_sent;
    link_->stats().bytes_sent += len;
  }
  void count_received(uint64_t len) {
    ++link_->stats().msgs_received;
    link_->stats().bytes_received += len;
  }

  std::unique_ptr<Link> link_;
};

// Credits counted in messages against `slots` receives the peer keeps posted (as rsocket counts
// receive WQEs). Message n uses slot n % slots at both ends.
class SlotWindow {
 public:
  explicit SlotWindow(Link& link)
      : link_(&link),
        slots_(link.options().slots),
        max_(link.options().max_message),
        batch_(std::max<uint32_t>(1, link.options().slots / 4)) {}

  // Waits until the peer has released a slot for one more message.
  Status wait_credit(Deadline d) {
    auto have = [&] { return credits() > 0; };
    if (have()) return {};
    ++link_->stats().credit_waits;
    return link_->wait_until(have, d, "waiting for a credit (the peer has released no slot)");
  }
  uint64_t credits() const { return msg::credits(sent_, link_->load(ctrl::kAckedMsgs), slots_); }

  uint64_t sent() const { return sent_; }
  uint64_t send_offset() const { return (sent_ % slots_) * uint64_t{max_}; }  // in our send slots
  // Posts the work request that carries message sent() (len bytes) and counts it.
  Status post_message(rdma::SendWr& w, uint32_t len, Deadline d) {
    if (auto s = link_->post(w, d); !s) return s;
    ++sent_;
    ++link_->stats().msgs_sent;
    link_->stats().bytes_sent += len;
    return {};
  }

  uint64_t received() const { return received_; }
  uint64_t recv_slot() const { return received_ % slots_; }
  // Releases the message handed out last (see release_held), then waits for the completion of
  // the next receive, which belongs to message received() in recv_slot().
  template <typename Repost>
  Result<ibv_wc> next(Deadline d, Repost repost) {
    if (auto s = release_held(d, repost); !s) return std::unexpected(s.error());
    return link_->next_recv(d);
  }
  // Message received() (len bytes) was checked and handed out: release_held gives its slot back.
  void hold(uint64_t len) {
    held_ = true;
    ++received_;
    ++link_->stats().msgs_received;
    link_->stats().bytes_received += len;
  }
  // Gives the slot of the message handed out last back (repost(slot) reposts its receive) and
  // WRITEs the released count to the peer once a quarter of the slots has accumulated.
  template <typename Repost>
  Status release_held(Deadline d, Repost repost) {
    if (!held_) return {};
    held_ = false;
    if (auto s = repost((received_ - 1) % slots_); !s) return s;
    ++released_;
    link_->store(ctrl::kReleasedMsgs, released_);
    if (!ack_due(released_, acked_, batch_)) return {};
    acked_ = released_;
    if (auto s = link_->write_ack(d); !s) return s;
    return link_->arm_srq_limit();  // the receives are back: watch for the next low water
  }

  // Posts every slot's receive (at set-up) and, on an SRQ, arms its low-water event.
  template <typename Repost>
  Status post_all(Repost repost) {
    for (uint32_t i = 0; i < slots_; ++i)
      if (auto s = repost(uint64_t{i}); !s) return s;
    return link_->arm_srq_limit();
  }

  uint32_t slots() const { return slots_; }
  uint32_t max() const { return max_; }

 private:
  Link* link_;
  uint32_t slots_, max_, batch_;
  uint64_t sent_ = 0, received_ = 0, released_ = 0, acked_ = 0;
  bool held_ = false;
};

}  // namespace weft::msg
