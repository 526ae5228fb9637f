// Live parameters without a kernel: descriptors as a policy's .rodata holds them, checked; values in every
// form a person or an agent sends them, parsed strictly against the range.
#include "params/params.h"

#include <cstring>

#include <gtest/gtest.h>

namespace akts {
namespace {

struct Descs {
  akts_param_desc d[AKTS_MAX_PARAMS]{};
  akts_param_desc& add(uint32_t i, uint32_t type, const char* name, uint64_t def, uint64_t min, uint64_t max) {
    d[i].type = type;
    d[i].def = def;
    d[i].min = min;
    d[i].max = max;
    std::strncpy(d[i].name, name, sizeof(d[i].name) - 1);
    std::strncpy(d[i].unit, "ns", sizeof(d[i].unit) - 1);
    std::strncpy(d[i].desc, "a knob", sizeof(d[i].desc) - 1);
    return d[i];
  }
  Result<std::vector<ParamDesc>> parse() const { return parse_param_descs(d, sizeof(d)); }
};

TEST(ParamDescs, UsedEntriesComeBackWithTheirIndex) {
  Descs s;
  s.add(0, AKTS_PARAM_DURATION, "quantum", 2000000, 100000, 100000000);
  s.add(3, AKTS_PARAM_PERCENT, "share", 25, 0, 75);
  auto r = s.parse();
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "quantum");
  EXPECT_EQ((*r)[0].format((*r)[0].def), "2ms");
  EXPECT_EQ((*r)[1].index, 3u);
  EXPECT_EQ((*r)[1].to_json()["max"], 75);
  Descs none;
  auto empty = none.parse();
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(ParamDescs, MalformedDescriptorsAreRefusedWithTheReason) {
  auto refused = [](Descs s, const char* why) {
    auto r = s.parse();
    ASSERT_FALSE(r) << why;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  };
  Descs a;
  a.add(0, 9, "x", 0, 0, 1);
  refused(a, "unknown type");
  Descs b;
  b.add(0, AKTS_PARAM_U64, "Bad-Name", 0, 0, 1);
  refused(b, "not a parameter name");
  Descs c;
  c.add(0, AKTS_PARAM_U64, "x", 5, 6, 9);
  refused(c, "outside its range");
  Descs d;
  d.add(0, AKTS_PARAM_U64, "x", 1, 0, 9);
  d.add(1, AKTS_PARAM_U64, "x", 1, 0, 9);
  refused(d, "declared twice");
  Descs e;
  e.add(0, AKTS_PARAM_BOOL, "on", 1, 0, 2);
  refused(e, "bool");
  Descs f;
  f.add(0, AKTS_PARAM_PERCENT, "share", 50, 0, 150);
  refused(f, "percent");
  Descs g;
  g.add(0, AKTS_PARAM_U64, "x", 1, 0, 9);
  std::memset(g.d[0].unit, 'u', sizeof(g.d[0].unit));  // no NUL
  refused(g, "terminating NUL");
  Descs esc;  // shown on terminals and to agents: no escapes, no line breaks, no invalid UTF-8
  std::strcpy(esc.add(0, AKTS_PARAM_U64, "x", 1, 0, 9).desc, "fine\x1b[2J");
  refused(esc, "control character (0x1b)");
  Descs nl;
  std::strcpy(nl.add(0, AKTS_PARAM_U64, "x", 1, 0, 9).unit, "m\ns");
  refused(nl, "its unit holds a control character (0x0a)");
  Descs c1;  // CSI as U+009B, valid UTF-8
  std::strcpy(c1.add(0, AKTS_PARAM_U64, "x", 1, 0, 9).desc, "a\xc2\x9b" "2J");
  refused(c1, "control character or line separator");
  Descs ls;  // U+2028
  std::strcpy(ls.add(0, AKTS_PARAM_U64, "x", 1, 0, 9).desc, "one\xe2\x80\xa8two");
  refused(ls, "control character or line separator");
  Descs bad8;
  std::strcpy(bad8.add(0, AKTS_PARAM_U64, "x", 1, 0, 9).desc, "caf\xc3");
  refused(bad8, "not UTF-8");
  Descs fine;
  std::strcpy(fine.add(0, AKTS_PARAM_U64, "x", 1, 0, 9).desc, "multi-byte is fine: caf\xc3\xa9, \xe2\x89\xa4 5 \xc2\xb5s");
  EXPECT_TRUE(fine.parse());
  Descs h;
  EXPECT_FALSE(parse_param_descs(h.d, sizeof(h.d) - 1));
}

ParamDesc duration() {
  ParamDesc d;
  d.name = "quantum";
  d.type = AKTS_PARAM_DURATION;
  d.def = 2000000;
  d.min = 100000;
  d.max = 100000000;
  return d;
}

TEST(ParamValues, DurationsInEveryWrittenForm) {
  auto d = duration();
  EXPECT_EQ(*parse_param_value(d, "5ms"), 5000000u);
  EXPECT_EQ(*parse_param_value(d, "250us"), 250000u);
  EXPECT_EQ(*parse_param_value(d, "1.5ms"), 1500000u);
  EXPECT_EQ(*parse_param_value(d, "0.1s"), 100000000u);
  EXPECT_EQ(*parse_param_value(d, "8.2ms"), 8200000u);  // exact, not 8199999.99...
  EXPECT_EQ(*parse_param_value(d, "1.001ms"), 1001000u);
  EXPECT_EQ(*parse_param_value(d, ".5ms"), 500000u);
  EXPECT_FALSE(parse_param_value(d, "1.0000001ms"));    // a fraction of a ns
  EXPECT_EQ(*parse_param_value(d, 3000000), 3000000u);
  EXPECT_EQ(*parse_param_value(d, "3000000"), 3000000u);
  for (nlohmann::json bad : {nlohmann::json("5 ms"), nlohmann::json("fast"), nlohmann::json(""), nlohmann::json("."),
                             nlohmann::json("1.2.3ms"), nlohmann::json(-1), nlohmann::json(0.3),
                             nlohmann::json("1e3ms"), nlohmann::json(nullptr), nlohmann::json::array(),
                             nlohmann::json("5ms; rm -rf /"), nlohmann::json("\xff\xfe")}) {
    auto r = parse_param_value(d, bad);
    EXPECT_FALSE(r) << bad.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  auto low = parse_param_value(d, "50us");
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().message.find("100us to 100ms"), std::string::npos) << low.error().message;
  EXPECT_FALSE(parse_param_value(d, "1s"));
}

TEST(ParamValues, BoolsPercentsAndWholeNumbers) {
  ParamDesc b;
  b.name = "on";
  b.type = AKTS_PARAM_BOOL;
  b.max = 1;
  EXPECT_EQ(*parse_param_value(b, true), 1u);
  EXPECT_EQ(*parse_param_value(b, "false"), 0u);
  EXPECT_FALSE(parse_param_value(b, "yes"));
  EXPECT_FALSE(parse_param_value(b, 2));
  ParamDesc p;
  p.name = "share";
  p.type = AKTS_PARAM_PERCENT;
  p.max = 75;
  EXPECT_EQ(*parse_param_value(p, "40%"), 40u);
  EXPECT_EQ(*parse_param_value(p, 40), 40u);
  EXPECT_FALSE(parse_param_value(p, "80%"));
  EXPECT_FALSE(parse_param_value(p, "0.3"));
  EXPECT_FALSE(parse_param_value(p, "-1"));
  ParamDesc u;
  u.name = "depth";
  u.type = AKTS_PARAM_U64;
  u.max = 1000;
  EXPECT_EQ(*parse_param_value(u, 7.0), 7u);
  EXPECT_FALSE(parse_param_value(u, 7.5));
  EXPECT_FALSE(parse_param_value(u, "99999999999999999999999"));
}

TEST(ParamValues, TargetsArePolicyDotParam) {
  auto t = split_param_target("rr.quantum");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, "rr");
  EXPECT_EQ(t->second, "quantum");
  for (const char* bad : {"rr", ".quantum", "rr.", "a.b.c", ""}) EXPECT_FALSE(split_param_target(bad)) << bad;
}

}  // namespace
}  // namespace akts
