#pragma once
// What the interposed calls share across their files.
#include <sys/socket.h>

#include <cstdint>

#include "posix/runtime.hpp"

namespace weft::posix {

// Writes an IPv4 address (host order) into the program's sockaddr, cut to *len as the kernel does.
void fill_addr(uint32_t ip, uint16_t port, sockaddr* addr, socklen_t* len);
// Under the lock: the fresh socket `s` becomes a kernel socket on the same descriptor (freed).
int to_kernel(Sock* s);
// An epoll descriptor is being closed: its shadow of the program's registrations goes.
void close_epoll_shadow(int fd);

}  // namespace weft::posix
