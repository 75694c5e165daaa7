#pragma once
// Results instead of exceptions: every fallible call across a module boundary
// returns Result<T>, whose error carries a message that names what failed.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>
#include <utility>

namespace weft {

struct Error {
  std::string message;
  int code = 0;  // errno or a module-specific code; 0 when not applicable
};

template <typename T>
using Result = std::expected<T, Error>;

using Status = std::expected<void, Error>;

template <typename... Args>
[[nodiscard]] inline std::unexpected<Error> fail(fmt::format_string<Args...> f, Args&&... args) {
  return std::unexpected(Error{fmt::format(f, std::forward<Args>(args)...), 0});
}

// Error from errno, e.g. fail_errno("bind 0.0.0.0:7000") -> "bind 0.0.0.0:7000: Address in use".
[[nodiscard]] inline std::unexpected<Error> fail_errno(const std::string& what, int err = errno) {
  return std::unexpected(Error{fmt::format("{}: {}", what, std::strerror(err)), err});
}

}  // namespace weft
