// Valid UTF-8 out of whatever came in, and cuts on character boundaries.
#include "common/text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace akts {
namespace {

TEST(Text, Validity) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  for (const char* bad : {"\xff", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"})
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
}

TEST(Text, RepairReplacesOnlyTheBadBytes) {
  EXPECT_EQ(valid_utf8("a\xffz"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(valid_utf8("\xc3\xa9"), "\xc3\xa9");
}

TEST(Text, ExcerptNeverSplitsACharacterAndAlwaysSerialises) {
  std::string s;
  for (int i = 0; i < 30; ++i) s += "\xc3\xa9";  // 60 bytes of é
  std::string e = excerpt(s, 41);
  EXPECT_TRUE(is_valid_utf8(e));
  EXPECT_EQ(e.size(), 40u + 3u);  // 20 characters, then "..."
  EXPECT_EQ(e.substr(40), "...");
  EXPECT_EQ(excerpt("short"), "short");
  EXPECT_NO_THROW(nlohmann::json(excerpt("\xff\xfe\xc3")).dump());
}

TEST(Text, SplitKeepsEmptyParts) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split("a,b", ','), (V{"a", "b"}));
  EXPECT_EQ(split("a,,b,", ','), (V{"a", "", "b", ""}));
  EXPECT_EQ(split("", ','), (V{""}));
  EXPECT_EQ(split("steady:6s:1", ':'), (V{"steady", "6s", "1"}));
}

}  // namespace
}  // namespace akts
