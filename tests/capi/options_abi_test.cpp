// The struct_size rule of grape.h for the option structs, seen from callers built against older
// and newer headers: grp_*_options_init() writes exactly the caller's size, and the inline
// grp_*_default_options() passes the size this header knows. (A Go package compiled against the
// 40-byte grp_model_options of an older header once got the library's 56-byte struct back and the
// library then read 16 bytes past the caller's allocation.)
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "grape.h"

namespace {

const char kSource[] = "const K = 3\nfn main(x: f32[K]) -> f32[K] {\n  return x + 1.0\n}\n";

// The first version of each struct: what a program built against the oldest header holds.
constexpr size_t kModelOptionsV1 = offsetof(grp_model_options, limits);
constexpr size_t kSessionOptionsV1 = offsetof(grp_session_options, max_loop_trips);
constexpr unsigned char kGuard = 0xA5;

// A caller's struct of `size` bytes inside a guarded buffer, `slack` guard bytes after it.
struct Guarded {
  std::vector<unsigned char> bytes;
  size_t size;
  Guarded(size_t size, size_t slack) : bytes(size + slack, kGuard), size(size) {}
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  bool guard_intact() const {
    for (size_t i = size; i < bytes.size(); ++i)
      if (bytes[i] != kGuard) return false;
    return true;
  }
};

std::string message_of(grp_error* e) {
  std::string m = e ? grp_error_message(e) : "";
  grp_error_free(e);
  return m;
}

TEST(CapiOptionsAbi, InlineDefaultsCarryThisHeadersSize) {
  grp_model_options mo = grp_model_default_options();
  EXPECT_EQ(mo.struct_size, sizeof mo);
  EXPECT_EQ(mo.num_limits, 0u);
  grp_session_options so = grp_session_default_options();
  EXPECT_EQ(so.struct_size, sizeof so);
  EXPECT_STREQ(so.backend, "auto");
  EXPECT_STREQ(so.executor, "auto");
}

TEST(CapiOptionsAbi, AnOlderCallersModelOptionsAreWrittenOnlyUpToItsSize) {
  Guarded old(kModelOptionsV1, 32);
  grp_model_options_init(old.as<grp_model_options>(), old.size);
  EXPECT_TRUE(old.guard_intact());
  EXPECT_EQ(old.as<grp_model_options>()->struct_size, kModelOptionsV1);
  EXPECT_EQ(old.as<grp_model_options>()->num_defines, 0u);
  // The library reads no more than those bytes either: an allocation of exactly that size, so that
  // AddressSanitizer reports a read past it.
  std::vector<unsigned char> exact(old.bytes.begin(),
                                   old.bytes.begin() + static_cast<std::ptrdiff_t>(old.size));
  grp_model* m = nullptr;
  EXPECT_EQ(message_of(grp_model_load_source(kSource, sizeof kSource - 1, "t.grp",
                                             reinterpret_cast<grp_model_options*>(exact.data()), &m)),
            "");
  grp_model_destroy(m);
}

TEST(CapiOptionsAbi, AnOlderCallersSessionOptionsAreWrittenOnlyUpToItsSize) {
  Guarded old(kSessionOptionsV1, 32);
  grp_session_options_init(old.as<grp_session_options>(), old.size);
  EXPECT_TRUE(old.guard_intact());
  EXPECT_EQ(old.as<grp_session_options>()->struct_size, kSessionOptionsV1);
  EXPECT_STREQ(old.as<grp_session_options>()->backend, "auto");
  old.as<grp_session_options>()->backend = "cpu";
  grp_model* m = nullptr;
  ASSERT_EQ(message_of(grp_model_load_source(kSource, sizeof kSource - 1, "t.grp", nullptr, &m)), "");
  std::vector<unsigned char> exact(old.bytes.begin(),
                                   old.bytes.begin() + static_cast<std::ptrdiff_t>(old.size));
  grp_session* s = nullptr;
  EXPECT_EQ(message_of(grp_session_create(m, reinterpret_cast<grp_session_options*>(exact.data()), &s)), "");
  grp_session_destroy(s);
  grp_model_destroy(m);
}

TEST(CapiOptionsAbi, ANewerCallersTailIsZeroAndAccepted) {
  const size_t newer = sizeof(grp_model_options) + 24;
  Guarded big(newer, 8);
  grp_model_options_init(big.as<grp_model_options>(), newer);
  EXPECT_TRUE(big.guard_intact());
  EXPECT_EQ(big.as<grp_model_options>()->struct_size, newer);
  for (size_t i = sizeof(grp_model_options); i < newer; ++i) ASSERT_EQ(big.bytes[i], 0) << "byte " << i;
  grp_model* m = nullptr;
  EXPECT_EQ(message_of(
                grp_model_load_source(kSource, sizeof kSource - 1, "t.grp", big.as<grp_model_options>(), &m)),
            "");
  grp_model_destroy(m);

  const size_t newer_session = sizeof(grp_session_options) + 16;
  Guarded bigs(newer_session, 8);
  grp_session_options_init(bigs.as<grp_session_options>(), newer_session);
  EXPECT_TRUE(bigs.guard_intact());
  EXPECT_EQ(bigs.as<grp_session_options>()->struct_size, newer_session);
  EXPECT_STREQ(bigs.as<grp_session_options>()->executor, "auto");
}

TEST(CapiOptionsAbi, TooSmallSizesAreReportedNotGuessed) {
  grp_model_options_init(nullptr, sizeof(grp_model_options));  // a no-op
  Guarded tiny(sizeof(size_t) - 1, 8);
  grp_model_options_init(tiny.as<grp_model_options>(), tiny.size);  // cannot even hold struct_size
  for (unsigned char b : tiny.bytes) EXPECT_EQ(b, kGuard);

  Guarded short_struct(sizeof(size_t) + sizeof(void*), 32);
  grp_model_options_init(short_struct.as<grp_model_options>(), short_struct.size);
  EXPECT_TRUE(short_struct.guard_intact());
  grp_model* m = nullptr;
  std::string msg = message_of(
      grp_model_load_source(kSource, sizeof kSource - 1, "t.grp", short_struct.as<grp_model_options>(), &m));
  EXPECT_NE(msg.find("struct_size is " + std::to_string(short_struct.size) + ","), std::string::npos) << msg;
  EXPECT_EQ(m, nullptr);
}

}  // namespace
