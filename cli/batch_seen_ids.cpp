#include "cli/batch_seen_ids.h"

namespace grape::cli {

namespace {

// The slot of `hash` in a table of 2^bits slots: the top bits of a Fibonacci multiple, so that
// hashes that differ only in their high bits still spread.
size_t home(uint64_t hash, unsigned bits) {
  return static_cast<size_t>((hash * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

}  // namespace

std::optional<size_t> SeenIds::insert(uint64_t hash, std::string_view id, size_t line) {
  if (2 * (count_ + 1) > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(hash, bits_);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.line == 0) {
      s = Slot{hash, line, text_.size(), id.size()};
      text_.append(id);
      ++count_;
      return std::nullopt;
    }
    if (s.hash == hash && std::string_view(text_).substr(s.offset, s.length) == id) return s.line;
  }
}

void SeenIds::grow() {
  std::vector<Slot> old = std::move(slots_);
  bits_ = old.empty() ? 10 : bits_ + 1;
  slots_.assign(size_t{1} << bits_, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.line == 0) continue;
    size_t i = home(s.hash, bits_);
    while (slots_[i].line != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace grape::cli
