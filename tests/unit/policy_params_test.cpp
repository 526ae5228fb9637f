// The library's live parameters as its objects declare them (read from each object's .rodata, no kernel):
// what `akts params` and the policy repository show comes from the policy's own source.
#include <gtest/gtest.h>

#include "exec/policy_library.h"

namespace akts {
namespace {

TEST(PolicyParams, EachLibraryPolicyDeclaresItsSliceLive) {
  for (auto [name, def] : {std::pair<const char*, uint64_t>{"latency", 1000000}, {"throughput", 20000000}}) {
    const PolicySpec* spec = find_policy(name);
    ASSERT_NE(spec, nullptr) << name;
    auto obj = spec->open();
    ASSERT_TRUE(obj) << obj.error().to_string();
    auto d = read_param_descs((*obj)->obj());
    ASSERT_TRUE(d) << d.error().to_string();
    ASSERT_EQ(d->size(), 1u) << name;
    EXPECT_EQ((*d)[0].name, "slice");
    EXPECT_EQ((*d)[0].type, AKTS_PARAM_DURATION);
    EXPECT_EQ((*d)[0].def, def);
    EXPECT_EQ((*d)[0].min, 100000u);
    EXPECT_EQ((*d)[0].max, 100000000u);
  }
  // The repository's records say what each object declares: every library policy has a live slice first.
  auto records = builtin_records();
  ASSERT_TRUE(records) << records.error().to_string();
  ASSERT_EQ(records->size(), builtin_policies().size());
  for (const auto& r : *records) {
    ASSERT_GE(r.parameters.size(), 1u) << r.name;
    EXPECT_EQ(r.parameters[0].name, "slice") << r.name;
    EXPECT_EQ(r.parameters[0].type, "duration") << r.name;
    for (const auto& p : r.parameters) EXPECT_EQ(p.applies, "live") << r.name << "." << p.name;
  }
}

TEST(PolicyParams, TheLibraryHoldsThePeeRAndSkyloftPolicies) {
  for (const char* name : {"latency", "preempt", "throughput", "fifo", "rr", "wrr", "ljf", "wfair", "share", "srpt", "central"}) {
    const PolicySpec* spec = find_policy(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_FALSE(policy_doc(name).empty()) << name << " has no opening essay";
  }
  // wrr's second parameter, as declared: a whole number with its range.
  auto obj = find_policy("wrr")->open();
  ASSERT_TRUE(obj) << obj.error().to_string();
  auto d = read_param_descs((*obj)->obj());
  ASSERT_TRUE(d) << d.error().to_string();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[1].name, "lc_weight");
  EXPECT_EQ((*d)[1].type, AKTS_PARAM_U64);
  EXPECT_EQ((*d)[1].def, 4u);
  EXPECT_EQ((*d)[1].min, 1u);
  EXPECT_EQ((*d)[1].max, 64u);
}

TEST(PolicyParams, ObjectsWithoutParametersHaveNone) {
  auto obj = greedy_fixture().open();
  ASSERT_TRUE(obj) << obj.error().to_string();
  auto d = read_param_descs((*obj)->obj());
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_TRUE(d->empty());
}

}  // namespace
}  // namespace akts
