#include "rdma/cq_poller.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "rdma/error.hpp"

namespace weft::rdma {

Result<CqPoller> CqPoller::create() {
  Fd ep(epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return fail_errno("epoll_create1");
  return CqPoller(std::move(ep));
}

Status CqPoller::watch(CompletionQueue& cq, uint64_t tag) {
  CompletionChannel* ch = cq.channel();
  if (!ch) return fail("CqPoller::watch: the CQ has no completion channel");
  auto it = std::find_if(fds_.begin(), fds_.end(), [&](const FdEntry& f) { return f.fd == ch->fd(); });
  if (it == fds_.end()) {
    if (auto s = ch->set_nonblocking(true); !s) return s;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = ch->fd();
    if (epoll_ctl(ep_.get(), EPOLL_CTL_ADD, ch->fd(), &ev) < 0)
      return fail_errno("epoll_ctl ADD completion channel");
    fds_.push_back(FdEntry{ch->fd(), true, 0, ch, 1});
  } else {
    ++it->users;
  }
  cqs_.push_back(CqEntry{cq.raw(), tag});
  return cq.arm();
}

Status CqPoller::unwatch(CompletionQueue& cq) {
  auto it = std::find_if(cqs_.begin(), cqs_.end(), [&](const CqEntry& e) { return e.cq == cq.raw(); });
  if (it == cqs_.end()) return fail("CqPoller::unwatch: CQ not watched");
  cqs_.erase(it);
  int chfd = cq.channel()->fd();
  auto f = std::find_if(fds_.begin(), fds_.end(), [&](const FdEntry& e) { return e.fd == chfd; });
  if (f != fds_.end() && --f->users == 0) {
    epoll_ctl(ep_.get(), EPOLL_CTL_DEL, chfd, nullptr);
    fds_.erase(f);
  }
  return {};
}

Status CqPoller::watch_fd(int fd, uint64_t tag, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) return fail_errno("epoll_ctl ADD fd");
  fds_.push_back(FdEntry{fd, false, tag, nullptr, 0});
  return {};
}

Status CqPoller::unwatch_fd(int fd) {
  auto f =
      std::find_if(fds_.begin(), fds_.end(), [&](const FdEntry& e) { return e.fd == fd && !e.is_channel; });
  if (f == fds_.end()) return fail("CqPoller::unwatch_fd: fd {} not watched", fd);
  fds_.erase(f);
  if (epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr) < 0) return fail_errno("epoll_ctl DEL fd");
  return {};
}

Result<int> CqPoller::wait(std::span<Ready> out, std::chrono::milliseconds timeout) {
  if (out.empty()) return fail("CqPoller::wait: no room for results");
  std::array<epoll_event, 16> evs;
  const int max = static_cast<int>(std::min(evs.size(), out.size()));
  int n;
  do n = epoll_wait(ep_.get(), evs.data(), max, timeout.count() < 0 ? -1 : static_cast<int>(timeout.count()));
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail_errno("epoll_wait");
  size_t k = 0;
  for (int i = 0; i < n; ++i) {
    auto f = std::find_if(fds_.begin(), fds_.end(), [&](const FdEntry& e) { return e.fd == evs[i].data.fd; });
    if (f == fds_.end()) continue;
    if (!f->is_channel) {
      if (k < out.size()) out[k++] = Ready{Ready::Kind::fd, f->tag, evs[i].events};
      continue;
    }
    // Drain the channel: each event names one CQ; re-arm it and report it once.
    for (;;) {
      auto cq = f->channel->get_event(std::chrono::milliseconds(-1));
      if (!cq) return std::unexpected(cq.error());
      if (*cq == nullptr) break;
      auto e = std::find_if(cqs_.begin(), cqs_.end(), [&](const CqEntry& c) { return c.cq == *cq; });
      if (e == cqs_.end()) continue;
      if (int rc = ibv_req_notify_cq(e->cq, 0)) return verb_error("ibv_req_notify_cq", rc);
      bool seen = std::any_of(out.begin(), out.begin() + static_cast<long>(k),
                              [&](const Ready& r) { return r.kind == Ready::Kind::cq && r.tag == e->tag; });
      if (!seen && k < out.size()) out[k++] = Ready{Ready::Kind::cq, e->tag, 0};
    }
  }
  return static_cast<int>(k);
}

}  // namespace weft::rdma
