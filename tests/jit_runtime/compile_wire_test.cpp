#include "jit/compile_wire.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace grape::jit {
namespace {

TEST(CompileWire, RequestRoundTrips) {
  const CompileRequest r{std::string("kernel\0source", 13), "k1", "sm_90", {"-DX=1", ""}};
  CompileRequest back;
  ASSERT_TRUE(decode(encode(r), &back));
  EXPECT_EQ(back.source, r.source);
  EXPECT_EQ(back.name, "k1");
  EXPECT_EQ(back.arch, "sm_90");
  EXPECT_EQ(back.options, r.options);
}

TEST(CompileWire, RepliesRoundTrip) {
  CompileReply ok;
  ok.ok = true;
  ok.result.cubin = {0, 1, 255, 7};
  ok.result.ptx = "ptx";
  ok.result.log = "warning";
  ok.result.nvrtc_version = "13.0";
  CompileReply back;
  ASSERT_TRUE(decode(encode(ok), &back));
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.result.cubin, ok.result.cubin);
  EXPECT_EQ(back.result.ptx, "ptx");
  EXPECT_EQ(back.result.log, "warning");
  EXPECT_EQ(back.result.nvrtc_version, "13.0");
  EXPECT_FALSE(back.result.from_cache);

  CompileReply bad;
  bad.code = 10;
  bad.message = "NVRTC failed";
  CompileReply back2;
  ASSERT_TRUE(decode(encode(bad), &back2));
  EXPECT_FALSE(back2.ok);
  EXPECT_EQ(back2.code, 10);
  EXPECT_EQ(back2.message, "NVRTC failed");
}

TEST(CompileWire, EveryCutOrLongerMessageIsRejected) {
  const std::string req = encode(CompileRequest{"src", "n", "sm_80", {"-a", "-b"}});
  CompileRequest r;
  for (size_t n = 0; n < req.size(); ++n) EXPECT_FALSE(decode(req.substr(0, n), &r)) << n;
  EXPECT_FALSE(decode(req + "x", &r));
  CompileReply ok;
  ok.ok = true;
  const std::string rep = encode(ok);
  CompileReply back;
  for (size_t n = 0; n < rep.size(); ++n) EXPECT_FALSE(decode(rep.substr(0, n), &back)) << n;
  std::string not_a_flag = rep;
  not_a_flag[0] = 2;
  EXPECT_FALSE(decode(not_a_flag, &back));
  // A huge option count in a short message.
  std::string many = encode(CompileRequest{"", "", "", {}});
  many[24] = '\xff';
  EXPECT_FALSE(decode(many, &r));
}

TEST(CompileWire, FramesCrossASocketAndAClosedPeerIsAFailure) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const std::string big(300000, 'k');  // more than a socket buffer: written while read
  std::string got;
  std::thread reader([&] { EXPECT_TRUE(read_frame(sv[1], &got)); });
  EXPECT_TRUE(write_frame(sv[0], big));
  reader.join();
  EXPECT_EQ(got, big);
  EXPECT_TRUE(write_frame(sv[0], ""));
  EXPECT_TRUE(read_frame(sv[1], &got));
  EXPECT_EQ(got, "");
  ::close(sv[1]);
  EXPECT_FALSE(write_frame(sv[0], "gone"));  // EPIPE, not SIGPIPE
  EXPECT_FALSE(read_frame(sv[0], &got));
  ::close(sv[0]);
}

TEST(CompileWire, AnOversizedLengthIsRejectedWithoutAllocating) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const char huge[8] = {0, 0, 0, 0, 0, 0, 0, 0x7f};
  ASSERT_EQ(::write(sv[0], huge, 8), 8);
  std::string got;
  EXPECT_FALSE(read_frame(sv[1], &got));
  EXPECT_TRUE(got.empty());
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
}  // namespace grape::jit
