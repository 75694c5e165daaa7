#pragma once
// Writer for the Prometheus text exposition format (version 0.0.4): one family at a time,
// HELP and TYPE first, then its samples, with label values and help text escaped as the format
// requires. Kept apart from what the controller exports so it can be tested on its own.
#include <initializer_list>
#include <string>
#include <string_view>

namespace weft::controller {

struct PromLabel {
  std::string_view name;
  std::string_view value;
};

enum class PromType { gauge, counter, histogram };

class PromText {
 public:
  // Starts a family. Every sample() until the next family() belongs to it; Prometheus rejects
  // a family whose samples are split, so callers emit each family in one go.
  void family(std::string_view name, PromType type, std::string_view help);
  void sample(std::initializer_list<PromLabel> labels, double value);
  void sample(double value) { sample({}, value); }
  // A sample named family + suffix (a histogram's "_bucket", "_sum", "_count").
  void sample(std::string_view suffix, std::initializer_list<PromLabel> labels, double value);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  std::string name_;
};

// The exposition's escapes: label values escape \ " and newline; HELP escapes \ and newline.
void append_escaped_label_value(std::string& out, std::string_view v);
void append_escaped_help(std::string& out, std::string_view v);
// Shortest text that reads back as the same double; NaN, +Inf, -Inf as Prometheus spells them.
void append_value(std::string& out, double v);
// [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; labels additionally may not contain ':'.
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

inline constexpr std::string_view kPromContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace weft::controller
