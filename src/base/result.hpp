#pragma once
// Results instead of exceptions: every fallible call across a module boundary
// returns Result<T>, whose error carries a message that names what failed.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <version>

#if defined(__cpp_lib_expected)
#include <expected>
#else
#include "base/expected_lite.hpp"  // clang 14's fuzz build: libstdc++'s <expected> is not usable there
#endif

namespace weft {

// weft::expected / weft::unexpected are std's, or the stand-in where the library lacks them. Code
// that the fuzzers compile (src/proto) spells them weft's way; the rest may say std::.
#if defined(__cpp_lib_expected)
using std::expected;
using std::unexpected;
#else
using lite::expected;
using lite::unexpected;
#endif

struct Error {
  std::string message;
  int code = 0;  // errno or a module-specific code; 0 when not applicable
};

template <typename T>
using Result = expected<T, Error>;

using Status = expected<void, Error>;

template <typename... Args>
[[nodiscard]] inline unexpected<Error> fail(fmt::format_string<Args...> f, Args&&... args) {
  return unexpected(Error{fmt::format(f, std::forward<Args>(args)...), 0});
}

// Error from errno, e.g. fail_errno("bind 0.0.0.0:7000") -> "bind 0.0.0.0:7000: Address in use".
[[nodiscard]] inline unexpected<Error> fail_errno(const std::string& what, int err = errno) {
  return unexpected(Error{fmt::format("{}: {}", what, std::strerror(err)), err});
}

}  // namespace weft
