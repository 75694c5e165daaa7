#include "controller/metrics_text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace weft::controller {

namespace {

bool name_char(char c, bool first, bool colon_ok) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (c == ':') return colon_ok;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

}  // namespace

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }
bool valid_label_name(std::string_view name) { return valid_name(name, false) && !name.starts_with("__"); }

void append_escaped_label_value(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void append_escaped_help(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);  // shortest round-trip form
  }
}

void PromText::family(std::string_view name, PromType type, std::string_view help) {
  name_.assign(name);
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  append_escaped_help(out_, help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == PromType::counter     ? " counter\n"
          : type == PromType::histogram ? " histogram\n"
                                        : " gauge\n";
}

void PromText::sample(std::initializer_list<PromLabel> labels, double value) { sample("", labels, value); }

void PromText::sample(std::string_view suffix, std::initializer_list<PromLabel> labels, double value) {
  out_ += name_;
  out_ += suffix;
  if (labels.size() != 0) {
    out_ += '{';
    bool first = true;
    for (const auto& l : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += l.name;
      out_ += "=\"";
      append_escaped_label_value(out_, l.value);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  append_value(out_, value);
  out_ += '\n';
}

}  // namespace weft::controller
