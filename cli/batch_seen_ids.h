// The ids `grape batch` has seen in a run, for its duplicate-id check. The check runs on the one
// thread that dispatches requests in file order, so it must cost little per request: a flat
// open-addressing table of the ids' 64-bit hashes (computed beforehand on the parsing threads),
// with the ids themselves in one growing text that is read only when two hashes agree. A
// std::unordered_map<std::string, size_t> cost that thread ~40% of its time at 100,000 requests
// (a node allocation, a rehash now and then and two or three cache misses per request).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grape::cli {

class SeenIds {
 public:
  // Records `id` (whose hash is `hash`) as seen at `line` (1-based). Returns the line where it
  // was first seen if it was seen before (and then records nothing).
  std::optional<size_t> insert(uint64_t hash, std::string_view id, size_t line);
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    size_t line = 0;  // 0: empty
    size_t offset = 0;
    size_t length = 0;  // of the id in text_
  };
  void grow();

  std::vector<Slot> slots_;  // 2^bits_ of them, at most half full
  unsigned bits_ = 0;
  std::string text_;  // every id recorded, one after another
  size_t count_ = 0;
};

}  // namespace grape::cli
