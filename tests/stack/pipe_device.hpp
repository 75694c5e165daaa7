#pragma once
// One end of an in-memory pipe for the stack's tests: what it transmits appears in the peer's
// queue. With `offload` it completes partial checksums the way a virtio-net device does; with
// `in_place` it hands out a buffer for tx_reserve/tx_commit as AF_PACKET's TX ring does.
#include <algorithm>
#include <deque>
#include <vector>

#include "stack/device.hpp"
#include "stack/wire/checksum.hpp"

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
  Status transmit(wire::Bytes frame, const TxOffload& off) override {
    std::vector<uint8_t> f(frame.begin(), frame.end());
    if (off.needs_csum) {
      const uint16_t c = wire::csum_finish(wire::csum_add(0, wire::Bytes(f).subspan(off.csum_start)));
      f[off.csum_start + off.csum_offset] = static_cast<uint8_t>(c >> 8);
      f[off.csum_start + off.csum_offset + 1] = static_cast<uint8_t>(c);
      ++completed;
    }
    if (keep_sent) sent.push_back(f);
    if (peer_ && !drop_all) peer_->queue_.push_back(std::move(f));
    return {};
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
  size_t committed = 0;  // frames sent through tx_reserve/tx_commit

 private:
  wire::MacAddr mac_;
  bool offload_;
  PipeDevice* peer_ = nullptr;
  std::vector<uint8_t> place_ = std::vector<uint8_t>(14 + 1500);
};

}  // namespace weft::stack::test
