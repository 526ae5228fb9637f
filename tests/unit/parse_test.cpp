#include "common/parse.h"

#include <gtest/gtest.h>

namespace akts {
namespace {

TEST(ParseU32, AcceptsPlainIntegers) {
  EXPECT_EQ(*parse_u32("0", "slot"), 0u);
  EXPECT_EQ(*parse_u32("7", "slot"), 7u);
  EXPECT_EQ(*parse_u32("4294967295", "slot"), 4294967295u);
}

// Decimal only, as documented: a base prefix or a leading zero is refused, not read.
TEST(ParseU32, RefusesHexAndLeadingZeros) {
  for (const char* bad : {"0x1", "0xffffffff", "01", "00", "0X1", "007"}) {
    auto r = parse_u32(bad, "slot");
    EXPECT_FALSE(r.ok()) << "accepted '" << bad << "'";
  }
}

// What agents and people actually type, per the paper's 0.5B model ("0.3").
TEST(ParseU32, RefusesEverythingElseWithAReason) {
  for (const char* bad : {"0.3", "-1", "", "abc", " 1", "1 ", "+1", "1e3", "4294967296", "99999999999999999999",
                          "0x", "0x1g", "１"}) {
    auto r = parse_u32(bad, "slot");
    ASSERT_FALSE(r.ok()) << "accepted '" << bad << "'";
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(r.error().message.find("slot"), std::string::npos) << r.error().message;
  }
}

TEST(ParseU32, OutOfRangeSaysSo) {
  auto r = parse_u32("4294967296", "slot");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("out of range"), std::string::npos);
}

TEST(ParseU64, Range) {
  EXPECT_EQ(*parse_u64("18446744073709551615", "n"), 18446744073709551615ull);
  EXPECT_FALSE(parse_u64("18446744073709551616", "n").ok());
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse_duration("100ms", "d")->count(), 100'000'000);
  EXPECT_EQ(parse_duration("2.5s", "d")->count(), 2'500'000'000);
  EXPECT_EQ(parse_duration("7us", "d")->count(), 7'000);
  EXPECT_EQ(parse_duration("3ns", "d")->count(), 3);
  EXPECT_EQ(parse_duration("1m", "d")->count(), 60'000'000'000);
}

TEST(ParseDuration, Refuses) {
  for (const char* bad : {"", "10", "ms", "-1s", "1.2.3s", "1 s", "5h", "1e400s", "99999999999s"})
    EXPECT_FALSE(parse_duration(bad, "d").ok()) << "accepted '" << bad << "'";
}

}  // namespace
}  // namespace akts
