// The descriptor type (common/fd.h) and the one atomic file writer (common/atomic_file.h), in a temporary folder.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/fd.h"

namespace akts {
namespace {

namespace fs = std::filesystem;

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(Fd, ClosesWhenItsOwnerGoes) {
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    Fd fd(raw);
    EXPECT_TRUE(fd);
    EXPECT_EQ(fd.get(), raw);
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(Fd, MovesOwnershipAndClosesWhatItHeldBefore) {
  int a = ::open("/dev/null", O_RDONLY | O_CLOEXEC), b = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  Fd fa(a), fb(b);
  fb = std::move(fa);  // b is closed: fb held it
  EXPECT_FALSE(is_open(b));
  EXPECT_FALSE(fa);
  EXPECT_EQ(fb.get(), a);
  Fd fc(std::move(fb));
  EXPECT_EQ(fc.get(), a);
  EXPECT_TRUE(is_open(a));
  int released = fc.release();  // given up, not closed
  EXPECT_FALSE(fc);
  EXPECT_TRUE(is_open(released));
  ::close(released);
  Fd empty;
  empty.reset();  // nothing to close: no harm
  EXPECT_FALSE(empty);
}

class AtomicFileTest : public ::testing::Test {
 protected:
  AtomicFileTest() : dir_(fs::temp_directory_path() / fmt::format("akts-atomic-{}-{}", getpid(), n_++)) {
    fs::create_directories(dir_);
  }
  ~AtomicFileTest() override { fs::remove_all(dir_); }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Files in the folder other than the ones named: a temporary left behind.
  size_t strays(std::initializer_list<std::string> keep) const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_))
      if (std::find(keep.begin(), keep.end(), e.path().filename().string()) == keep.end()) ++n;
    return n;
  }
  fs::path dir_;
  static inline int n_ = 0;
};

TEST_F(AtomicFileTest, WritesAllOfALargeFileWithTheModeAskedFor) {
  std::string big(8 << 20, 'x');  // more than one write() moves at once on a pipe-sized buffer
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + (i / 4096) % 26);
  auto p = dir_ / "big";
  ASSERT_TRUE(write_file_atomically(p.string(), big, {.mode = 0640}));
  EXPECT_EQ(read(p), big);
  struct stat sb{};
  ASSERT_EQ(::stat(p.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0640u);  // fchmod: the umask does not narrow it
  EXPECT_EQ(strays({"big"}), 0u);
}

TEST_F(AtomicFileTest, ReplacesTheOldContentsWholeAndASymlinkItself) {
  auto p = dir_ / "f";
  ASSERT_TRUE(write_file_atomically(p.string(), "old contents, longer than the new"));
  ASSERT_TRUE(write_file_atomically(p.string(), "new"));
  EXPECT_EQ(read(p), "new");
  auto target = dir_ / "target";
  std::ofstream(target) << "untouched";
  fs::create_symlink(target, dir_ / "link");
  ASSERT_TRUE(write_file_atomically((dir_ / "link").string(), "written"));
  EXPECT_EQ(read(target), "untouched");  // not followed
  EXPECT_FALSE(fs::is_symlink(dir_ / "link"));
  EXPECT_EQ(read(dir_ / "link"), "written");
}

TEST_F(AtomicFileTest, AFailedRenameLeavesTheTargetAndNoTemporary) {
  // A non-empty folder where the file should go: the rename fails after the temporary was written and flushed.
  auto p = dir_ / "busy";
  fs::create_directories(p / "inside");
  auto st = write_file_atomically(p.string(), "contents");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cannot replace"), std::string::npos) << st.error().message;
  EXPECT_TRUE(fs::is_directory(p / "inside"));
  EXPECT_EQ(strays({"busy"}), 0u);
}

TEST_F(AtomicFileTest, MakesTheFolderOnlyWhenAsked) {
  auto p = dir_ / "sub" / "f";
  auto st = write_file_atomically(p.string(), "x");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cannot create"), std::string::npos) << st.error().message;
  EXPECT_FALSE(fs::exists(dir_ / "sub"));
  ASSERT_TRUE(write_file_atomically(p.string(), "x", {.make_dir = true}));
  EXPECT_EQ(read(p), "x");
  struct stat sb{};
  ASSERT_EQ(::stat((dir_ / "sub").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0700u);
}

TEST_F(AtomicFileTest, GivesTheFileToTheGroupAskedFor) {
  // Root may give it to any group (1, daemon); anyone else to their own.
  const gid_t g = ::geteuid() == 0 ? 1 : ::getegid();
  auto p = dir_ / "tok";
  ASSERT_TRUE(write_file_atomically(p.string(), "secret", {.mode = 0640, .group = g}));
  struct stat sb{};
  ASSERT_EQ(::stat(p.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_gid, g);
  EXPECT_EQ(sb.st_mode & 07777, 0640u);
}

}  // namespace
}  // namespace akts
