#include "controller/metrics_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace weft::controller {
namespace {

TEST(PromText, FamilyHeaderThenSamples) {
  PromText t;
  t.family("weft_x_seconds", PromType::gauge, "Some help.");
  t.sample({{"host", "a"}, {"protocol", "udp"}}, 0.25);
  t.sample(3);
  t.family("weft_y_total", PromType::counter, "Counted.");
  t.sample(7);
  EXPECT_EQ(t.text(),
            "# HELP weft_x_seconds Some help.\n"
            "# TYPE weft_x_seconds gauge\n"
            "weft_x_seconds{host=\"a\",protocol=\"udp\"} 0.25\n"
            "weft_x_seconds 3\n"
            "# HELP weft_y_total Counted.\n"
            "# TYPE weft_y_total counter\n"
            "weft_y_total 7\n");
}

TEST(PromText, EscapesLabelValuesAndHelp) {
  PromText t;
  t.family("m", PromType::gauge, "back\\slash and\nnewline, \"quotes\" stay");
  t.sample({{"host", "we\"ird\\name\nx"}}, 1);
  EXPECT_EQ(t.text(),
            "# HELP m back\\\\slash and\\nnewline, \"quotes\" stay\n"
            "# TYPE m gauge\n"
            "m{host=\"we\\\"ird\\\\name\\nx\"} 1\n");
}

TEST(PromText, ValuesRoundTripAndSpecials) {
  auto fmt = [](double v) {
    std::string s;
    append_value(s, v);
    return s;
  };
  EXPECT_EQ(fmt(0), "0");
  EXPECT_EQ(fmt(42), "42");
  EXPECT_EQ(fmt(-1.5), "-1.5");
  EXPECT_EQ(std::stod(fmt(0.1 + 0.2)), 0.1 + 0.2);  // shortest form still reads back exactly
  EXPECT_EQ(std::stod(fmt(3.3e-05)), 3.3e-05);
  EXPECT_EQ(fmt(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(fmt(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(fmt(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(fmt(1795268476.194781), "1795268476.194781");  // Unix seconds keep their microseconds
}

TEST(PromText, NameValidation) {
  EXPECT_TRUE(valid_metric_name("weft_host_loss_ratio"));
  EXPECT_TRUE(valid_metric_name("ns:rule_total"));
  EXPECT_FALSE(valid_metric_name("1abc"));
  EXPECT_FALSE(valid_metric_name("a-b"));
  EXPECT_FALSE(valid_metric_name(""));
  EXPECT_TRUE(valid_label_name("host"));
  EXPECT_FALSE(valid_label_name("a:b"));
  EXPECT_FALSE(valid_label_name("__name__"));
}

}  // namespace
}  // namespace weft::controller
