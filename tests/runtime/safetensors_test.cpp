#include "runtime/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "tests/runtime/rt_test_util.h"

namespace grape {
namespace {

using testing::expect_error;
using testing::TempDir;

// A file from a header text and a data buffer (the header is not padded).
std::vector<uint8_t> make_file(const std::string& header, size_t data_size, uint64_t declared_len = UINT64_MAX) {
  uint64_t n = declared_len == UINT64_MAX ? header.size() : declared_len;
  // Sized once and filled in place: GCC 12 at -O2 reports a false -Warray-bounds in
  // vector::insert's reallocation path when growing an 8-byte vector from string iterators.
  std::vector<uint8_t> out(8 + header.size() + data_size);
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_size; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i * 7 + 1);
  return out;
}

std::map<std::string, Tensor> parse(const std::vector<uint8_t>& b, const std::string& name = "model.safetensors") {
  return read_safetensors_bytes(b.data(), b.size(), name);
}

void expect_format_error(const std::string& header, size_t data_size, const std::vector<std::string>& parts) {
  auto bytes = make_file(header, data_size);
  expect_error([&] { parse(bytes); }, ErrorCode::Format, parts);
}

Tensor filled(DType dt, Shape shape) {
  Tensor t(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dt) {
      case DType::Bool: t.set_int(i, (i * 5) % 3 == 0); break;
      case DType::I32: t.set_int(i, -1000 + i * 37); break;
      case DType::I64: t.set_int(i, (int64_t{1} << 40) * (i % 5) - i); break;
      default: t.set(i, 0.25 * static_cast<double>(i) - 3.5); break;
    }
  }
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_TRUE(a.defined());
  ASSERT_TRUE(b.defined());
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()));
}

std::map<std::string, Tensor> all_dtypes() {
  std::map<std::string, Tensor> m;
  m["f32"] = filled(DType::F32, {2, 3});
  m["f16"] = filled(DType::F16, {5});
  m["bf16"] = filled(DType::BF16, {3, 1, 2});
  m["i32"] = filled(DType::I32, {4});
  m["i64"] = filled(DType::I64, {2, 2});
  m["bool"] = filled(DType::Bool, {7});
  m["scalar"] = Tensor::scalar_f32(2.5f);
  m["empty"] = Tensor(DType::F32, {0, 3});
  m["empty_i64"] = Tensor(DType::I64, {4, 0});
  return m;
}

TEST(Safetensors, RoundTripEveryDtype) {
  TempDir dir;
  auto tensors = all_dtypes();
  std::map<std::string, std::string> meta{{"format", "pt"}, {"note", "quote \" backslash \\ newline \n ünï"}};
  std::string path = dir.file("all.safetensors");
  write_safetensors(path, tensors, meta);
  SafetensorsContents c = read_safetensors_contents(path);
  ASSERT_EQ(c.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(c.tensors.count(name));
    expect_same(t, c.tensors.at(name));
  }
  EXPECT_EQ(c.metadata, meta);
  // The bytes variant and serialize_safetensors agree with the file.
  std::vector<uint8_t> bytes = testing::read_raw(path);
  EXPECT_EQ(bytes, serialize_safetensors(tensors, meta));
  auto from_bytes = read_safetensors_bytes(bytes.data(), bytes.size(), "mem");
  for (const auto& [name, t] : tensors) expect_same(t, from_bytes.at(name));
  // No temporary file is left behind.
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"all.safetensors"});
}

TEST(Safetensors, WriterLayout) {
  std::map<std::string, Tensor> m{{"b", filled(DType::F16, {3})}, {"a", filled(DType::I64, {1})},
                                  {"c", filled(DType::Bool, {2})}};
  std::vector<uint8_t> bytes = serialize_safetensors(m);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  EXPECT_EQ(n % 8, 0u);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  // Larger dtypes first, entries in offset order, no metadata entry, padded with spaces.
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
            "\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[8,14]},"
            "\"c\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[14,16]}}");
  EXPECT_EQ(bytes.size(), 8 + n + 16);
  // An empty map is a valid file too.
  auto empty = serialize_safetensors({});
  EXPECT_EQ(empty.size(), 16u);
  EXPECT_TRUE(read_safetensors_bytes(empty.data(), empty.size(), "x").empty());
}

TEST(Safetensors, AcceptsPaddingWhitespaceAndZeroSizedTensors) {
  auto m = parse(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
                           "\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                           "\"c\":{\"dtype\":\"I32\",\"shape\":[0,5],\"data_offsets\":[4,4]}} \n\t  ",
                           4));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m["a"].shape(), Shape{0});
  EXPECT_EQ(m["b"].shape(), Shape{});
  EXPECT_EQ(m["c"].shape(), (Shape{0, 5}));
  // JSON escapes in names, whitespace between tokens, null metadata.
  auto m2 = parse(make_file("{ \"__metadata__\" : null , \"x\\u00e9\\ud83d\\ude00\\n\" : { \"shape\" : [ 1 ] ,"
                            " \"data_offsets\" : [ 0 , 1 ] , \"dtype\" : \"BOOL\" } }",
                            1));
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_TRUE(m2.count("x\xc3\xa9\xf0\x9f\x98\x80\n"));
  EXPECT_EQ(m2.begin()->second.data<uint8_t>()[0], 1);  // byte 1 -> true
}

TEST(Safetensors, BoolBytesAreNormalised) {
  auto bytes = make_file("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", 0);
  bytes.push_back(0);
  bytes.push_back(2);
  bytes.push_back(255);
  auto m = parse(bytes);
  EXPECT_EQ(m["b"].data<uint8_t>()[0], 0);
  EXPECT_EQ(m["b"].data<uint8_t>()[1], 1);
  EXPECT_EQ(m["b"].data<uint8_t>()[2], 1);
}

TEST(Safetensors, ErrorHeaderLength) {
  std::vector<uint8_t> tiny{1, 2, 3};
  expect_error([&] { parse(tiny); }, ErrorCode::Format, {"model.safetensors", "too short"});
  auto huge = make_file("{}", 0, uint64_t{1} << 60);
  expect_error([&] { parse(huge); }, ErrorCode::Format, {"header length 1152921504606846976 exceeds the limit"});
  auto over = make_file("{}", 0, 100'000'001);
  expect_error([&] { parse(over); }, ErrorCode::Format, {"exceeds the limit of 100000000"});
  auto past_end = make_file("{}", 0, 3);
  expect_error([&] { parse(past_end); }, ErrorCode::Format, {"header length 3 exceeds the file size (10 bytes)"});
  auto zero = make_file("", 0);
  expect_error([&] { parse(zero); }, ErrorCode::Format, {"does not start with '{'"});
}

TEST(Safetensors, ErrorHeaderText) {
  expect_format_error("{\"a\xff\":1}", 0, {"not valid UTF-8"});
  expect_format_error("{\"a\xc0\x80\":1}", 0, {"not valid UTF-8"});  // overlong
  expect_format_error(" {}", 0, {"does not start with '{'"});
  expect_format_error("[]", 0, {"does not start with '{'"});
  expect_format_error("{", 0, {"invalid header JSON", "unexpected end"});
  expect_format_error("{}x", 0, {"trailing characters"});
  expect_format_error("{} {}", 0, {"trailing characters"});
  expect_format_error("{,}", 0, {"invalid header JSON"});
  expect_format_error("{'a':1}", 0, {"expected a string"});
  expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},}", 4, {"expected a string"});
  expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]}}", 4,
                      {"shape must hold non-negative integers"});
  expect_format_error("{\"a\tb\":1}", 0, {"control character in string"});
  expect_format_error("{\"a\\x\":1}", 0, {"invalid escape"});
  expect_format_error("{\"\\ud800\":1}", 0, {"lone leading surrogate"});
  expect_format_error("{\"\\udc00\":1}", 0, {"lone trailing surrogate"});
  expect_format_error("{\"\\u12\":1}", 0, {"invalid \\u escape"});
  expect_format_error("{\"unterminated", 0, {"unterminated string"});
}

TEST(Safetensors, ErrorEntries) {
  const std::string ok_tail = "\"data_offsets\":[0,4]}}";
  expect_format_error("{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
                      {"model.safetensors: unsupported dtype F64 for tensor 'x'"});
  expect_format_error("{\"x\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, {"unsupported dtype I8 for tensor 'x'"});
  expect_format_error("{\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, {"unsupported dtype U8 for tensor 'x'"});
  expect_format_error("{\"x\":{\"dtype\":\"f32\",\"shape\":[1]," + ok_tail, 4, {"unknown dtype 'f32' for tensor 'x'"});
  expect_format_error("{\"x\":{\"dtype\":5,\"shape\":[1]," + ok_tail, 4, {"tensor 'x': dtype must be a string"});
  expect_format_error("{\"x\":{\"shape\":[1]," + ok_tail, 4, {"tensor 'x': missing field 'dtype'"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\"," + ok_tail, 4, {"tensor 'x': missing field 'shape'"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, {"tensor 'x': missing field 'data_offsets'"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"extra\":1," + ok_tail, 4, {"tensor 'x': unknown field 'extra'"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1]," + ok_tail, 4, {"tensor 'x': duplicate field 'shape'"});
  expect_format_error("{\"x\":[]}", 0, {"tensor 'x': entry must be an object"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[-1]," + ok_tail, 4,
                      {"tensor 'x': shape must hold non-negative integers, found -1"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1.0]," + ok_tail, 4, {"shape must hold non-negative integers, found 1.0"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1e0]," + ok_tail, 4, {"shape must hold non-negative integers, found 1e0"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[01]," + ok_tail, 4, {"leading zero"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[\"1\"]," + ok_tail, 4, {"shape must hold non-negative integers, found a string"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[[1]]," + ok_tail, 4, {"found an array"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":{}," + ok_tail, 4, {"shape must be an array of non-negative integers"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999]," + ok_tail, 4, {"is too large"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4,
                      {"tensor 'x': shape [4294967296, 4294967296, 16] overflows"});
  expect_format_error("{\"x\":{\"dtype\":\"I64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]}}", 4,
                      {"overflows the byte size"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, {"data_offsets must be [begin, end]"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, {"data_offsets must be [begin, end]"});
  expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, {"data_offsets [4, 0] end before"});
  // The message from the brief, verbatim.
  expect_format_error("{\"h.0.attn.c_attn.weight\":{\"dtype\":\"F16\",\"shape\":[4,8],\"data_offsets\":[0,100]}}", 100,
                      {"model.safetensors: tensor 'h.0.attn.c_attn.weight': data_offsets [0, 100] hold 100 bytes but "
                       "shape [4, 8] of F16 needs 64"});
}

TEST(Safetensors, ErrorLayout) {
  auto entry = [](const std::string& n, uint64_t b, uint64_t e) {
    return "\"" + n + "\":{\"dtype\":\"BOOL\",\"shape\":[" + std::to_string(e - b) + "],\"data_offsets\":[" +
           std::to_string(b) + "," + std::to_string(e) + "]}";
  };
  expect_format_error("{" + entry("a", 0, 4) + "," + entry("b", 5, 8) + "}", 8,
                      {"tensor 'b': data_offsets [5, 8] leave a gap after the previous tensor, which ends at byte 4"});
  expect_format_error("{" + entry("a", 0, 4) + "," + entry("b", 3, 8) + "}", 8,
                      {"tensor 'b': data_offsets [3, 8] overlap the previous tensor"});
  expect_format_error("{" + entry("a", 2, 4) + "}", 4, {"tensor 'a': data_offsets [2, 4] leave a gap"});
  expect_format_error("{" + entry("a", 0, 4) + "}", 5, {"the tensors hold 4 bytes but the data buffer after the header is 5 bytes"});
  expect_format_error("{" + entry("a", 0, 4) + "}", 3, {"the tensors hold 4 bytes but the data buffer after the header is 3 bytes"});
  expect_format_error("{}", 1, {"the tensors hold 0 bytes"});
  expect_format_error("{" + entry("a", 0, 4) + "," + entry("a", 4, 8) + "}", 8, {"tensor 'a': duplicate tensor name"});
  // Entries may be listed in any order: they are validated sorted by offset.
  auto ok = parse(make_file("{" + entry("b", 4, 8) + "," + entry("a", 0, 4) + "}", 8));
  EXPECT_EQ(ok.size(), 2u);
}

TEST(Safetensors, ErrorMetadata) {
  expect_format_error("{\"__metadata__\":{\"a\":1}}", 0, {"__metadata__: value of 'a' must be a string, found a number"});
  expect_format_error("{\"__metadata__\":[]}", 0, {"__metadata__: must be an object of strings"});
  expect_format_error("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0, {"duplicate key 'a'"});
  expect_format_error("{\"__metadata__\":{},\"__metadata__\":{}}", 0, {"duplicate __metadata__"});
  expect_format_error("{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0, {"must be a string, found an object"});
}

TEST(Safetensors, DeepNestingIsACleanError) {
  std::string deep = "{\"x\":{\"dtype\":\"F32\",\"shape\":" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  expect_format_error(deep, 0, {"tensor 'x'"});
  std::string deep_meta = "{\"__metadata__\":{\"a\":" + std::string(100000, '{') + "}}";
  expect_format_error(deep_meta, 0, {"__metadata__"});
}

TEST(Safetensors, IOErrors) {
  TempDir dir;
  expect_error([&] { read_safetensors(dir.file("missing.safetensors")); }, ErrorCode::IO,
               {"missing.safetensors", "cannot open"});
  expect_error([&] { read_safetensors(dir.path().string()); }, ErrorCode::IO, {"not a regular file"});
  // Errors in a file name the file.
  testing::write_raw(dir.file("bad.safetensors"), make_file("{}", 3));
  expect_error([&] { read_safetensors(dir.file("bad.safetensors")); }, ErrorCode::Format, {"bad.safetensors: "});
}

TEST(Safetensors, WriteIsAtomic) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  std::map<std::string, Tensor> good{{"a", filled(DType::F32, {3})}};
  write_safetensors(path, good);
  auto before = testing::read_raw(path);
  // A failing write leaves the existing file untouched and no temporary files.
  std::map<std::string, Tensor> bad{{"a", filled(DType::F32, {3})}, {"undefined", Tensor()}};
  expect_error([&] { write_safetensors(path, bad); }, ErrorCode::InvalidArgument, {"tensor 'undefined' is undefined"});
  expect_error([&] { write_safetensors(path, {{"__metadata__", filled(DType::F32, {1})}}); }, ErrorCode::InvalidArgument,
               {"__metadata__"});
  expect_error([&] { write_safetensors(path, {{"bad\xff", filled(DType::F32, {1})}}); }, ErrorCode::InvalidArgument,
               {"not valid UTF-8"});
  EXPECT_EQ(testing::read_raw(path), before);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"w.safetensors"});
  expect_error([&] { write_safetensors(dir.file("no/such/dir/x.safetensors"), good); }, ErrorCode::IO, {"x.safetensors"});
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"w.safetensors"});
}

TEST(Safetensors, DtypeNames) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool})
    EXPECT_EQ(parse_safetensors_dtype(safetensors_dtype_name(t)), t);
  EXPECT_EQ(parse_safetensors_dtype("F64"), std::nullopt);
  EXPECT_EQ(parse_safetensors_dtype("f32"), std::nullopt);
}

// ---- interop with the reference implementation (python safetensors) ----

TEST(SafetensorsPython, ReadsFilesWrittenByPython) {
  GRAPE_REQUIRE_PYTHON();
  TempDir dir;
  auto r = testing::run_python(dir, R"PY(
import numpy as np, safetensors
from safetensors.numpy import save_file
t = {
  "f32": (np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2),
  "f16": np.array([1.0, -2.5, 65504, 6e-8, np.inf, -0.0], dtype=np.float16),
  "i32": np.array([[-2147483648, 2147483647], [0, 7]], dtype=np.int32),
  "i64": np.array([-(2**63), 2**63 - 1, 42], dtype=np.int64),
  "bool": np.array([True, False, True, True], dtype=bool),
  "scalar": np.array(3.25, dtype=np.float32),
  "empty": np.zeros((0, 2), dtype=np.float32),
  "big": np.arange(1000, dtype=np.int64).reshape(10, 100),
}
save_file(t, "py.safetensors", metadata={"format": "np", "k": "v"})
# bf16 has no numpy dtype: write raw bits through TensorSpec.
bits = np.array([0x3f80, 0xc020, 0x7f80, 0x0001], dtype=np.uint16)
spec = safetensors.TensorSpec(dtype="bfloat16", shape=(2, 2), data_ptr=bits.ctypes.data, data_len=bits.nbytes)
f32 = np.array([1.5], dtype=np.float32)
spec2 = safetensors.TensorSpec(dtype="float32", shape=(1,), data_ptr=f32.ctypes.data, data_len=f32.nbytes)
open("bf16.safetensors", "wb").write(bytes(safetensors.serialize({"bf": spec, "z": spec2})))
print("ok")
)PY");
  ASSERT_EQ(r.rc, 0) << r.output;
  SafetensorsContents c = read_safetensors_contents(dir.file("py.safetensors"));
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"format", "np"}, {"k", "v"}}));
  auto& t = c.tensors;
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t["f32"].shape(), (Shape{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(t["f32"].get(i), i * 0.5 - 2);
  EXPECT_EQ(t["f16"].dtype(), DType::F16);
  EXPECT_EQ(t["f16"].get(0), 1.0);
  EXPECT_EQ(t["f16"].get(1), -2.5);
  EXPECT_EQ(t["f16"].get(2), 65504.0);
  EXPECT_EQ(t["f16"].data<uint16_t>()[3], 1);  // 6e-8 -> smallest subnormal
  EXPECT_TRUE(std::isinf(t["f16"].get(4)));
  EXPECT_EQ(t["f16"].data<uint16_t>()[5], 0x8000);
  EXPECT_EQ(t["i32"].get_int(0), INT32_MIN);
  EXPECT_EQ(t["i32"].get_int(1), INT32_MAX);
  EXPECT_EQ(t["i32"].get_int(3), 7);
  EXPECT_EQ(t["i64"].get_int(0), INT64_MIN);
  EXPECT_EQ(t["i64"].get_int(1), INT64_MAX);
  EXPECT_EQ(t["bool"].dtype(), DType::Bool);
  EXPECT_EQ(t["bool"].get_int(0), 1);
  EXPECT_EQ(t["bool"].get_int(1), 0);
  EXPECT_EQ(t["scalar"].shape(), Shape{});
  EXPECT_EQ(t["scalar"].get(0), 3.25);
  EXPECT_EQ(t["empty"].shape(), (Shape{0, 2}));
  EXPECT_EQ(t["big"].get_int(999), 999);

  auto b = read_safetensors(dir.file("bf16.safetensors"));
  ASSERT_EQ(b["bf"].dtype(), DType::BF16);
  EXPECT_EQ(b["bf"].shape(), (Shape{2, 2}));
  EXPECT_EQ(b["bf"].get(0), 1.0);
  EXPECT_EQ(b["bf"].get(1), -2.5);
  EXPECT_TRUE(std::isinf(b["bf"].get(2)));
  EXPECT_EQ(b["bf"].data<uint16_t>()[3], 1);
  EXPECT_EQ(b["z"].get(0), 1.5);
}

TEST(SafetensorsPython, PythonReadsFilesWrittenByGrape) {
  GRAPE_REQUIRE_PYTHON();
  TempDir dir;
  write_safetensors(dir.file("g.safetensors"), all_dtypes(), {{"format", "grape"}, {"ü", "\"x\"\n"}});
  auto r = testing::run_python(dir, R"PY(
import numpy as np, safetensors
from safetensors.numpy import load_file
from safetensors import safe_open
raw = safetensors.deserialize(open("g.safetensors", "rb").read())
d = {name: v for name, v in raw}
assert set(d) == {"f32", "f16", "bf16", "i32", "i64", "bool", "scalar", "empty", "empty_i64"}, set(d)
assert d["bf16"]["dtype"] == "BF16" and list(d["bf16"]["shape"]) == [3, 1, 2]
bf = np.frombuffer(bytes(d["bf16"]["data"]), dtype=np.uint16).astype(np.uint32) << 16
bf = bf.view(np.float32)
np.testing.assert_array_equal(bf, np.arange(6, dtype=np.float32) * 0.25 - 3.5)
del d
# load_file cannot handle bf16 with numpy: load the rest through safe_open
with safe_open("g.safetensors", framework="np") as f:
    assert f.metadata() == {"format": "grape", "ü": "\"x\"\n"}, f.metadata()
    t = {k: f.get_tensor(k) for k in f.keys() if k != "bf16"}
np.testing.assert_array_equal(t["f32"], (np.arange(6, dtype=np.float32) * 0.25 - 3.5).reshape(2, 3))
assert t["f16"].dtype == np.float16
np.testing.assert_array_equal(t["f16"], np.arange(5, dtype=np.float16) * np.float16(0.25) - np.float16(3.5))
assert t["i32"].dtype == np.int32
np.testing.assert_array_equal(t["i32"], -1000 + 37 * np.arange(4))
assert t["i64"].dtype == np.int64
np.testing.assert_array_equal(t["i64"].ravel(), (2**40) * (np.arange(4) % 5) - np.arange(4))
assert t["bool"].dtype == np.bool_
np.testing.assert_array_equal(t["bool"], (np.arange(7) * 5) % 3 == 0)
assert t["scalar"].shape == () and t["scalar"] == 2.5
assert t["empty"].shape == (0, 3) and t["empty_i64"].shape == (4, 0)
print("ok")
)PY");
  EXPECT_EQ(r.rc, 0) << r.output;
}

}  // namespace
}  // namespace grape
