// The policy repository: the schema's checks, seeding, appending under a lock from several processes.
#include "repository/policy_repository.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace akts {
namespace {

using json = nlohmann::json;

PolicyRecord sample(const std::string& name = "latency") {
  PolicyRecord r;
  r.name = name;
  r.description = "short slices";
  r.pick_when = "bursts";
  ParamRecord p;
  p.name = "slice_ns";
  p.type = "u64";
  p.default_value = 1000000;
  p.min = 100000;
  p.max = 100000000;
  p.unit = "ns";
  r.parameters.push_back(p);
  return r;
}

ResultRecord result(double v) {
  ResultRecord r;
  r.workload = "hackbench";
  r.source = "test";
  r.metrics = {{"seconds", v}};
  return r;
}

class RepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("akts-repo-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RepositoryTest, RecordsRoundTripAndBadOnesAreRefused) {
  auto r = PolicyRecord::from_json(sample().to_json());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->to_json(), sample().to_json());
  json good = sample().to_json();
  std::vector<std::pair<std::string, std::function<void(json&)>>> bad = {
      {"unknown key", [](json& j) { j["extra"] = 1; }},
      {"schema 2", [](json& j) { j["schema"] = 2; }},
      {"no schema", [](json& j) { j.erase("schema"); }},
      {"name with a slash", [](json& j) { j["name"] = "../etc"; }},
      {"empty name", [](json& j) { j["name"] = ""; }},
      {"origin", [](json& j) { j["origin"] = "internet"; }},
      {"hash", [](json& j) { j["object_sha256"] = "xyz"; }},
      {"description type", [](json& j) { j["description"] = 5; }},
      {"invalid UTF-8", [](json& j) { j["description"] = std::string("\xff"); }},
      {"param type", [](json& j) { j["parameters"][0]["type"] = "float"; }},
      {"default outside", [](json& j) { j["parameters"][0]["default"] = 1; }},
      {"negative min", [](json& j) { j["parameters"][0]["min"] = -1; }},
      {"u32 too big", [](json& j) {
         j["parameters"][0]["type"] = "u32";
         j["parameters"][0]["max"] = 5000000000ull;
       }},
      {"param twice", [](json& j) { j["parameters"].push_back(j["parameters"][0]); }},
      {"results not a list", [](json& j) { j["results"] = json::object(); }},
      {"metric not finite", [](json& j) {
         j["results"] = json::array({{{"workload", "w"}, {"metrics", {{"x", "NaN"}}}}});
       }},
      {"no metrics", [](json& j) { j["results"] = json::array({{{"workload", "w"}, {"metrics", json::object()}}}); }},
  };
  for (auto& [what, mutate] : bad) {
    json j = good;
    mutate(j);
    EXPECT_FALSE(PolicyRecord::from_json(j)) << what;
  }
}

TEST_F(RepositoryTest, SeedKeepsResultsAndAppendKeepsTheLastOnes) {
  PolicyRepository repo(dir_.string());
  ASSERT_TRUE(repo.seed({sample()}));
  ASSERT_TRUE(repo.append_result("latency", result(1.5)));
  EXPECT_FALSE(repo.append_result("nope", result(1)));
  EXPECT_FALSE(repo.append_result("../x", result(1)));
  ResultRecord bad = result(1);
  bad.metrics = {{"x", "y"}};
  EXPECT_FALSE(repo.append_result("latency", bad));
  PolicyRecord changed = sample();
  changed.description = "new words";
  ASSERT_TRUE(repo.seed({changed}));
  auto got = repo.get("latency");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->description, "new words");
  ASSERT_EQ((*got)->results.size(), 1u);
  EXPECT_FALSE((*got)->results[0].time.empty());
  for (size_t i = 0; i < PolicyRepository::kMaxResults + 5; ++i) ASSERT_TRUE(repo.append_result("latency", result(i)));
  got = repo.get("latency");
  ASSERT_EQ((*got)->results.size(), PolicyRepository::kMaxResults);
  EXPECT_EQ((*got)->results.back().metrics["seconds"], PolicyRepository::kMaxResults + 4.0);
}

TEST_F(RepositoryTest, ABrokenFileIsNamedAndNotOverwritten) {
  PolicyRepository repo(dir_.string());
  ASSERT_TRUE(repo.seed({sample()}));
  std::ofstream(dir_ / "latency.json") << "{\"schema\": 1, \"name\": \"latency\"";
  auto l = repo.list();
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("latency.json"), std::string::npos);
  auto seeded = repo.seed({sample(), sample("throughput")});
  ASSERT_FALSE(seeded);
  EXPECT_NE(seeded.error().message.find("latency.json"), std::string::npos);
  auto other = repo.get("throughput");  // the others are still written
  EXPECT_TRUE(other && *other);
  std::ifstream in(dir_ / "latency.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"schema\": 1, \"name\": \"latency\"");
}

// Several processes append at once: the lock loses none.
TEST_F(RepositoryTest, ConcurrentAppendsLoseNothing) {
  PolicyRepository repo(dir_.string());
  ASSERT_TRUE(repo.seed({sample()}));
  constexpr int kProcs = 4, kEach = 20;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      PolicyRepository mine(dir_.string());
      for (int i = 0; i < kEach; ++i)
        if (!mine.append_result("latency", result(p * 100 + i))) _exit(1);
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  auto got = repo.get("latency");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->results.size(), static_cast<size_t>(kProcs * kEach));
}

}  // namespace
}  // namespace akts
