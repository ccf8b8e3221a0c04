#include "runtime/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "tests/runtime/rt_test_util.h"

namespace grape {
namespace {

using testing::expect_error;
using testing::TempDir;

// A .npy file from a header dict text (padded with a newline) and a data size.
std::vector<uint8_t> make_npy(const std::string& dict, size_t data_size, int major = 1, int minor = 0) {
  std::string header = dict + "\n";
  std::vector<uint8_t> out{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), static_cast<uint8_t>(minor)};
  size_t len_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_size; ++i) out.push_back(static_cast<uint8_t>(i + 1));
  return out;
}

Tensor parse(const std::vector<uint8_t>& b) { return read_npy_bytes(b.data(), b.size(), "x.npy"); }

void expect_format_error(const std::string& dict, size_t data_size, const std::vector<std::string>& parts) {
  auto b = make_npy(dict, data_size);
  expect_error([&] { parse(b); }, ErrorCode::Format, parts);
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

Tensor filled(DType dt, Shape shape) {
  Tensor t(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dt) {
      case DType::Bool: t.set_int(i, i % 3 == 1); break;
      case DType::I32: t.set_int(i, -5 + i * 1001); break;
      case DType::I64: t.set_int(i, (int64_t{1} << 50) - i * 3); break;
      default: t.set(i, 0.125 * static_cast<double>(i) - 1.0); break;
    }
  }
  return t;
}

TEST(Npy, RoundTripEveryDtype) {
  TempDir dir;
  std::vector<Tensor> ts = {filled(DType::F32, {2, 3}), filled(DType::F16, {7}),   filled(DType::I32, {3, 1, 2}),
                            filled(DType::I64, {4}),    filled(DType::Bool, {5}),  Tensor::scalar_f32(-1.5f),
                            Tensor::scalar_bool(true),  Tensor(DType::F32, {0}),   Tensor(DType::I64, {3, 0, 2})};
  for (size_t k = 0; k < ts.size(); ++k) {
    SCOPED_TRACE(k);
    std::string path = dir.file("t" + std::to_string(k) + ".npy");
    write_npy(path, ts[k]);
    auto bytes = testing::read_raw(path);
    EXPECT_EQ(bytes, serialize_npy(ts[k]));
    // Data starts at a multiple of 64, header ends with a newline.
    size_t hlen = bytes[8] | (bytes[9] << 8);
    EXPECT_EQ((10 + hlen) % 64, 0u);
    EXPECT_EQ(bytes[10 + hlen - 1], '\n');
    Tensor back = read_npy(path);
    EXPECT_EQ(back.dtype(), ts[k].dtype());
    EXPECT_EQ(back.shape(), ts[k].shape());
    ASSERT_EQ(back.nbytes(), ts[k].nbytes());
    EXPECT_EQ(0, std::memcmp(back.raw(), ts[k].raw(), back.nbytes()));
    Tensor mem = read_npy_bytes(bytes.data(), bytes.size(), "mem");
    EXPECT_EQ(0, std::memcmp(mem.raw(), ts[k].raw(), mem.nbytes()));
  }
  EXPECT_EQ(dir.listing().size(), ts.size());  // no temporary files left
}

TEST(Npy, Bf16IsWrittenAsF32) {
  Tensor t = filled(DType::BF16, {2, 2});
  t.data<uint16_t>()[3] = 0x7f80;  // inf
  auto bytes = serialize_npy(t);
  Tensor back = read_npy_bytes(bytes.data(), bytes.size(), "bf");
  EXPECT_EQ(back.dtype(), DType::F32);
  EXPECT_EQ(back.shape(), (Shape{2, 2}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back.get(i), t.get(i));
  EXPECT_TRUE(std::isinf(back.get(3)));
}

TEST(Npy, HeaderWriterFormat) {
  auto b = serialize_npy(filled(DType::F32, {2, 3}));
  std::string h(b.begin() + 10, b.begin() + 10 + (b[8] | (b[9] << 8)));
  EXPECT_EQ(h.substr(0, h.find('}') + 1), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(b[6], 1);
  EXPECT_EQ(b[7], 0);
  auto s = serialize_npy(Tensor(DType::Bool, {4}));
  std::string hs(s.begin() + 10, s.begin() + 10 + (s[8] | (s[9] << 8)));
  EXPECT_NE(hs.find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(hs.find("'shape': (4,)"), std::string::npos);
  auto sc = serialize_npy(Tensor::scalar_i64(1));
  std::string hsc(sc.begin() + 10, sc.begin() + 10 + (sc[8] | (sc[9] << 8)));
  EXPECT_NE(hsc.find("'shape': ()"), std::string::npos);
}

TEST(Npy, AcceptsVersionsAndHeaderVariants) {
  for (int major : {1, 2, 3}) {
    auto b = make_npy(dict("<i4", "(2,)"), 8, major);
    Tensor t = parse(b);
    EXPECT_EQ(t.shape(), Shape{2});
    EXPECT_EQ(t.get_int(0), 0x04030201);
  }
  // Key order, quotes, spacing, no trailing comma, Python 2 long suffix (v1/v2).
  EXPECT_EQ(parse(make_npy("{\"shape\":(1,2),\"fortran_order\":False,\"descr\":\"<f2\"}", 4)).shape(), (Shape{1, 2}));
  EXPECT_EQ(parse(make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3L,), }  ", 24)).shape(), Shape{3});
  EXPECT_EQ(parse(make_npy(dict("|b1", "()"), 1)).shape(), Shape{});
  // Fortran order is fine when the layout equals C order (at most one dim > 1).
  EXPECT_EQ(parse(make_npy(dict("<f4", "(1, 5, 1)", "True"), 20)).shape(), (Shape{1, 5, 1}));
  EXPECT_EQ(parse(make_npy(dict("<f4", "(0, 5, 3)", "True"), 0)).shape(), (Shape{0, 5, 3}));
  // UTF-8 in a version 3 header (in an ignored position there is none; a bad dtype shows it).
  expect_error([&] { parse(make_npy(dict("<é", "(1,)"), 0, 3)); }, ErrorCode::Format, {"unsupported dtype"});
  expect_error([&] { parse(make_npy(dict("<\xff", "(1,)"), 0, 3)); }, ErrorCode::Format, {"not valid UTF-8"});
  // Bool bytes other than 0/1 read as true.
  Tensor bt = parse(make_npy(dict("|b1", "(3,)"), 3));
  EXPECT_EQ(bt.data<uint8_t>()[2], 1);
}

TEST(Npy, ErrorsFile) {
  std::vector<uint8_t> bad{'N', 'O', 'T', 'N', 'P', 'Y', 1, 0, 0, 0};
  expect_error([&] { parse(bad); }, ErrorCode::Format, {"x.npy: not a .npy file (bad magic"});
  std::vector<uint8_t> tiny{0x93, 'N', 'U'};
  expect_error([&] { parse(tiny); }, ErrorCode::Format, {"bad magic"});
  expect_error([&] { parse(make_npy(dict("<f4", "(1,)"), 4, 4)); }, ErrorCode::Format, {"unsupported .npy format version 4.0"});
  expect_error([&] { parse(make_npy(dict("<f4", "(1,)"), 4, 1, 1)); }, ErrorCode::Format, {"version 1.1"});
  auto truncated_header = make_npy(dict("<f4", "(1,)"), 0);
  truncated_header.resize(30);
  expect_error([&] { parse(truncated_header); }, ErrorCode::Format, {"truncated .npy file (header of"});
  std::vector<uint8_t> no_len{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 5};
  expect_error([&] { parse(no_len); }, ErrorCode::Format, {"no header length"});
  std::vector<uint8_t> long_header{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0x11, 0x27, 0, 0};  // 10001
  expect_error([&] { parse(long_header); }, ErrorCode::Format, {"header is 10001 bytes, more than the limit of 10000"});
  std::vector<uint8_t> huge_header{0x93, 'N', 'U', 'M', 'P', 'Y', 3, 0, 0xff, 0xff, 0xff, 0xff};
  expect_error([&] { parse(huge_header); }, ErrorCode::Format, {"more than the limit"});
  expect_format_error(dict("<f4", "(2, 3)"), 23, {"x.npy: truncated .npy file: data is 23 bytes but shape (2, 3) of '<f4' needs 24"});
  expect_format_error(dict("<f4", "(2, 3)"), 25, {"data is 25 bytes but shape (2, 3) of '<f4' needs 24 (trailing data)"});
  expect_format_error(dict("<f4", "()"), 0, {"needs 4"});
}

TEST(Npy, ErrorsDtype) {
  expect_format_error(dict(">f4", "(1,)"), 4, {"big-endian dtype '>f4' is not supported; convert with arr.astype('<f4')"});
  expect_format_error(dict(">i8", "(1,)"), 8, {"big-endian dtype '>i8'"});
  expect_format_error(dict("|O", "(1,)"), 8, {"object arrays (dtype '|O') are not supported"});
  expect_format_error(dict("<f8", "(1,)"), 8, {"unsupported dtype '<f8' (supported: '<f4', '<f2', '<i4', '<i8', '|b1')"});
  expect_format_error(dict("<u2", "(1,)"), 2, {"unsupported dtype '<u2'"});
  expect_format_error(dict("|u1", "(1,)"), 1, {"unsupported dtype '|u1'"});
  expect_format_error(dict("<U3", "(1,)"), 12, {"unsupported dtype '<U3'"});
  expect_format_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4, {"structured dtypes are not supported"});
}

TEST(Npy, ErrorsHeaderDict) {
  expect_format_error(dict("<f4", "(2, 3)", "True"), 24, {"x.npy: Fortran-ordered arrays are not supported; use np.ascontiguousarray"});
  expect_format_error(dict("<f4", "(-2, 3)"), 0, {"negative dimension -2"});
  expect_format_error(dict("<f4", "(99999999999999999999,)"), 0, {"shape dimension too large"});
  expect_format_error(dict("<f4", "(4294967296, 4294967296)"), 0, {"shape (4294967296, 4294967296) overflows the element count"});
  expect_format_error(dict("<i8", "(4611686018427387904,)"), 0, {"overflows the byte size"});
  expect_format_error(dict("<f4", "(3)"), 12, {"'shape' must be a tuple of integers, e.g. (3,)"});
  expect_format_error(dict("<f4", "[3]"), 12, {"'shape' must be a tuple"});
  expect_format_error(dict("<f4", "(3.0,)"), 12, {"'shape' must be a tuple of integers"});
  expect_format_error(dict("<f4", "(03,)"), 12, {"leading zero"});
  expect_format_error(dict("<f4", "(1,)", "1"), 4, {"'fortran_order' must be True or False"});
  expect_format_error("{'descr': '<f4', 'shape': (1,), }", 4, {"missing key 'fortran_order'"});
  expect_format_error("{'descr': '<f4', 'fortran_order': False, }", 4, {"missing key 'shape'"});
  expect_format_error("{'fortran_order': False, 'shape': (1,)}", 4, {"missing key 'descr'"});
  expect_format_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, {"duplicate key 'descr'"});
  expect_format_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 4, {"unexpected key 'extra'"});
  expect_format_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4, {"trailing characters"});
  expect_format_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4, {"unexpected end of header"});
  expect_format_error("{'descr': '<f4\\n', 'fortran_order': False, 'shape': (1,)}", 4, {"escapes in strings"});
  expect_format_error("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", 4, {"invalid .npy header"});
  expect_format_error("", 0, {"unexpected end of header"});
}

TEST(Npy, IOAndWriteErrors) {
  TempDir dir;
  expect_error([&] { read_npy(dir.file("missing.npy")); }, ErrorCode::IO, {"missing.npy", "cannot open"});
  testing::write_raw(dir.file("empty.npy"), {});
  expect_error([&] { read_npy(dir.file("empty.npy")); }, ErrorCode::Format, {"empty.npy: not a .npy file"});
  expect_error([&] { write_npy(dir.file("u.npy"), Tensor()); }, ErrorCode::InvalidArgument, {"undefined"});
  expect_error([&] { write_npy(dir.file("nope/u.npy"), Tensor::scalar_f32(1)); }, ErrorCode::IO, {"u.npy"});
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"empty.npy"});
}

// ---- interop with numpy ----

TEST(NpyPython, ReadsFilesWrittenByNumpy) {
  GRAPE_REQUIRE_PYTHON();
  TempDir dir;
  auto r = testing::run_python(dir, R"PY(
import numpy as np
np.save("f32.npy", (np.arange(24, dtype=np.float32) * 0.5 - 3).reshape(2, 3, 4))
np.save("f16.npy", np.array([0.1, -65504, 5.96e-8, np.inf, np.nan], dtype=np.float16))
np.save("i32.npy", np.array([-2**31, 2**31 - 1, 5], dtype=np.int32))
np.save("i64.npy", np.array([[-2**63, 2**63 - 1]], dtype=np.int64))
np.save("bool.npy", np.array([True, False, False, True]))
np.save("scalar.npy", np.float32(7.5))
np.save("empty.npy", np.zeros((0, 4), dtype=np.int32))
np.save("fortran.npy", np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
np.save("big_endian.npy", np.ones(3, dtype=">f4"))
np.save("f64.npy", np.ones(3))
np.save("object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
np.save("transposed.npy", np.arange(6, dtype=np.int64).reshape(2, 3).T)  # F-contiguous: saved Fortran-ordered
np.save("contiguous.npy", np.ascontiguousarray(np.arange(6, dtype=np.int64).reshape(2, 3).T))
import numpy.lib.format as fmt
with open("v2.npy", "wb") as f:
    a = np.arange(3, dtype=np.int32)
    fmt.write_array_header_2_0(f, fmt.header_data_from_array_1_0(a)); f.write(a.tobytes())
with open("v3.npy", "wb") as f:
    a = np.arange(3, dtype=np.float16)
    h = "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }".encode("utf-8")
    h += b" " * (63 - (12 + len(h)) % 64) + b"\n"
    f.write(b"\x93NUMPY\x03\x00" + len(h).to_bytes(4, "little") + h); f.write(a.tobytes())
assert np.load("v3.npy").tolist() == [0, 1, 2]
print("ok")
)PY");
  ASSERT_EQ(r.rc, 0) << r.output;
  Tensor f32 = read_npy(dir.file("f32.npy"));
  EXPECT_EQ(f32.shape(), (Shape{2, 3, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f32.get(i), i * 0.5 - 3);
  Tensor f16 = read_npy(dir.file("f16.npy"));
  EXPECT_EQ(f16.dtype(), DType::F16);
  EXPECT_EQ(f16.data<uint16_t>()[0], 0x2e66);  // np.float16(0.1)
  EXPECT_EQ(f16.get(1), -65504.0);
  EXPECT_EQ(f16.data<uint16_t>()[2], 1);
  EXPECT_TRUE(std::isinf(f16.get(3)));
  EXPECT_TRUE(std::isnan(f16.get(4)));
  Tensor i32 = read_npy(dir.file("i32.npy"));
  EXPECT_EQ(i32.get_int(0), INT32_MIN);
  EXPECT_EQ(i32.get_int(1), INT32_MAX);
  Tensor i64 = read_npy(dir.file("i64.npy"));
  EXPECT_EQ(i64.shape(), (Shape{1, 2}));
  EXPECT_EQ(i64.get_int(0), INT64_MIN);
  EXPECT_EQ(i64.get_int(1), INT64_MAX);
  Tensor b = read_npy(dir.file("bool.npy"));
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(b.get_int(0), 1);
  EXPECT_EQ(b.get_int(1), 0);
  EXPECT_EQ(b.get_int(3), 1);
  Tensor s = read_npy(dir.file("scalar.npy"));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.get(0), 7.5);
  EXPECT_EQ(read_npy(dir.file("empty.npy")).shape(), (Shape{0, 4}));
  expect_error([&] { read_npy(dir.file("transposed.npy")); }, ErrorCode::Format, {"use np.ascontiguousarray"});
  Tensor tr = read_npy(dir.file("contiguous.npy"));
  EXPECT_EQ(tr.shape(), (Shape{3, 2}));
  EXPECT_EQ(tr.get_int(1), 3);
  EXPECT_EQ(read_npy(dir.file("v2.npy")).get_int(2), 2);
  EXPECT_EQ(read_npy(dir.file("v3.npy")).get(2), 2.0);
  expect_error([&] { read_npy(dir.file("fortran.npy")); }, ErrorCode::Format, {"fortran.npy: Fortran-ordered arrays are not supported"});
  expect_error([&] { read_npy(dir.file("big_endian.npy")); }, ErrorCode::Format, {"big-endian dtype '>f4'"});
  expect_error([&] { read_npy(dir.file("f64.npy")); }, ErrorCode::Format, {"unsupported dtype '<f8'"});
  expect_error([&] { read_npy(dir.file("object.npy")); }, ErrorCode::Format, {"object arrays"});
}

TEST(NpyPython, NumpyReadsFilesWrittenByGrape) {
  GRAPE_REQUIRE_PYTHON();
  TempDir dir;
  write_npy(dir.file("f32.npy"), filled(DType::F32, {2, 3}));
  write_npy(dir.file("f16.npy"), filled(DType::F16, {5}));
  write_npy(dir.file("bf16.npy"), filled(DType::BF16, {4}));
  write_npy(dir.file("i32.npy"), filled(DType::I32, {3, 1}));
  write_npy(dir.file("i64.npy"), filled(DType::I64, {2}));
  write_npy(dir.file("bool.npy"), filled(DType::Bool, {6}));
  write_npy(dir.file("scalar.npy"), Tensor::scalar_i32(-9));
  write_npy(dir.file("empty.npy"), Tensor(DType::F16, {2, 0}));
  auto r = testing::run_python(dir, R"PY(
import numpy as np
def load(n, dtype, shape):
    a = np.load(n)
    assert a.dtype == np.dtype(dtype), (n, a.dtype)
    assert a.shape == shape, (n, a.shape)
    assert a.flags.c_contiguous
    return a
np.testing.assert_array_equal(load("f32.npy", "<f4", (2, 3)).ravel(), np.arange(6) * 0.125 - 1)
np.testing.assert_array_equal(load("f16.npy", "<f2", (5,)), np.arange(5) * 0.125 - 1)
np.testing.assert_array_equal(load("bf16.npy", "<f4", (4,)), np.arange(4) * 0.125 - 1)
np.testing.assert_array_equal(load("i32.npy", "<i4", (3, 1)).ravel(), -5 + 1001 * np.arange(3))
np.testing.assert_array_equal(load("i64.npy", "<i8", (2,)), (2**50) - 3 * np.arange(2))
np.testing.assert_array_equal(load("bool.npy", "|b1", (6,)), np.arange(6) % 3 == 1)
assert load("scalar.npy", "<i4", ()) == -9
load("empty.npy", "<f2", (2, 0))
print("ok")
)PY");
  EXPECT_EQ(r.rc, 0) << r.output;
}

}  // namespace
}  // namespace grape
