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
  // The repository's records say the same, as live parameters.
  auto records = builtin_records();
  ASSERT_TRUE(records) << records.error().to_string();
  ASSERT_EQ(records->size(), builtin_policies().size());
  for (const auto& r : *records) {
    ASSERT_EQ(r.parameters.size(), 1u) << r.name;
    EXPECT_EQ(r.parameters[0].name, "slice");
    EXPECT_EQ(r.parameters[0].type, "duration");
    EXPECT_EQ(r.parameters[0].applies, "live");
  }
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
