// The decision logic of the CUDA executor "auto" (runtime/cuda/auto_policy.h), fed made-up device
// times: the schedule of a bucket's first calls, the median decision with its margin (ties and
// noise), buckets seen for the first time, and a graph executor that is unavailable or fails.
// No GPU involved.
#include "runtime/cuda/auto_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace grape::cuda {
namespace {

// Runs the calls of `bucket` until it is decided, asking the policy which executor runs each and
// answering with the next of `eager` / `graph` (the last one repeated when they run out). Returns
// the executors in the order they ran.
std::vector<Pick> measure(AutoPolicy& p, const std::string& bucket, const std::vector<double>& eager,
                          const std::vector<double>& graph) {
  std::vector<Pick> ran;
  size_t e = 0, g = 0;
  for (int call = 0; call < 100 && p.decision(bucket).executor.empty(); ++call) {
    Pick pick = p.next(bucket);
    double ms =
        pick == Pick::Eager ? eager[std::min(e++, eager.size() - 1)] : graph[std::min(g++, graph.size() - 1)];
    p.record(bucket, pick, ms);
    ran.push_back(pick);
  }
  return ran;
}

TEST(AutoPolicy, AFreshBucketAlternatesEagerFirstThenDecidesAfterEightCalls) {
  AutoPolicy p;
  EXPECT_EQ(p.schedule().calls_to_decide(), 8);
  std::vector<Pick> ran = measure(p, "S=4", {1.0}, {0.5});
  const std::vector<Pick> want = {Pick::Eager, Pick::Graph, Pick::Eager, Pick::Graph,
                                  Pick::Eager, Pick::Graph, Pick::Eager, Pick::Graph};
  EXPECT_EQ(ran, want);
  AutoDecision d = p.decision("S=4");
  EXPECT_EQ(d.executor, "graph");
  EXPECT_EQ(d.calls, 8);
  EXPECT_EQ(d.measured_calls, 8);
  EXPECT_EQ(d.calls_to_decide, 8);
  // The decision holds for every later call, whatever those take.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(p.next("S=4"), Pick::Graph);
    p.record("S=4", Pick::Graph, 50.0);
  }
  EXPECT_EQ(p.decision("S=4").executor, "graph");
  EXPECT_EQ(p.decision("S=4").calls, 13);
}

TEST(AutoPolicy, WarmUpCallsAreNotTimed) {
  AutoPolicy p;
  // The first call of each executor is slow (binding, building the graph): it must not count.
  measure(p, "", {100.0, 1.0, 1.0, 1.0}, {1000.0, 0.6, 0.6, 0.6});
  AutoDecision d = p.decision("");
  EXPECT_EQ(d.executor, "graph");
  EXPECT_EQ(d.eager_ms, (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_EQ(d.graph_ms, (std::vector<double>{0.6, 0.6, 0.6}));
  EXPECT_DOUBLE_EQ(d.eager_median_ms, 1.0);
  EXPECT_DOUBLE_EQ(d.graph_median_ms, 0.6);
}

TEST(AutoPolicy, GraphFasterWinsWithBothTimesInTheReason) {
  AutoPolicy p;
  measure(p, "B=2, S=4", {0, 0.89, 0.90, 0.88}, {0, 0.74, 0.75, 0.73});
  AutoDecision d = p.decision("B=2, S=4");
  EXPECT_EQ(d.executor, "graph");
  EXPECT_EQ(d.reason, "graph 0.740 ms vs eager 0.890 ms, medians of 3 timed calls each");
  EXPECT_EQ(d.summary(), "graph (graph 0.740 ms vs eager 0.890 ms, medians of 3 timed calls each)");
}

TEST(AutoPolicy, EagerFasterWins) {
  AutoPolicy p;
  measure(p, "S=4", {0, 0.5, 0.5, 0.5}, {0, 0.9, 0.9, 0.9});
  AutoDecision d = p.decision("S=4");
  EXPECT_EQ(d.executor, "eager");
  EXPECT_EQ(d.reason,
            "eager 0.500 ms vs graph 0.900 ms, medians of 3 timed calls each; graph must be 2% faster");
}

TEST(AutoPolicy, ATieKeepsEager) {
  AutoPolicy p;
  measure(p, "S=4", {0, 0.8, 0.8, 0.8}, {0, 0.8, 0.8, 0.8});
  EXPECT_EQ(p.decision("S=4").executor, "eager");
}

TEST(AutoPolicy, GraphFasterOnlyWithinTheMarginKeepsEager) {
  AutoPolicy p;
  measure(p, "a", {0, 1.0, 1.0, 1.0}, {0, 0.99, 0.99, 0.99});  // 1% faster: noise, not a win
  EXPECT_EQ(p.decision("a").executor, "eager");
  measure(p, "b", {0, 1.0, 1.0, 1.0}, {0, 0.97, 0.97, 0.97});  // 3% faster: a win
  EXPECT_EQ(p.decision("b").executor, "graph");
}

TEST(AutoPolicy, OneOutlierPerExecutorDoesNotFlipTheDecision) {
  AutoPolicy p;
  // A preempted call (5 ms) among eager's, and one among graph's (9 ms): the medians ignore both.
  measure(p, "S=4", {0, 1.0, 5.0, 1.02}, {0, 0.8, 9.0, 0.81});
  AutoDecision d = p.decision("S=4");
  EXPECT_EQ(d.executor, "graph");
  EXPECT_DOUBLE_EQ(d.eager_median_ms, 1.02);
  EXPECT_DOUBLE_EQ(d.graph_median_ms, 0.81);
  AutoPolicy q;
  measure(q, "S=4", {0, 0.5, 7.0, 0.5}, {0, 0.9, 0.1, 0.9});  // a too-fast graph outlier too
  EXPECT_EQ(q.decision("S=4").executor, "eager");
}

TEST(AutoPolicy, ABucketSeenForTheFirstTimeMeasuresOnItsOwn) {
  AutoPolicy p;
  measure(p, "S=4", {0, 0.5}, {0, 1.0});
  ASSERT_EQ(p.decision("S=4").executor, "eager");
  // Never seen: measuring, no calls; its first call runs eager and does not touch S=4.
  AutoDecision fresh = p.decision("S=8");
  EXPECT_EQ(fresh.executor, "");
  EXPECT_EQ(fresh.calls, 0);
  EXPECT_EQ(fresh.summary(), "measuring (0 of 8 calls)");
  EXPECT_EQ(p.next("S=8"), Pick::Eager);
  p.record("S=8", Pick::Eager, 3.0);
  EXPECT_EQ(p.next("S=8"), Pick::Graph);
  EXPECT_EQ(p.decision("S=8").summary(), "measuring (1 of 8 calls)");
  measure(p, "S=8", {2.0}, {0, 1.0});  // graph's warm-up call comes first now
  EXPECT_EQ(p.decision("S=8").executor, "graph");
  EXPECT_EQ(p.decision("S=4").executor, "eager");
  std::vector<AutoDecision> all = p.decisions();
  ASSERT_EQ(all.size(), 2u);  // in the order of their first calls
  EXPECT_EQ(all[0].bucket, "S=4");
  EXPECT_EQ(all[1].bucket, "S=8");
}

TEST(AutoPolicy, GraphUnavailableFromTheStartRunsEverythingEager) {
  AutoPolicy p;
  p.graph_unavailable("the driver lacks cuGraphConditionalHandleCreate");
  EXPECT_FALSE(p.graph_available());
  for (const char* bucket : {"S=1", "S=2"}) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(p.next(bucket), Pick::Eager);
      p.record(bucket, Pick::Eager, 1.0);
    }
    AutoDecision d = p.decision(bucket);
    EXPECT_EQ(d.executor, "eager");
    EXPECT_EQ(d.reason, "the graph executor is unavailable: the driver lacks cuGraphConditionalHandleCreate");
    EXPECT_TRUE(d.eager_ms.empty());
  }
  // A bucket not seen yet reports the same.
  EXPECT_EQ(p.decision("S=3").executor, "eager");
}

TEST(AutoPolicy, GraphUnavailableLaterOverridesEveryBucket) {
  AutoPolicy p;
  measure(p, "S=4", {0, 1.0}, {0, 0.5});
  ASSERT_EQ(p.decision("S=4").executor, "graph");
  EXPECT_EQ(p.next("S=8"), Pick::Eager);
  p.record("S=8", Pick::Eager, 1.0);
  ASSERT_EQ(p.next("S=8"), Pick::Graph);
  p.graph_unavailable("refused the program");
  EXPECT_EQ(p.next("S=4"), Pick::Eager);
  EXPECT_EQ(p.next("S=8"), Pick::Eager);
  EXPECT_EQ(p.decision("S=4").executor, "eager");
  EXPECT_EQ(p.decision("S=8").reason, "the graph executor is unavailable: refused the program");
}

TEST(AutoPolicy, GraphFailureDecidesOnlyItsBucket) {
  AutoPolicy p;
  p.next("S=4");
  p.record("S=4", Pick::Eager, 1.0);
  ASSERT_EQ(p.next("S=4"), Pick::Graph);
  p.graph_failed("S=4", "out of memory instantiating the graph");
  EXPECT_EQ(p.next("S=4"), Pick::Eager);
  EXPECT_EQ(p.decision("S=4").summary(),
            "eager (the graph executor failed: out of memory instantiating the graph)");
  EXPECT_TRUE(p.graph_available());
  EXPECT_EQ(p.next("S=8"), Pick::Eager);
  p.record("S=8", Pick::Eager, 1.0);
  EXPECT_EQ(p.next("S=8"), Pick::Graph);  // other buckets still measure
}

TEST(AutoPolicy, CallsOutsideTheScheduleAndUnusableTimesDoNotCount) {
  AutoPolicy p;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  p.record("S=4", Pick::Eager, 1.0);  // warm-up eager
  p.record("S=4", Pick::Graph, 1.0);  // warm-up graph
  ASSERT_EQ(p.next("S=4"), Pick::Eager);
  p.record("S=4", Pick::Graph, 0.1);  // graph ran where eager was asked for: ignored
  p.record("S=4", Pick::Eager, nan);  // no time: ignored, eager again
  p.record("S=4", Pick::Eager, -1.0);
  p.record("S=4", Pick::Eager, std::numeric_limits<double>::infinity());
  p.record_unmeasured("S=4");  // a profiled call
  EXPECT_EQ(p.next("S=4"), Pick::Eager);
  AutoDecision d = p.decision("S=4");
  EXPECT_EQ(d.calls, 7);
  EXPECT_EQ(d.measured_calls, 2);
  EXPECT_TRUE(d.eager_ms.empty());
  EXPECT_TRUE(d.graph_ms.empty());
  measure(p, "S=4", {1.0}, {2.0});
  d = p.decision("S=4");
  EXPECT_EQ(d.executor, "eager");
  EXPECT_EQ(d.eager_ms.size(), 3u);
  EXPECT_EQ(d.graph_ms.size(), 3u);
}

TEST(AutoPolicy, ASmallerScheduleAndAnEvenMedian) {
  AutoSchedule s;
  s.warmup_calls = 0;
  s.timed_calls = 2;
  s.margin = 0;
  AutoPolicy p(s);
  EXPECT_EQ(p.schedule().calls_to_decide(), 4);
  std::vector<Pick> ran = measure(p, "", {1.0, 3.0}, {1.5, 2.0});
  EXPECT_EQ(ran.size(), 4u);
  AutoDecision d = p.decision("");
  EXPECT_DOUBLE_EQ(d.eager_median_ms, 2.0);
  EXPECT_DOUBLE_EQ(d.graph_median_ms, 1.75);
  EXPECT_EQ(d.executor, "graph");
  // A schedule without timed calls could not decide: it times one call each.
  AutoSchedule none;
  none.timed_calls = 0;
  EXPECT_EQ(AutoPolicy(none).schedule().calls_to_decide(), 4);
}

}  // namespace
}  // namespace grape::cuda
