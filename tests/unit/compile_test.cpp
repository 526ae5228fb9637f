// Admission's gate 1 on the build host: a candidate compiles against the pinned kernel's BTF and akts's headers,
// a broken one is refused with clang's diagnostics, a kernel without sched_ext is named.
#include "admission/compile.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace akts::admission {
namespace {

class Compile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("akts-compile-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CompileOptions opts() {
    CompileOptions o;
    o.btf = AKTS_TEST_VMLINUX;
    o.work_dir = (dir_ / "work").string();
    return o;
  }
  std::filesystem::path dir_;
};

TEST_F(Compile, ALibraryPolicyCompilesAgainstTheKernelsBtf) {
  // The library's throughput policy under another name, as a person would start a new one.
  std::ifstream in(std::string(AKTS_SOURCE_DIR) + "/bpf/policies/throughput.bpf.c");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t at; (at = text.find("throughput")) != std::string::npos;) text.replace(at, 10, "fifocand");
  for (size_t at; (at = text.find("../akts_policy.bpf.h")) != std::string::npos;) text.replace(at, 20, "akts_policy.bpf.h");
  std::ofstream(dir_ / "fifocand.bpf.c") << text;
  auto r = compile_source((dir_ / "fifocand.bpf.c").string(), opts());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->passed) << r->output;
  EXPECT_TRUE(std::filesystem::exists(r->object));
}

TEST_F(Compile, ABrokenSourceIsRefusedWithTheDiagnostics) {
  std::ofstream(dir_ / "broken.bpf.c") << "#include \"akts_policy.bpf.h\"\nint broken(\n";
  auto r = compile_source((dir_ / "broken.bpf.c").string(), opts());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->passed);
  EXPECT_NE(r->output.find("error"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("broken.bpf.c:2"), std::string::npos) << r->output;
}

TEST_F(Compile, AKernelWithoutSchedExtIsNamed) {
  CompileOptions o = opts();
  o.btf = "/sys/kernel/btf/vmlinux";  // this host's kernel: no sched_ext
  std::ofstream(dir_ / "x.bpf.c") << "int x;\n";
  auto r = compile_source((dir_ / "x.bpf.c").string(), o);
  if (r) GTEST_SKIP() << "this host's kernel has sched_ext";
  EXPECT_NE(r.error().message.find("sched_ext"), std::string::npos) << r.error().message;
  EXPECT_FALSE(compile_source((dir_ / "missing.bpf.c").string(), opts()));
}

TEST_F(Compile, TheCompilerGetsNoInputNoInheritedDescriptorsAndItsOwnGroup) {
  // A stand-in compiler that reports what it was given, then fails.
  std::string fake = (dir_ / "fake-clang").string();
  std::ofstream(fake) << "#!/bin/sh\necho \"stdin=$(readlink /proc/$$/fd/0)\"\n"
                         "if [ -e /proc/$$/fd/77 ]; then echo fd77=inherited; else echo fd77=closed; fi\n"
                         "echo \"pgid=$(ps -o pgid= $$ | tr -d ' ') pid=$$\"\nexit 1\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  int leaked = ::dup2(fd, 77);  // no O_CLOEXEC: a descriptor the caller forgot
  ::close(fd);
  ASSERT_EQ(leaked, 77);
  CompileOptions o = opts();
  o.clang = fake;
  std::ofstream(dir_ / "x.bpf.c") << "int x;\n";
  auto r = compile_source((dir_ / "x.bpf.c").string(), o);
  ::close(leaked);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->passed);
  EXPECT_NE(r->output.find("stdin=/dev/null"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("fd77=closed"), std::string::npos) << r->output;
  auto at = r->output.find("pgid=");
  ASSERT_NE(at, std::string::npos) << r->output;
  std::string pgid = r->output.substr(at + 5, r->output.find(' ', at) - at - 5);
  EXPECT_NE(r->output.find("pid=" + pgid), std::string::npos) << "not its own group leader: " << r->output;
}

TEST_F(Compile, WithoutAWorkDirectoryAPrivateOneIsMadeAndRemovedOnRequest) {
  CompileOptions o = opts();
  o.work_dir.clear();
  std::ofstream(dir_ / "broken.bpf.c") << "int broken(\n";
  auto r = compile_source((dir_ / "broken.bpf.c").string(), o);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_FALSE(r->work_dir.empty());
  EXPECT_EQ(r->work_dir.rfind("/tmp/akts-admit-", 0), 0u) << r->work_dir;
  auto perms = std::filesystem::status(r->work_dir).permissions();
  EXPECT_EQ(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
            std::filesystem::perms::none);
  EXPECT_TRUE(std::filesystem::exists(r->work_dir + "/vmlinux.h"));
  remove_work_dir(r->work_dir);
  EXPECT_FALSE(std::filesystem::exists(r->work_dir));
}

TEST(AgentSource, OnlyPlainRelativeIncludesOfHeaders) {
  EXPECT_TRUE(check_agent_source("#include \"akts_policy.bpf.h\"\n#include <scx/common.bpf.h>\nint x;\n"));
  EXPECT_TRUE(check_agent_source("  #  include \"vmlinux.h\"\r\nint y;"));
  for (const char* bad : {
           "#include \"/etc/shadow\"\n",                     // absolute
           "#include \"../../../etc/shadow\"\n",             // climbing
           "#include <bpf/../../../../etc/shadow>\n",
           "#define F \"/etc/shadow\"\n#include F\n",         // through a macro
           "#inc\\\nlude \"/etc/shadow\"\n",                 // a backslash-newline inside the word
           "/* x */ #include \"/etc/shadow\"\n",             // a comment first
           "%:include \"/etc/shadow\"\n",                     // the digraph
           "#include_next <shadow>\n",
           "#embed \"/etc/shadow\"\n",
           "#import \"/etc/shadow\"\n",
           "#if __has_include(\"/etc/shadow\")\n#endif\n",
           "asm(\".incbin \\\"/etc/shadow\\\"\");\n",
       }) {
    auto st = check_agent_source(bad);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().kind, ErrorKind::kInvalidArgument) << bad;
  }
  auto st = check_agent_source("int a;\nint b;\n#include \"/etc/shadow\"\n");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("line 3"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace akts::admission
