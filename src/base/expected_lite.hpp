#pragma once
// A small stand-in for std::expected, used only where the standard library does not provide it:
// the libFuzzer build (clang 14 with libstdc++ 12, whose <expected> needs C++20 concepts that clang
// 14 does not announce). It has what weft's code uses of std::expected (construction from a value
// or an unexpected, bool test, *, ->, value(), error()), so parsers can be fuzzed as they are built.
// result.hpp picks it; nothing else includes it.
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace weft::lite {

template <typename E>
class unexpected {
 public:
  explicit unexpected(E e) : e_(std::move(e)) {}
  const E& error() const& { return e_; }
  E& error() & { return e_; }
  E&& error() && { return std::move(e_); }

 private:
  E e_;
};
template <typename E>
unexpected(E) -> unexpected<E>;

template <typename T>
inline constexpr bool is_unexpected = false;
template <typename E>
inline constexpr bool is_unexpected<unexpected<E>> = true;

template <typename T, typename E>
class expected;

template <typename T>
inline constexpr bool is_expected = false;
template <typename T, typename E>
inline constexpr bool is_expected<expected<T, E>> = true;

template <typename T, typename E>
class expected {
 public:
  expected() requires std::is_default_constructible_v<T> : v_(std::in_place_index<0>) {}
  template <typename U = T>
  requires(std::is_constructible_v<T, U&&> && !is_expected<std::remove_cvref_t<U>> &&
           !is_unexpected<std::remove_cvref_t<U>>) expected(U&& v)
      : v_(std::in_place_index<0>, std::forward<U>(v)) {}
  template <typename G>
  expected(const unexpected<G>& u) : v_(std::in_place_index<1>, u.error()) {}
  template <typename G>
  expected(unexpected<G>&& u) : v_(std::in_place_index<1>, std::move(u).error()) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& operator*() & { return *std::get_if<0>(&v_); }
  const T& operator*() const& { return *std::get_if<0>(&v_); }
  T&& operator*() && { return std::move(*std::get_if<0>(&v_)); }
  T* operator->() { return std::get_if<0>(&v_); }
  const T* operator->() const { return std::get_if<0>(&v_); }
  // No exceptions here: a value() of an error is a bug the fuzzer should report.
  T& value() & { return has_value() ? **this : (std::abort(), **this); }
  const T& value() const& { return has_value() ? **this : (std::abort(), **this); }
  E& error() & { return *std::get_if<1>(&v_); }
  const E& error() const& { return *std::get_if<1>(&v_); }

 private:
  std::variant<T, E> v_;
};

template <typename E>
class expected<void, E> {
 public:
  expected() = default;
  template <typename G>
  expected(const unexpected<G>& u) : e_(u.error()) {}
  template <typename G>
  expected(unexpected<G>&& u) : e_(std::move(u).error()) {}

  bool has_value() const { return !e_.has_value(); }
  explicit operator bool() const { return has_value(); }
  void operator*() const {}
  void value() const {
    if (e_) std::abort();
  }
  E& error() & { return *e_; }
  const E& error() const& { return *e_; }

 private:
  std::optional<E> e_;
};

}  // namespace weft::lite
