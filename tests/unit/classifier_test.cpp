#include "classify/classifier.h"

#include <gtest/gtest.h>

#include "akts.h"

namespace akts {
namespace {

constexpr uint32_t LC = AKTS_CLASS_LC, BE = AKTS_CLASS_BE;

Matcher comm(const char* c, uint32_t cls) { return {Matcher::Kind::kComm, 0, c, cls}; }
Matcher cgroup(const char* c, uint32_t cls) { return {Matcher::Kind::kCgroup, 0, c, cls}; }
Matcher pid(uint32_t p, uint32_t cls) { return {Matcher::Kind::kPid, p, "", cls}; }

TEST(Classifier, PrecedenceExplicitPidCgroupCommParent) {
  ProcInfo p{100, 1, "server", "/serving/w1"};
  // comm alone
  EXPECT_EQ(Classifier({comm("server", BE)}).classify(p, {})->reason, "comm server");
  // cgroup beats comm, whatever the order in the config
  auto d = Classifier({comm("server", BE), cgroup("/serving", LC)}).classify(p, {});
  EXPECT_EQ(d->cls, LC);
  EXPECT_EQ(d->reason, "cgroup /serving");
  // pid beats cgroup
  d = Classifier({cgroup("/serving", LC), pid(100, BE)}).classify(p, {});
  EXPECT_EQ(d->cls, BE);
  EXPECT_EQ(d->reason, "pid 100");
  // explicit beats everything
  Classifier c({pid(100, BE)});
  c.set_explicit(100, LC);
  EXPECT_EQ(c.classify(p, {})->reason, "explicit");
  c.clear_explicit(100);
  EXPECT_EQ(c.classify(p, {})->cls, BE);
}

TEST(Classifier, ChildrenInheritOnlyWhenNoRuleNamesThem) {
  Classifier c({comm("batch", BE)});
  Decision parent{LC, "explicit"};
  auto d = c.classify({200, 100, "child", "/"}, parent);
  EXPECT_EQ(d->cls, LC);
  EXPECT_EQ(d->reason, "inherited from 100");
  d = c.classify({201, 100, "batch", "/"}, parent);
  EXPECT_EQ(d->cls, BE);
  EXPECT_FALSE(c.classify({202, 1, "other", "/"}, {}).has_value());
}

TEST(Classifier, CgroupMatchesWholeComponents) {
  EXPECT_TRUE(cgroup_within("/a", "/a"));
  EXPECT_TRUE(cgroup_within("/a/b", "/a"));
  EXPECT_FALSE(cgroup_within("/ab", "/a"));
  EXPECT_FALSE(cgroup_within("/", "/a"));
  EXPECT_TRUE(cgroup_within("/x", "/"));
}

TEST(ProcFs, ParsesStatWithAwkwardComm) {
  auto p = parse_proc_stat("4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560 ...");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tgid, 4242u);
  EXPECT_EQ(p->comm, "my (odd) prog");
  EXPECT_EQ(p->ppid, 17u);
  EXPECT_FALSE(parse_proc_stat("garbage").ok());
  EXPECT_FALSE(parse_proc_stat("12 (x)").ok());
}

TEST(ProcFs, CgroupV2Line) {
  EXPECT_EQ(parse_cgroup_v2("0::/serving/w1\n"), "/serving/w1");
  EXPECT_EQ(parse_cgroup_v2("12:cpu:/old\n0::/new\n"), "/new");
  EXPECT_EQ(parse_cgroup_v2(""), "");
}

}  // namespace
}  // namespace akts
