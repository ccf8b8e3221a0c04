// Shape buckets: which calls of an entry share one CUDA graph and one decision of executor "auto".
// Each symbolic dim's value falls in a bucket; the bucket of a call is the tuple of its dims'
// buckets. One instantiated graph serves every call of its bucket: a call with other dims in the
// same bucket rewrites the graph's node parameters in place (grid sizes, parameter blocks, copy
// sizes) instead of instantiating a new graph (docs/execution.md, "Shape buckets").
//
// Rules, per dim:
//   pow2 (the default)  1, 2, 3..4, 5..8, 9..16, ...: at most 11 buckets for 1..1024
//   exact               every value its own bucket (a graph per value, as without buckets)
//   E1,E2,...           upper edges, increasing: 1..E1, E1+1..E2, ...; a value above the last
//                       edge is bucketed by pow2 beyond it (never an error, never a wrong result)
// A spec names rules per dim, separated by ';': "S=pow2;T=16,64,256;B=exact". Dims it does not
// name are pow2.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace grape {

struct BucketRule {
  enum class Kind { Pow2, Exact, Edges } kind = Kind::Pow2;
  std::vector<int64_t> edges;  // Edges: strictly increasing, each >= 1
};

// A bucket of one dim: the values lo..hi (inclusive).
struct DimBucket {
  int64_t lo = 0, hi = 0;
};

class ShapeBuckets {
 public:
  ShapeBuckets() = default;  // every dim pow2
  // Throws Error(InvalidArgument) naming the bad part: "buckets \"S=3,2\": the edges of S must
  // increase".
  static ShapeBuckets parse(const std::string& spec);

  DimBucket bucket(const std::string& dim, int64_t value) const;
  // The bucket of a call: "B=1, S=33..64" (a bucket of one value is written as the value); ""
  // without symbolic dims. Two calls share a graph exactly when their keys are equal.
  std::string key(const std::map<std::string, int64_t>& dims) const;
  // The spec in canonical form ("" when every dim is pow2).
  std::string spec() const;

 private:
  const BucketRule& rule(const std::string& dim) const;
  std::map<std::string, BucketRule> rules_;
};

}  // namespace grape
