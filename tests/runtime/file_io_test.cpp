// Reading files: FIFOs, devices and directories are refused before anything blocks on them, and
// size limits are checked before reading.
#include "runtime/file_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "runtime/model.h"
#include "runtime/npy.h"
#include "runtime/safetensors.h"
#include "tests/runtime/rt_test_util.h"

namespace grape {
namespace {

using testing::TempDir;

void expect_io(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one with '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::IO) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// Without a writer, opening a FIFO for reading would block forever: every reader refuses it.
TEST(FileIo, FifosAreRefusedWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_io([&] { read_file_bytes(fifo); }, "not a regular file (a FIFO or pipe)");
  expect_io([&] { Model::load_file(fifo); }, "not a regular file");
  expect_io([&] { read_npy(fifo); }, "not a regular file");
  expect_io([&] { read_safetensors(fifo); }, "not a regular file");
}

TEST(FileIo, DevicesAreRefused) {
  expect_io([&] { read_file_bytes("/dev/zero"); }, "not a regular file (a device)");
}

TEST(FileIo, SizeLimitCheckedBeforeReading) {
  TempDir dir;
  std::string f = dir.file("big.grp");
  {
    std::ofstream out(f);
    out << std::string(1000, 'x');
  }
  expect_io([&] { read_file_bytes(f, 999); }, "file too large (1000 bytes; the limit is 999)");
  EXPECT_EQ(read_file_bytes(f, 1000).size(), 1000u);
}

}  // namespace
}  // namespace grape
