#include "cli/batch_results.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/api.h"
#include "cli/batch_npy.h"
#include "cli/batch_stack.h"
#include "cli/values.h"

namespace grape::cli {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void io_error(const std::string& what) {
  throw ApiError{GRP_ERR_IO, what + ": " + std::strerror(errno)};
}

void append_number(std::string& out, grp_dtype dtype, const uint8_t* data, size_t i) {
  char buf[32];
  if (is_float_dtype(dtype)) {
    // f16 and bf16 values are floats exactly; the shortest text that reads back as the same float
    // reads back as the same f16 / bf16 too.
    auto v = static_cast<float>(element(dtype, data, i));
    if (std::isnan(v)) {
      out += "\"NaN\"";
    } else if (std::isinf(v)) {
      out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    } else {
      auto res = std::to_chars(buf, buf + sizeof buf, v);
      out.append(buf, res.ptr);
    }
    return;
  }
  if (dtype == GRP_BOOL) {
    out += data[i] ? "true" : "false";
    return;
  }
  int64_t v = 0;
  if (dtype == GRP_I32) {
    int32_t x;
    std::memcpy(&x, data + i * 4, 4);
    v = x;
  } else {
    std::memcpy(&v, data + i * 8, 8);
  }
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void append_nested(std::string& out, const OutputSlice& o, size_t depth, size_t& next) {
  if (depth == o.shape.size()) {
    append_number(out, o.dtype, o.data, next++);
    return;
  }
  out += '[';
  for (int64_t k = 0; k < o.shape[depth]; ++k) {
    if (k) out += ',';
    append_nested(out, o, depth + 1, next);
  }
  out += ']';
}

// A file name for the id: its safe characters (at most 64) and its hash, so that distinct ids
// never share a file.
std::string file_stem(const std::string& id) {
  std::string safe;
  for (char c : id) {
    if (safe.size() == 64) break;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.';
    safe += ok ? c : '_';
  }
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(id)));
  return safe + "-" + std::string(hash, 8);
}

}  // namespace

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

ResultWriter::ResultWriter(const std::string& dir, OutputsMode mode, bool overwrite)
    : dir_(dir), path_((fs::path(dir) / "results.jsonl").string()), mode_(mode) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ApiError{GRP_ERR_IO, "--output " + dir + ": " + ec.message()};
  if (overwrite) {
    fs::remove(path_, ec);
    if (ec) throw ApiError{GRP_ERR_IO, "--overwrite: cannot remove " + path_ + ": " + ec.message()};
    fs::remove_all(fs::path(dir) / "outputs", ec);
    if (ec) throw ApiError{GRP_ERR_IO, "--overwrite: cannot remove " + dir + "/outputs: " + ec.message()};
  } else {
    read_existing();
    remove_stale_temporaries((fs::path(dir) / "outputs").string());
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("cannot open " + path_);
  last_sync_ = std::chrono::steady_clock::now();
}

ResultWriter::~ResultWriter() {
  if (fd_ >= 0) {
    if (dirty_) ::fsync(fd_);
    ::close(fd_);
  }
}

void ResultWriter::read_existing() {
  int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    io_error("cannot open " + path_);
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      io_error("cannot read " + path_);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  size_t end = text.rfind('\n');
  size_t complete = end == std::string::npos ? 0 : end + 1;
  if (complete < text.size()) {
    // A run killed in the middle of a write: the line without its newline never counted.
    if (::ftruncate(fd, static_cast<off_t>(complete)) != 0) {
      ::close(fd);
      io_error("cannot drop the truncated last line of " + path_);
    }
    resume_.dropped_partial_line = true;
  }
  ::close(fd);
  size_t line_no = 0;
  for (size_t pos = 0; pos < complete;) {
    size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    auto id = j.is_object() ? j.find("id") : j.end();
    auto req_line = j.is_object() ? j.find("line") : j.end();
    if (j.is_discarded() || !j.is_object() || id == j.end() || req_line == j.end() ||
        !req_line->is_number_unsigned())
      throw ApiError{GRP_ERR_FORMAT, path_ + ":" + std::to_string(line_no) +
                                         ": not a result line of grape batch; remove the line, or start over "
                                         "with --overwrite"};
    if (id->is_string())
      resume_.ids.insert(id->get<std::string>());
    else if (id->is_number_integer())
      resume_.ids.insert(id->dump());
    else
      resume_.lines_without_id.insert(req_line->get<size_t>());
    auto status = j.find("status");
    (status != j.end() && *status == "ok" ? resume_.ok : resume_.failed) += 1;
  }
}

std::string ResultWriter::call_file(const Batch& call, const std::string& name) const {
  std::string ids;
  for (const auto& r : call.requests) ids += r->id + '\n';
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a64(ids)));
  std::string rel =
      "outputs/" + file_stem(call.requests[0]->id) + "-call" + std::string(hash, 8) + "." + name + ".npy";
  fs::path full = fs::path(dir_) / rel;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  if (ec) throw ApiError{GRP_ERR_IO, "cannot create " + full.parent_path().string() + ": " + ec.message()};
  return rel;
}

std::string ResultWriter::write_call_output(const Batch& call, const std::string& name,
                                            const HostTensor& value) const {
  std::string rel = call_file(call, name);
  std::string full = (fs::path(dir_) / rel).string();
  check(grp_npy_write(full.c_str(), value.dtype, value.shape.data(), value.shape.size(), value.data(),
                      value.nbytes()));
  return rel;
}

std::string ResultWriter::rows_output(const std::string& name, const std::string& file) {
  return json_string(name) + ":{\"npy\":" + json_string(file) + ",\"rows\":[";
}

void ResultWriter::append_rows_line(std::string& out, const Request& r,
                                    const std::vector<std::string>& outputs, int64_t row0,
                                    size_t batch_requests, double batch_ms) {
  char num[32];
  auto put = [&](auto v) { out.append(num, std::to_chars(num, num + sizeof num, v).ptr); };
  out += "{\"id\":";
  out += r.id_json;
  out += ",\"line\":";
  put(r.line);
  out += ",\"status\":\"ok\",\"outputs\":{";
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (k) out += ',';
    out += outputs[k];
    put(row0);
    out += ',';
    put(row0 + r.rows);
    out += "]}";
  }
  out += "},\"batch\":";
  put(batch_requests);
  out += ",\"time_ms\":";
  out.append(num, std::to_chars(num, num + sizeof num, batch_ms, std::chars_format::fixed, 3).ptr);
  out += "}\n";
}

std::string ResultWriter::ok_line(const Request& r, const std::vector<OutputSlice>& outputs,
                                  size_t batch_requests, double batch_ms,
                                  const std::vector<std::string>& call_files, int64_t row0) const {
  std::string out =
      "{\"id\":" + r.id_json + ",\"line\":" + std::to_string(r.line) + ",\"status\":\"ok\",\"outputs\":{";
  for (size_t k = 0; k < outputs.size(); ++k) {
    const OutputSlice& o = outputs[k];
    size_t numel = 1;
    for (int64_t d : o.shape) numel *= static_cast<size_t>(d);
    if (k) out += ',';
    out += json_string(o.name) + ":";
    bool inline_it =
        mode_ == OutputsMode::Inline || (mode_ == OutputsMode::Auto && numel <= kInlineMaxElements);
    if (inline_it) {
      size_t next = 0;
      append_nested(out, o, 0, next);
    } else if (mode_ == OutputsMode::NpyRows) {
      out += "{\"npy\":" + json_string(call_files[k]);
      if (row0 >= 0)
        out += ",\"rows\":[" + std::to_string(row0) + "," + std::to_string(row0 + o.shape[0]) + "]";
      out += "}";
    } else {
      std::string rel = "outputs/" + file_stem(r.id) + "." + o.name + ".npy";
      fs::path full = fs::path(dir_) / rel;
      std::error_code ec;
      fs::create_directories(full.parent_path(), ec);
      if (ec)
        throw ApiError{GRP_ERR_IO, "cannot create " + full.parent_path().string() + ": " + ec.message()};
      check(grp_npy_write(full.c_str(), o.dtype, o.shape.data(), o.shape.size(), o.data, o.nbytes));
      out += "{\"npy\":" + json_string(rel) + "}";
    }
  }
  out += "},\"batch\":" + std::to_string(batch_requests) + ",\"time_ms\":";
  char ms[32];
  out.append(ms, std::to_chars(ms, ms + sizeof ms, batch_ms, std::chars_format::fixed, 3).ptr);
  return out += "}\n";
}

std::string ResultWriter::error_line(const Request& r, const std::string& message) {
  // Replacing bytes that are not UTF-8 (a file name, say) keeps the line readable JSON, so that a
  // resumed run can read it back.
  std::string text = nlohmann::json(message).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return "{\"id\":" + r.id_json + ",\"line\":" + std::to_string(r.line) +
         ",\"status\":\"error\",\"error\":" + text + "}\n";
}

void ResultWriter::append(const std::string& lines) {
  std::lock_guard<std::mutex> lock(mu_);
  const char* p = lines.data();
  size_t left = lines.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error("cannot append to " + path_);
    p += n;
    left -= static_cast<size_t>(n);
  }
  dirty_ = true;
  auto now = std::chrono::steady_clock::now();
  if (now - last_sync_ >= std::chrono::seconds(1)) {
    if (::fdatasync(fd_) != 0) io_error("cannot sync " + path_);
    last_sync_ = now;
    dirty_ = false;
  }
}

void ResultWriter::sync() {
  std::lock_guard<std::mutex> lock(mu_);
  if (dirty_ && ::fsync(fd_) != 0) io_error("cannot sync " + path_);
  dirty_ = false;
}

}  // namespace grape::cli
