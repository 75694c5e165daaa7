#pragma once
// The AF_XDP device's bookkeeping of UMEM frames (stack/dev/xdp_device.hpp), kept apart from the
// device so it is tested without a socket: the UMEM is cut into equal frames; the first rx_count
// live with the kernel (fill ring -> RX ring -> straight back to the fill ring), the others are
// transmit frames, free in this stack until a TX descriptor takes one and the completion ring
// gives it back. A frame is known by its byte offset in the UMEM, as the rings name it. Standard
// library only; allocates only in its constructor.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace weft::stack {

class UmemFrames {
 public:
  // count frames of frame_size bytes; the first rx_count go to the fill ring (rx_addr(i)).
  UmemFrames(size_t count, size_t frame_size, size_t rx_count)
      : frame_size_(frame_size), rx_count_(rx_count < count ? rx_count : count) {
    free_.reserve(count - rx_count_);
    // Highest offset first, so the first frame taken is the lowest (only tidier to read in dumps).
    for (size_t i = count; i > rx_count_; --i) free_.push_back(static_cast<uint64_t>(i - 1) * frame_size);
    tx_total_ = free_.size();
  }
  size_t frame_size() const { return frame_size_; }
  size_t rx_count() const { return rx_count_; }
  uint64_t rx_addr(size_t i) const { return static_cast<uint64_t>(i) * frame_size_; }
  // The frame an RX descriptor's address lies in (in copy mode the kernel puts the data after a
  // headroom inside the frame, so the address need not be the frame's start).
  uint64_t frame_of(uint64_t addr) const { return addr - addr % frame_size_; }

  // A free transmit frame, or none while all are in the TX or completion rings.
  std::optional<uint64_t> take() {
    if (free_.empty()) return std::nullopt;
    const uint64_t a = free_.back();
    free_.pop_back();
    return a;
  }
  // A frame back from the completion ring (or one reserved and never committed). False for an
  // address that is no transmit frame or already free: the kernel gave back what it never had.
  bool give_back(uint64_t addr) {
    const uint64_t f = frame_of(addr);
    if (f < rx_count_ * frame_size_ || f >= (rx_count_ + tx_total_) * frame_size_ ||
        free_.size() >= tx_total_)
      return false;
    free_.push_back(f);
    return true;
  }
  size_t free_count() const { return free_.size(); }
  size_t in_flight() const { return tx_total_ - free_.size(); }

 private:
  size_t frame_size_;
  size_t rx_count_;
  size_t tx_total_ = 0;
  std::vector<uint64_t> free_;
};

}  // namespace weft::stack
