#include "cli/batch_stack.h"

#include <algorithm>
#include <cstring>

#include "cli/batch_npy.h"

namespace grape::cli {

std::string Batcher::key(const Request& r) const {
  // The dims as raw bytes (not text): built for every request.
  std::string k;
  for (size_t i = 0; i < sig_.inputs.size(); ++i) {
    const HostTensor& t = r.inputs[i];
    size_t skip = sig_.inputs[i].stacked ? 1 : 0;
    auto n = static_cast<uint32_t>(t.shape.size() - std::min(skip, t.shape.size()));
    k.append(reinterpret_cast<const char*>(&n), sizeof n);
    if (n) k.append(reinterpret_cast<const char*>(t.shape.data() + skip), n * sizeof(int64_t));
    if (!sig_.inputs[i].stacked) {
      uint64_t size = t.nbytes();
      k.append(reinterpret_cast<const char*>(&size), sizeof size);
      k.append(static_cast<const char*>(t.data()), t.nbytes());
    }
  }
  return k;
}

std::vector<Batch> Batcher::add(std::shared_ptr<const Request> r) {
  if (sig_.batch_dim.empty() || r->rows >= max_rows_ || r->rows == 0) {
    Batch alone;
    alone.rows = r->rows;
    alone.requests.push_back(std::move(r));
    return {std::move(alone)};
  }
  std::vector<Batch> full;
  std::string k = key(*r);
  Batch& b = open_[k];
  if (b.rows + r->rows > max_rows_) {
    full.push_back(std::move(b));
    b = Batch{};
  }
  b.rows += r->rows;
  b.requests.push_back(std::move(r));
  if (b.rows == max_rows_) {
    full.push_back(std::move(b));
    open_.erase(k);
  }
  return full;
}

std::vector<Batch> Batcher::drain() {
  std::vector<Batch> out;
  for (auto& [k, b] : open_) out.push_back(std::move(b));
  open_.clear();
  std::sort(out.begin(), out.end(), [](const Batch& a, const Batch& b) { return a.rows > b.rows; });
  return out;
}

namespace {

// Whether the requests' values of input i lie end to end in one buffer, in request order: rows
// a, a+1, ... of one shared .npy file, the common case of a large run. The call then reads them
// where they are.
bool contiguous(const Batch& b, size_t i) {
  const HostTensor& first = b.requests[0]->inputs[i];
  const uint8_t* next = first.bytes.get();
  for (const auto& r : b.requests) {
    const HostTensor& t = r->inputs[i];
    // The same owner: adjacent addresses of two allocations are not one buffer.
    if (t.bytes.get() != next || t.bytes.owner_before(first.bytes) || first.bytes.owner_before(t.bytes))
      return false;
    next += t.nbytes();
  }
  return true;
}

}  // namespace

std::vector<HostTensor> stack_inputs(const Batch& b, const Signature& sig,
                                     std::vector<std::vector<uint8_t>>& scratch) {
  const Request& first = *b.requests[0];
  if (b.requests.size() == 1) return first.inputs;
  scratch.resize(sig.inputs.size());
  std::vector<HostTensor> out;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if (!sig.inputs[i].stacked) {
      out.push_back(first.inputs[i]);
      continue;
    }
    HostTensor t;
    t.dtype = first.inputs[i].dtype;
    t.shape = first.inputs[i].shape;
    t.shape[0] = b.rows;
    for (const auto& r : b.requests) t.size += r->inputs[i].nbytes();
    if (contiguous(b, i)) {
      t.bytes = first.inputs[i].bytes;
    } else {
      // The worker's buffer, grown but never shrunk: no allocation and no zeroing per call.
      std::vector<uint8_t>& buf = scratch[i];
      if (buf.size() < t.size) buf.resize(t.size);
      size_t at = 0;
      for (const auto& r : b.requests) {
        if (r->inputs[i].nbytes()) std::memcpy(buf.data() + at, r->inputs[i].data(), r->inputs[i].nbytes());
        at += r->inputs[i].nbytes();
      }
      t.bytes = std::shared_ptr<const uint8_t>(std::shared_ptr<const uint8_t>(), buf.data());
    }
    out.push_back(std::move(t));
  }
  return out;
}

void check_mapped_inputs(const Batch& b) {
  // Each file once (mostly every request's rows are of one file), without an allocation per call;
  // past 8 files, the others are checked for each input.
  struct Seen {
    const MappedFile* file;
    bool last_page;
  } seen[8];
  size_t n = 0;
  for (const auto& r : b.requests)
    for (const HostTensor& t : r->inputs) {
      if (!t.mapped) continue;
      bool last_page = t.mapped->in_last_page(t.data(), t.nbytes());
      Seen* s = std::find_if(seen, seen + n, [&](const Seen& s) { return s.file == t.mapped; });
      if (s != seen + n)
        s->last_page |= last_page;
      else if (n < std::size(seen))
        seen[n++] = {t.mapped, last_page};
      else
        t.mapped->check(last_page);
    }
  for (size_t i = 0; i < n; ++i) seen[i].file->check(seen[i].last_page);
}

OutputSlice slice_output(const Batch& b, size_t k, int64_t row0, const Signature& sig,
                         const std::string& name, const HostTensor& o) {
  OutputSlice s{name, o.dtype, o.shape, static_cast<const uint8_t*>(o.data()), o.nbytes()};
  if (sig.batch_dim.empty() || b.requests.size() == 1 || o.shape.empty() || o.shape[0] != b.rows) return s;
  size_t row_bytes = o.nbytes() / static_cast<size_t>(b.rows);
  s.shape[0] = b.requests[k]->rows;
  s.data += static_cast<size_t>(row0) * row_bytes;
  s.nbytes = static_cast<size_t>(b.requests[k]->rows) * row_bytes;
  return s;
}

}  // namespace grape::cli
