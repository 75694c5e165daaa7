#pragma once
// One end of an in-memory pipe for the stack's tests: what it transmits appears in the peer's
// queue. With `offload` it completes partial checksums the way a virtio-net device does; with
// `in_place` it hands out a buffer for tx_reserve/tx_commit as AF_PACKET's TX ring does. With
// `split_over` set, a queued frame longer than that waits "in the kernel" as a super-frame does on
// AF_PACKET: rx_peek_large() shows its first `split_head` bytes and receive_split() reads it. With
// `scatter` it reads every frame as a TAP does, into two pieces the caller names (receive_scatter).
// With `hold` what it transmits waits for flush(), as in AF_PACKET's sendmmsg batch.
#include <algorithm>
#include <deque>
#include <vector>

#include "stack/dev/device.hpp"
#include "stack/wire/checksum.hpp"
#include "stack/wire/frame.hpp"

namespace weft::stack::test {

class PipeDevice : public Device {
 public:
  PipeDevice(wire::MacAddr mac, bool offload) : mac_(mac), offload_(offload) {}
  void connect(PipeDevice* peer) { peer_ = peer; }
  Result<RxInfo> receive(wire::MutBytes buf) override {
    if (queue_.empty()) return RxInfo{};
    auto f = std::move(queue_.front());
    queue_.pop_front();
    if (f.size() > buf.size()) return fail("frame too big");
    std::copy(f.begin(), f.end(), buf.begin());
    return RxInfo{f.size(), false};
  }
  bool rx_peek_large(RxPeek& out, size_t i = 0) override {
    if (split_over == 0 || queue_.size() <= i) return false;
    for (size_t k = 0; k <= i; ++k)
      if (queue_[k].size() <= split_over) return false;  // a run of large frames only
    const auto& f = queue_[i];
    out.head = wire::Bytes(f.data(), std::min(split_head, f.size()));
    out.len = f.size();
    wire::ParsedFrame p;  // "verified" only if it is: the device checked the checksums
    out.csum_verified = wire::parse_frame(f, p) == wire::ParseError::ok;
    return true;
  }
  Status receive_split(wire::MutBytes head, wire::MutBytes rest) override {
    if (queue_.empty() || queue_.front().size() != head.size() + rest.size())
      return fail("split: wrong sizes");
    const auto f = std::move(queue_.front());
    queue_.pop_front();
    std::copy(f.begin(), f.begin() + static_cast<long>(head.size()), head.begin());
    std::copy(f.begin() + static_cast<long>(head.size()), f.end(), rest.begin());
    ++split_reads;
    return {};
  }
  size_t receive_split_run(std::span<SplitDest> d) override {
    ++split_runs;
    const size_t n = Device::receive_split_run(d.first(std::min(d.size(), split_run_max)));
    split_run_frames += n;
    return n;
  }
  bool rx_scatter() const override { return scatter; }
  Result<RxInfo> receive_scatter(wire::MutBytes head, wire::MutBytes rest) override {
    if (queue_.empty()) return RxInfo{};
    const auto f = std::move(queue_.front());
    queue_.pop_front();
    if (f.size() > head.size() + rest.size()) return fail("frame too big");
    const size_t h = std::min(f.size(), head.size());
    std::copy(f.begin(), f.begin() + static_cast<long>(h), head.begin());
    std::copy(f.begin() + static_cast<long>(h), f.end(), rest.begin());
    ++scatter_reads;
    if (h < f.size()) ++scatter_split;
    wire::ParsedFrame p;  // "verified" only if it is, as a TAP's vnet header says
    return RxInfo{f.size(), wire::parse_frame(f, p) == wire::ParseError::ok};
  }
  Status transmit(wire::Bytes frame, const TxOffload& off) override {
    std::vector<uint8_t> f(frame.begin(), frame.end());
    if (off.needs_csum) {
      const uint16_t c = wire::csum_finish(wire::csum_add(0, wire::Bytes(f).subspan(off.csum_start)));
      f[off.csum_start + off.csum_offset] = static_cast<uint8_t>(c >> 8);
      f[off.csum_start + off.csum_offset + 1] = static_cast<uint8_t>(c);
      ++completed;
    }
    if (keep_sent) sent.push_back(f);
    if (lose_every != 0 && f.size() > 200 && ++large_sent % lose_every == 0) {
      ++lost;
      return {};
    }
    if (hold && !drop_all)
      held.push_back(std::move(f));
    else if (peer_ && !drop_all)
      peer_->queue_.push_back(std::move(f));
    return {};
  }
  void flush() override {
    ++flushes;
    for (auto& f : held)
      if (peer_) peer_->queue_.push_back(std::move(f));
    held.clear();
  }
  wire::MutBytes tx_reserve(size_t max_len) override {
    if (!in_place || max_len > place_.size()) return {};
    std::fill(place_.begin(), place_.end(), 0xee);  // what the last frame left must not leak into this one
    return wire::MutBytes(place_.data(), max_len);
  }
  Status tx_commit(size_t len, const TxOffload& off) override {
    if (len > place_.size()) return fail("commit past the reservation");
    ++committed;
    return transmit(wire::Bytes(place_.data(), len), off);
  }
  wire::MacAddr mac() const override { return mac_; }
  size_t mtu() const override { return 1500; }
  bool tx_csum_offload() const override { return offload_; }

  std::deque<std::vector<uint8_t>> queue_;
  std::vector<std::vector<uint8_t>> sent;
  bool keep_sent = true;  // off for tests that send millions of frames
  size_t completed = 0;
  bool drop_all = false;
  bool in_place = false;
  size_t committed = 0;   // frames sent through tx_reserve/tx_commit
  size_t split_over = 0;  // 0: no split receive
  size_t split_head = 128;
  size_t split_reads = 0;
  size_t split_run_max = 16;  // frames one receive_split_run takes at most (1: one call each)
  size_t split_runs = 0;      // receive_split_run calls
  size_t split_run_frames = 0;
  bool scatter = false;      // receive_scatter (a TAP's readv into the caller's pieces)
  size_t scatter_reads = 0;  // frames read by it
  size_t scatter_split = 0;  // of those, frames that reached the second piece
  size_t lose_every = 0;     // every so many frames past 200 bytes are lost on the way (0: none)
  size_t large_sent = 0;
  size_t lost = 0;
  bool hold = false;  // frames wait for flush() as in a batching device's queue
  std::vector<std::vector<uint8_t>> held;
  size_t flushes = 0;

 private:
  wire::MacAddr mac_;
  bool offload_;
  PipeDevice* peer_ = nullptr;
  std::vector<uint8_t> place_ = std::vector<uint8_t>(14 + 1500);
};

}  // namespace weft::stack::test
