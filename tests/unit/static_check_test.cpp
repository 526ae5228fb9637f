// Admission's static gate on real objects: the library's policies pass; the candidates built to be refused are,
// each for its own reason, with the evidence.
#include "admission/static_check.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace akts::admission {
namespace {

std::string obj(const char* name) { return std::string(AKTS_BPF_OBJ_DIR) + "/" + name + ".bpf.o"; }

const Finding& finding(const StaticReport& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return f;
  static Finding none{"none", false, "no such rule"};
  return none;
}

class StaticCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(obj("akts_latency")))
      GTEST_SKIP() << "built without the BPF library (AKTS_WITH_BPF=OFF)";
  }
};

TEST_F(StaticCheck, TheLibraryPasses) {
  for (const char* name : {"akts_latency", "akts_preempt", "akts_throughput", "akts_fifo", "akts_rr", "akts_wrr", "akts_ljf",
                           "akts_wfair", "akts_share", "akts_srpt", "akts_central", "akts_greedy", "akts_hoarder",
                           "akts_lc_starver", "akts_stray"}) {
    auto r = check_object(obj(name));
    ASSERT_TRUE(r) << name << ": " << r.error().to_string();
    EXPECT_TRUE(r->passed) << name << ": " << r->to_json().dump(2);
    // Seven callbacks and the scx library probe, and a policy's own subprograms (srpt has one).
    EXPECT_GE(r->evidence["programs"].size(), 8u) << name;
  }
  auto r = check_object(obj("akts_latency"));
  EXPECT_EQ(r->policy, "latency");
}

TEST_F(StaticCheck, EjectorIsRefusedForItsKernelFunctions) {
  auto r = check_object(obj("akts_ejector"));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->passed);
  const Finding& k = finding(*r, "kfuncs");
  EXPECT_FALSE(k.ok);
  EXPECT_NE(k.detail.find("scx_bpf_error_bstr: a policy may not end the scheduler"), std::string::npos) << k.detail;
  EXPECT_NE(k.detail.find("scx_bpf_create_dsq"), std::string::npos) << k.detail;
  EXPECT_FALSE(finding(*r, "queues").ok);
  EXPECT_TRUE(finding(*r, "programs").ok);
}

TEST_F(StaticCheck, SnooperIsRefusedForItsProgramAndHelper) {
  auto r = check_object(obj("akts_snooper"));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->passed);
  const Finding& p = finding(*r, "programs");
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.detail.find("tp_btf/sched_switch"), std::string::npos) << p.detail;
  const Finding& h = finding(*r, "helpers");
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.detail.find("send_signal"), std::string::npos) << h.detail;
}

TEST_F(StaticCheck, TheBudgetIsEnforced) {
  StaticLimits tight;
  tight.max_insns_per_program = 40;
  auto r = check_object(obj("akts_latency"), tight);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->passed);
  EXPECT_FALSE(finding(*r, "budget").ok);
  EXPECT_NE(finding(*r, "budget").detail.find("struct_ops/latency_dispatch"), std::string::npos);
}

TEST_F(StaticCheck, NotAnObjectIsAnError) {
  auto path = std::filesystem::temp_directory_path() / "akts-not-an-object.o";
  std::ofstream(path) << "hello";
  EXPECT_FALSE(check_object(path.string()));
  EXPECT_FALSE(check_object("/nonexistent.o"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace akts::admission
