#pragma once
// Buffers for reading many datagrams (or error-queue messages) with one recvmmsg, wired once.
//
// recvmmsg overwrites only the name and control lengths of the headers it filled (and their
// output fields), so after a read only those entries are re-armed: a wake-up that finds two
// datagrams does not rewrite 64 headers. Error-queue reads (Data = 0) pass no data buffer and no
// sender: OPT_TSONLY timestamps carry no packet, and an empty iovec spares the kernel importing
// one per message. Not copyable or movable: the headers point into the object itself.
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::net {

template <size_t N, size_t Data, size_t Control>
class RecvBatch {
 public:
  static constexpr bool kWithData = Data > 0;

  RecvBatch() {
    for (size_t i = 0; i < N; ++i) {
      msgs_[i] = {};
      if constexpr (kWithData) {
        iov_[i] = {data_[i].data(), Data};
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
        msgs_[i].msg_hdr.msg_name = &from_[i];
      }
      msgs_[i].msg_hdr.msg_control = control_[i].data();
    }
    rearm(N);
  }
  RecvBatch(const RecvBatch&) = delete;
  RecvBatch& operator=(const RecvBatch&) = delete;

  // One non-blocking recvmmsg with `flags` (e.g. MSG_ERRQUEUE) added; the number of messages
  // read, 0 when none waited or the call failed.
  int read(int fd, int flags = 0) {
    rearm(filled_);
    const int r = recvmmsg(fd, msgs_.data(), static_cast<unsigned>(N), flags | MSG_DONTWAIT, nullptr);
    filled_ = r > 0 ? static_cast<size_t>(r) : 0;
    return r > 0 ? r : 0;
  }

  static constexpr size_t capacity() { return N; }
  const msghdr& header(size_t i) const { return msgs_[i].msg_hdr; }
  std::span<const uint8_t> data(size_t i) const { return {data_[i].data(), msgs_[i].msg_len}; }
  const sockaddr_storage& sender(size_t i) const { return from_[i]; }
  socklen_t sender_length(size_t i) const { return msgs_[i].msg_hdr.msg_namelen; }

 private:
  void rearm(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if constexpr (kWithData) msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      msgs_[i].msg_hdr.msg_controllen = Control;
    }
  }

  std::array<mmsghdr, N> msgs_;
  std::array<iovec, kWithData ? N : 0> iov_;
  std::array<std::array<uint8_t, Data>, kWithData ? N : 0> data_;
  std::array<sockaddr_storage, kWithData ? N : 0> from_;
  struct alignas(cmsghdr) ControlBuffer : std::array<char, Control> {};
  std::array<ControlBuffer, N> control_;
  size_t filled_ = 0;
};

}  // namespace weft::net
