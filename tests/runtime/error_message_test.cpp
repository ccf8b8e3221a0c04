// Error messages cut runs of name characters longer than kMaxMessageWord (base/error.h), so a
// hostile name, dim or number cannot make a message as long as itself (issue 10).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace grape {
namespace {

TEST(ErrorMessage, LongWordsAreCutOthersKept) {
  const std::string name(100000, 'a');
  Error e(ErrorCode::InvalidArgument, "no state '" + name + "'; did you mean 'acc'?");
  const std::string msg = e.what();
  EXPECT_EQ(msg, "no state '" + std::string(32, 'a') + "... (100000 characters)'; did you mean 'acc'?");
  // At the limit nothing changes, and punctuation, spaces and UTF-8 pass through.
  const std::string edge(kMaxMessageWord, 'b');
  EXPECT_EQ(std::string(Error(ErrorCode::Type, "x: f32[" + edge + ", 3] \xc3\xa9").what()),
            "x: f32[" + edge + ", 3] \xc3\xa9");
  EXPECT_EQ(shorten_long_words(""), "");
}

TEST(ErrorMessage, ThrowAtCutsTheMessageNotThePosition) {
  const std::string dim(5000, 'D');
  try {
    throw_at(ErrorCode::Type, SourcePosition{"m.grp", 3, 7}, "input 'x': expected f32[" + dim + "]");
    FAIL() << "no throw";
  } catch (const SourceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.grp:3:7: error: input 'x': expected f32[" + std::string(32, 'D') + "... (5000 characters)]");
    EXPECT_EQ(e.line(), 3);
  }
}

}  // namespace
}  // namespace grape
