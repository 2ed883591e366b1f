//===- TensorProtoTest.cpp - Tests of the TensorProto codec ---------------===//
#include "TensorProto.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using kiln::HostTensor;

namespace {

HostTensor makeF32(std::vector<int64_t> dims, std::vector<float> values) {
  HostTensor t;
  t.dtype = KILN_DTYPE_F32;
  t.dims = std::move(dims);
  t.name = "x";
  t.data.resize(values.size() * 4);
  if (!values.empty())
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

bool decode(const std::string &bytes, HostTensor &out, std::string &error) {
  return kiln::decodeTensorProto(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), out,
      error);
}

TEST(TensorProtoTest, RoundTrip) {
  HostTensor t = makeF32({2, 3}, {1, 2, 3, 4, 5, -6.5f});
  std::string bytes = kiln::encodeTensorProto(t);
  HostTensor back;
  std::string error;
  ASSERT_TRUE(decode(bytes, back, error)) << error;
  EXPECT_EQ(back.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(back.dims, t.dims);
  EXPECT_EQ(back.name, "x");
  EXPECT_EQ(back.data, t.data);
  EXPECT_EQ(kiln::elementAsDouble(back.dtype, back.data.data(), 5), -6.5);
}

TEST(TensorProtoTest, RoundTripScalarAndEmpty) {
  HostTensor scalar;
  scalar.dtype = KILN_DTYPE_I64;
  scalar.data.resize(8);
  int64_t v = -42;
  std::memcpy(scalar.data.data(), &v, 8);
  HostTensor back;
  std::string error;
  ASSERT_TRUE(decode(kiln::encodeTensorProto(scalar), back, error)) << error;
  EXPECT_TRUE(back.dims.empty());
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_I64, back.data.data(), 0), -42);

  HostTensor empty = makeF32({0, 3}, {});
  ASSERT_TRUE(decode(kiln::encodeTensorProto(empty), back, error)) << error;
  EXPECT_EQ(back.dims, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(back.data.empty());
}

// Bytes as protobuf writes them for typed fields (not raw_data).
TEST(TensorProtoTest, TypedFields) {
  // dims: 2 (unpacked), data_type: FLOAT, float_data packed {1.0, 2.0},
  // an unknown field 20 (varint) to skip, name "w".
  std::string bytes("\x08\x02\x10\x01\x22\x08\x00\x00\x80\x3f\x00\x00\x00\x40"
                    "\xa0\x01\x05\x42\x01w",
                    20);
  HostTensor t;
  std::string error;
  ASSERT_TRUE(decode(bytes, t, error)) << error;
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(t.name, "w");
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 1), 2.0);

  // int64_data, packed {-1, 300}, dims {2} packed.
  std::string i64("\x0a\x01\x02\x10\x07\x3a\x0c\xff\xff\xff\xff\xff\xff\xff"
                  "\xff\xff\x01\xac\x02",
                  19);
  ASSERT_TRUE(decode(i64, t, error)) << error;
  EXPECT_EQ(t.dtype, KILN_DTYPE_I64);
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 0), -1);
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 1), 300);

  // FLOAT16 in int32_data: 0x3c00 == 1.0; BOOL in int32_data.
  std::string f16("\x08\x01\x10\x0a\x28\x80\x78", 7);
  ASSERT_TRUE(decode(f16, t, error)) << error;
  EXPECT_EQ(t.dtype, KILN_DTYPE_F16);
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 0), 1.0);
}

TEST(TensorProtoTest, TruncatedBuffersFail) {
  HostTensor t = makeF32({4}, {1, 2, 3, 4});
  std::string bytes = kiln::encodeTensorProto(t);
  for (size_t len = 0; len < bytes.size(); ++len) {
    HostTensor back;
    std::string error;
    EXPECT_FALSE(decode(bytes.substr(0, len), back, error)) << len;
    EXPECT_FALSE(error.empty());
  }
  HostTensor back;
  std::string error;
  EXPECT_FALSE(decode(bytes.substr(0, bytes.size() - 3), back, error));
  EXPECT_EQ(error, "truncated or malformed field 9 (raw_data)");
}

TEST(TensorProtoTest, GarbageFails) {
  std::string error;
  HostTensor t;
  EXPECT_FALSE(
      decode(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), t,
             error));
  // Deterministic pseudo-random garbage never crashes.
  uint32_t seed = 12345;
  for (int i = 0; i < 2000; ++i) {
    std::string junk;
    for (int j = 0; j < 1 + i % 64; ++j) {
      seed = seed * 1103515245u + 12345u;
      junk.push_back(static_cast<char>(seed >> 16));
    }
    decode(junk, t, error);
  }
}

TEST(TensorProtoTest, Mismatches) {
  std::string error;
  HostTensor t;
  // dims {3} but raw_data of 4 bytes.
  EXPECT_FALSE(decode(
      std::string("\x08\x03\x10\x01\x4a\x04\x00\x00\x00\x00", 10), t, error));
  EXPECT_EQ(error, "raw_data has 4 bytes, dims and data_type say 12");
  // data_type STRING (8).
  EXPECT_FALSE(decode(std::string("\x10\x08", 2), t, error));
  EXPECT_EQ(error, "unsupported data_type 8");
  // data_location EXTERNAL.
  EXPECT_FALSE(decode(std::string("\x10\x01\x70\x01", 4), t, error));
  EXPECT_EQ(error, "external data not supported in .pb inputs");
  // external_data entry.
  EXPECT_FALSE(decode(std::string("\x10\x01\x6a\x00", 4), t, error));
  EXPECT_EQ(error, "external data not supported in .pb inputs");
  // Huge dims with no data: an error, not an allocation.
  EXPECT_FALSE(
      decode(std::string("\x08\xff\xff\xff\xff\x0f\x10\x01", 8), t, error));
  EXPECT_EQ(error, "float_data has 0 elements, dims say 4294967295");
}

TEST(TensorProtoTest, Files) {
  std::string error;
  HostTensor t;
  EXPECT_FALSE(kiln::readTensorProtoFile("/nonexistent/x.pb", t, error));
  EXPECT_EQ(error,
            "cannot open '/nonexistent/x.pb': No such file or directory");
  EXPECT_FALSE(kiln::writeTensorProtoFile("/nonexistent/y.pb", t, error));
  EXPECT_EQ(error,
            "cannot write '/nonexistent/y.pb': No such file or directory");
}

TEST(TensorProtoTest, DtypeMapping) {
  EXPECT_EQ(kiln::dtypeFromOnnx(1), KILN_DTYPE_F32);
  EXPECT_EQ(kiln::dtypeFromOnnx(16), KILN_DTYPE_BF16);
  EXPECT_EQ(kiln::dtypeFromOnnx(9), KILN_DTYPE_BOOL);
  EXPECT_EQ(kiln::dtypeFromOnnx(8), KILN_DTYPE_INVALID);
  EXPECT_EQ(kiln::dtypeToOnnx(KILN_DTYPE_U64), 13);
  EXPECT_EQ(kiln::dtypeToOnnx(KILN_DTYPE_F16), 10);
  EXPECT_EQ(kiln::dtypeFromOnnx(17), KILN_DTYPE_F8E4M3FN);
  EXPECT_EQ(kiln::dtypeFromOnnx(20), KILN_DTYPE_F8E5M2FNUZ);
  EXPECT_EQ(kiln::dtypeToOnnx(KILN_DTYPE_F8E5M2), 19);
  EXPECT_EQ(kiln::dtypeToOnnx(KILN_DTYPE_F8E4M3FNUZ), 18);
}

TEST(TensorProtoTest, Float8Values) {
  // FLOAT8E4M3FN {1.0, NaN, -max, subnormal 2^-9} in int32_data
  // (field 5, packed varints), dims {4}.
  std::string bytes("\x08\x04\x10\x11\x2a\x05\x38\x7f\xfe\x01\x01", 11);
  HostTensor t;
  std::string error;
  ASSERT_TRUE(kiln::decodeTensorProto(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), t, error))
      << error;
  ASSERT_EQ(t.dtype, KILN_DTYPE_F8E4M3FN);
  ASSERT_EQ(t.data.size(), 4u);
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 0), 1.0);
  EXPECT_TRUE(std::isnan(kiln::elementAsDouble(t.dtype, t.data.data(), 1)));
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 2), -448.0);
  EXPECT_EQ(kiln::elementAsDouble(t.dtype, t.data.data(), 3), 0x1p-9);
  // Each format's specials.
  uint8_t e5m2[] = {0x7c, 0xfc, 0x7e, 0x7b};
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_F8E5M2, e5m2, 0), INFINITY);
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_F8E5M2, e5m2, 1), -INFINITY);
  EXPECT_TRUE(std::isnan(kiln::elementAsDouble(KILN_DTYPE_F8E5M2, e5m2, 2)));
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_F8E5M2, e5m2, 3), 57344.0);
  uint8_t uz[] = {0x80, 0x7f, 0x00};
  EXPECT_TRUE(std::isnan(kiln::elementAsDouble(KILN_DTYPE_F8E4M3FNUZ, uz, 0)));
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_F8E4M3FNUZ, uz, 1), 240.0);
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_F8E5M2FNUZ, uz, 1), 57344.0);
  EXPECT_EQ(kiln::elementAsDouble(KILN_DTYPE_F8E5M2FNUZ, uz, 2), 0.0);
  // Written back as raw_data with data_type 17.
  HostTensor back;
  std::string enc = kiln::encodeTensorProto(t);
  ASSERT_TRUE(kiln::decodeTensorProto(
      reinterpret_cast<const uint8_t *>(enc.data()), enc.size(), back, error))
      << error;
  EXPECT_EQ(back.dtype, KILN_DTYPE_F8E4M3FN);
  EXPECT_EQ(back.data, t.data);
}

} // namespace
