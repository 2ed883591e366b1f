//===- TensorProto.cpp - onnx.TensorProto without protobuf ----------------===//
#include "TensorProto.h"

#include "kiln/Runtime/RegularFile.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace kiln {

namespace {

// onnx.TensorProto field numbers.
enum Field : uint32_t {
  kDims = 1,
  kDataType = 2,
  kFloatData = 4,
  kInt32Data = 5,
  kStringData = 6,
  kInt64Data = 7,
  kName = 8,
  kRawData = 9,
  kDoubleData = 10,
  kUint64Data = 11,
  kExternalData = 13,
  kDataLocation = 14,
};

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5,
};

const char *fieldName(uint32_t field) {
  switch (field) {
  case kDims:
    return "dims";
  case kDataType:
    return "data_type";
  case kFloatData:
    return "float_data";
  case kInt32Data:
    return "int32_data";
  case kStringData:
    return "string_data";
  case kInt64Data:
    return "int64_data";
  case kName:
    return "name";
  case kRawData:
    return "raw_data";
  case kDoubleData:
    return "double_data";
  case kUint64Data:
    return "uint64_data";
  case kExternalData:
    return "external_data";
  case kDataLocation:
    return "data_location";
  default:
    return "unknown";
  }
}

/// A bounds-checked cursor over the wire bytes.
struct Reader {
  const uint8_t *p;
  const uint8_t *end;

  bool atEnd() const { return p == end; }
  size_t remaining() const { return static_cast<size_t>(end - p); }

  bool varint(uint64_t &value) {
    value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (p == end)
        return false;
      uint8_t byte = *p++;
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false; // more than 10 bytes
  }
  bool fixed32(uint32_t &value) {
    if (remaining() < 4)
      return false;
    value = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
            static_cast<uint32_t>(p[2]) << 16 |
            static_cast<uint32_t>(p[3]) << 24;
    p += 4;
    return true;
  }
  bool fixed64(uint64_t &value) {
    uint32_t lo, hi;
    if (!fixed32(lo) || !fixed32(hi))
      return false;
    value = static_cast<uint64_t>(hi) << 32 | lo;
    return true;
  }
  bool bytes(Reader &sub) {
    uint64_t len;
    if (!varint(len) || len > remaining())
      return false;
    sub.p = p;
    sub.end = p + len;
    p += len;
    return true;
  }
};

/// Reads one repeated scalar field, packed or not, appending to `out`.
/// `wire` is the wire type of the tag; `elemWire` the unpacked one.
template <typename T, typename ReadOne>
bool readRepeated(Reader &in, uint32_t wire, uint32_t elemWire,
                  std::vector<T> &out, ReadOne readOne) {
  if (wire == elemWire) {
    T value;
    if (!readOne(in, value))
      return false;
    out.push_back(value);
    return true;
  }
  if (wire != kLengthDelimited)
    return false;
  Reader packed;
  if (!in.bytes(packed))
    return false;
  while (!packed.atEnd()) {
    T value;
    if (!readOne(packed, value))
      return false;
    out.push_back(value);
  }
  return true;
}

bool readVarintU64(Reader &in, uint64_t &v) { return in.varint(v); }
bool readFixed32(Reader &in, uint32_t &v) { return in.fixed32(v); }
bool readFixed64(Reader &in, uint64_t &v) { return in.fixed64(v); }

bool skipField(Reader &in, uint32_t wire) {
  uint64_t ignored;
  uint32_t ignored32;
  Reader sub;
  switch (wire) {
  case kVarint:
    return in.varint(ignored);
  case kFixed64:
    return in.fixed64(ignored);
  case kLengthDelimited:
    return in.bytes(sub);
  case kFixed32:
    return in.fixed32(ignored32);
  default:
    return false; // groups (3, 4) and invalid wire types
  }
}

void putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putTag(std::string &out, uint32_t field, uint32_t wire) {
  putVarint(out, static_cast<uint64_t>(field) << 3 | wire);
}

template <typename T> void storeLE(uint8_t *dst, T value) {
  std::memcpy(dst, &value, sizeof(T)); // little-endian hosts only
}

size_t dtypeSize(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_I8:
  case KILN_DTYPE_U8:
  case KILN_DTYPE_BOOL:
  case KILN_DTYPE_F8E4M3FN:
  case KILN_DTYPE_F8E4M3FNUZ:
  case KILN_DTYPE_F8E5M2:
  case KILN_DTYPE_F8E5M2FNUZ:
    return 1;
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16:
  case KILN_DTYPE_I16:
  case KILN_DTYPE_U16:
    return 2;
  case KILN_DTYPE_F32:
  case KILN_DTYPE_I32:
  case KILN_DTYPE_U32:
    return 4;
  case KILN_DTYPE_F64:
  case KILN_DTYPE_I64:
  case KILN_DTYPE_U64:
    return 8;
  default:
    return 0;
  }
}

/// The value of the 8-bit float `b` with `mb` mantissa bits and exponent
/// bias `bias`; `uz` for the FNUZ formats (0x80 is the only NaN, no -0, no
/// infinity), `fn` for E4M3FN (0x7f/0xff are NaN, no infinity); otherwise
/// IEEE-like (E5M2: an all-ones exponent is infinity or NaN).
double float8ToDouble(uint8_t b, int mb, int bias, bool fn, bool uz) {
  int eb = 7 - mb;
  int exp = (b >> mb) & ((1 << eb) - 1);
  int man = b & ((1 << mb) - 1);
  bool neg = b & 0x80;
  if (uz && b == 0x80)
    return NAN;
  if (fn && (b & 0x7f) == 0x7f)
    return NAN;
  if (!fn && !uz && exp == (1 << eb) - 1)
    return man ? NAN : (neg ? -INFINITY : INFINITY);
  double v = exp == 0 ? std::ldexp(man, 1 - bias - mb)
                      : std::ldexp(man + (1 << mb), exp - bias - mb);
  return neg ? -v : v;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: renormalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | exp << 23 | mant << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace

size_t HostTensor::numElements() const {
  size_t n = 1;
  for (int64_t d : dims)
    n *= static_cast<size_t>(d);
  return n;
}

kiln_dtype_t dtypeFromOnnx(int32_t onnxType) {
  switch (onnxType) {
  case 1:
    return KILN_DTYPE_F32;
  case 2:
    return KILN_DTYPE_U8;
  case 3:
    return KILN_DTYPE_I8;
  case 4:
    return KILN_DTYPE_U16;
  case 5:
    return KILN_DTYPE_I16;
  case 6:
    return KILN_DTYPE_I32;
  case 7:
    return KILN_DTYPE_I64;
  case 9:
    return KILN_DTYPE_BOOL;
  case 10:
    return KILN_DTYPE_F16;
  case 11:
    return KILN_DTYPE_F64;
  case 12:
    return KILN_DTYPE_U32;
  case 13:
    return KILN_DTYPE_U64;
  case 16:
    return KILN_DTYPE_BF16;
  case 17:
    return KILN_DTYPE_F8E4M3FN;
  case 18:
    return KILN_DTYPE_F8E4M3FNUZ;
  case 19:
    return KILN_DTYPE_F8E5M2;
  case 20:
    return KILN_DTYPE_F8E5M2FNUZ;
  default:
    return KILN_DTYPE_INVALID;
  }
}

int32_t dtypeToOnnx(kiln_dtype_t dtype) {
  for (int32_t t = 1; t <= 20; ++t)
    if (dtypeFromOnnx(t) == dtype && dtype != KILN_DTYPE_INVALID)
      return t;
  return 0;
}

bool decodeTensorProto(const uint8_t *bytes, size_t size, HostTensor &out,
                       std::string &error) {
  out = HostTensor();
  Reader in{bytes, bytes + size};
  std::vector<uint64_t> dims, int64Data, uint64Data;
  std::vector<uint32_t> floatData; // bit patterns
  std::vector<uint64_t> int32Data; // varints as read
  std::vector<uint64_t> doubleData;
  const uint8_t *raw = nullptr;
  size_t rawSize = 0;
  bool haveRaw = false, haveType = false;
  uint64_t dataType = 0;

  while (!in.atEnd()) {
    uint64_t tag;
    if (!in.varint(tag)) {
      error = "truncated or malformed field tag";
      return false;
    }
    uint32_t field = static_cast<uint32_t>(tag >> 3);
    uint32_t wire = static_cast<uint32_t>(tag & 7);
    if (field == 0 || tag >> 32) {
      error = "malformed field tag (not a TensorProto?)";
      return false;
    }
    bool ok = true;
    switch (field) {
    case kDims:
      ok = readRepeated(in, wire, kVarint, dims, readVarintU64);
      break;
    case kDataType:
      ok = wire == kVarint && in.varint(dataType);
      haveType = true;
      break;
    case kFloatData:
      ok = readRepeated(in, wire, kFixed32, floatData, readFixed32);
      break;
    case kInt32Data:
      ok = readRepeated(in, wire, kVarint, int32Data, readVarintU64);
      break;
    case kInt64Data:
      ok = readRepeated(in, wire, kVarint, int64Data, readVarintU64);
      break;
    case kUint64Data:
      ok = readRepeated(in, wire, kVarint, uint64Data, readVarintU64);
      break;
    case kDoubleData:
      ok = readRepeated(in, wire, kFixed64, doubleData, readFixed64);
      break;
    case kName: {
      Reader sub;
      ok = wire == kLengthDelimited && in.bytes(sub);
      if (ok)
        out.name.assign(reinterpret_cast<const char *>(sub.p), sub.remaining());
      break;
    }
    case kRawData: {
      Reader sub;
      ok = wire == kLengthDelimited && in.bytes(sub);
      if (ok) {
        raw = sub.p;
        rawSize = sub.remaining();
        haveRaw = true;
      }
      break;
    }
    case kExternalData:
      error = "external data not supported in .pb inputs";
      return false;
    case kDataLocation: {
      uint64_t location = 0;
      ok = wire == kVarint && in.varint(location);
      if (ok && location != 0) {
        error = "external data not supported in .pb inputs";
        return false;
      }
      break;
    }
    default:
      ok = skipField(in, wire);
      break;
    }
    if (!ok) {
      error = "truncated or malformed field " + std::to_string(field) + " (" +
              fieldName(field) + ")";
      return false;
    }
  }

  if (!haveType) {
    error = "missing data_type (not a TensorProto?)";
    return false;
  }
  out.dtype = dtypeFromOnnx(static_cast<int32_t>(dataType));
  if (out.dtype == KILN_DTYPE_INVALID) {
    error = "unsupported data_type " + std::to_string(dataType);
    return false;
  }
  size_t count = 1;
  for (uint64_t d : dims) {
    if (d > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(count, static_cast<size_t>(d), &count)) {
      error = "invalid dims";
      return false;
    }
    out.dims.push_back(static_cast<int64_t>(d));
  }
  size_t elem = dtypeSize(out.dtype);
  size_t bytesNeeded;
  if (__builtin_mul_overflow(count, elem, &bytesNeeded)) {
    error = "invalid dims";
    return false;
  }
  auto countMismatch = [&](const char *field, size_t got) {
    error = std::string(field) + " has " + std::to_string(got) +
            " elements, dims say " + std::to_string(count);
    return false;
  };

  if (haveRaw) {
    if (rawSize != bytesNeeded) {
      error = "raw_data has " + std::to_string(rawSize) +
              " bytes, dims and "
              "data_type say " +
              std::to_string(bytesNeeded);
      return false;
    }
    out.data.assign(raw, raw + rawSize);
    return true;
  }

  // Typed fields. Every case checks the count before allocating.
  switch (out.dtype) {
  case KILN_DTYPE_F32:
    if (floatData.size() != count)
      return countMismatch("float_data", floatData.size());
    out.data.resize(bytesNeeded);
    for (size_t i = 0; i < count; ++i)
      storeLE(&out.data[4 * i], floatData[i]);
    return true;
  case KILN_DTYPE_F64:
    if (doubleData.size() != count)
      return countMismatch("double_data", doubleData.size());
    out.data.resize(bytesNeeded);
    for (size_t i = 0; i < count; ++i)
      storeLE(&out.data[8 * i], doubleData[i]);
    return true;
  case KILN_DTYPE_I64:
    if (int64Data.size() != count)
      return countMismatch("int64_data", int64Data.size());
    out.data.resize(bytesNeeded);
    for (size_t i = 0; i < count; ++i)
      storeLE(&out.data[8 * i], int64Data[i]);
    return true;
  case KILN_DTYPE_U32:
  case KILN_DTYPE_U64:
    if (uint64Data.size() != count)
      return countMismatch("uint64_data", uint64Data.size());
    out.data.resize(bytesNeeded);
    for (size_t i = 0; i < count; ++i) {
      if (elem == 4)
        storeLE(&out.data[4 * i], static_cast<uint32_t>(uint64Data[i]));
      else
        storeLE(&out.data[8 * i], uint64Data[i]);
    }
    return true;
  default: // int32_data holds i32, i16, i8, u16, u8, bool and f16/bf16/f8 bits
    if (int32Data.size() != count)
      return countMismatch("int32_data", int32Data.size());
    out.data.resize(bytesNeeded);
    for (size_t i = 0; i < count; ++i) {
      uint32_t v = static_cast<uint32_t>(int32Data[i]);
      if (elem == 4)
        storeLE(&out.data[4 * i], v);
      else if (elem == 2)
        storeLE(&out.data[2 * i], static_cast<uint16_t>(v));
      else
        out.data[i] =
            static_cast<uint8_t>(out.dtype == KILN_DTYPE_BOOL ? v != 0 : v);
    }
    return true;
  }
}

bool readTensorProtoFile(const std::string &path, HostTensor &out,
                         std::string &error) {
  // A regular file only (a FIFO would block, /dev/zero never end), read
  // up to the size it had when opened.
  uint64_t size = 0;
  const char *why = nullptr;
  int fd = kiln_open_regular_file(path.c_str(), &size, &why);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + why;
    return false;
  }
  std::vector<uint8_t> bytes;
  if (size > (uint64_t(1) << 40)) {
    close(fd);
    error = "'" + path + "' is too large for a TensorProto";
    return false;
  }
  bytes.resize(static_cast<size_t>(size));
  int failed = kiln_read_file_range(fd, 0, size, bytes.data(), &why);
  close(fd);
  if (failed) {
    error = "cannot read '" + path + "': " + why;
    return false;
  }
  std::string invalid;
  if (!decodeTensorProto(bytes.data(), bytes.size(), out, invalid)) {
    error = "'" + path + "' is not a valid TensorProto: " + invalid;
    return false;
  }
  return true;
}

std::string encodeTensorProto(const HostTensor &tensor) {
  std::string out;
  if (!tensor.dims.empty()) {
    std::string packed;
    for (int64_t d : tensor.dims)
      putVarint(packed, static_cast<uint64_t>(d));
    putTag(out, kDims, kLengthDelimited);
    putVarint(out, packed.size());
    out += packed;
  }
  putTag(out, kDataType, kVarint);
  putVarint(out, static_cast<uint64_t>(dtypeToOnnx(tensor.dtype)));
  if (!tensor.name.empty()) {
    putTag(out, kName, kLengthDelimited);
    putVarint(out, tensor.name.size());
    out += tensor.name;
  }
  putTag(out, kRawData, kLengthDelimited);
  putVarint(out, tensor.data.size());
  out.append(reinterpret_cast<const char *>(tensor.data.data()),
             tensor.data.size());
  return out;
}

bool writeTensorProtoFile(const std::string &path, const HostTensor &tensor,
                          std::string &error) {
  std::string bytes = encodeTensorProto(tensor);
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int err = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    error = "cannot write '" + path + "': " + std::strerror(err);
    return false;
  }
  return true;
}

double elementAsDouble(kiln_dtype_t dtype, const void *data, size_t i) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (dtype) {
  case KILN_DTYPE_F16:
    return halfToFloat(load(uint16_t()));
  case KILN_DTYPE_BF16: {
    uint32_t bits = static_cast<uint32_t>(load(uint16_t())) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case KILN_DTYPE_F32:
    return load(float());
  case KILN_DTYPE_F64:
    return load(double());
  case KILN_DTYPE_I8:
    return load(int8_t());
  case KILN_DTYPE_I16:
    return load(int16_t());
  case KILN_DTYPE_I32:
    return load(int32_t());
  case KILN_DTYPE_I64:
    return static_cast<double>(load(int64_t()));
  case KILN_DTYPE_U8:
    return load(uint8_t());
  case KILN_DTYPE_U16:
    return load(uint16_t());
  case KILN_DTYPE_U32:
    return load(uint32_t());
  case KILN_DTYPE_U64:
    return static_cast<double>(load(uint64_t()));
  case KILN_DTYPE_BOOL:
    return load(uint8_t()) != 0;
  case KILN_DTYPE_F8E4M3FN:
    return float8ToDouble(load(uint8_t()), 3, 7, true, false);
  case KILN_DTYPE_F8E4M3FNUZ:
    return float8ToDouble(load(uint8_t()), 3, 8, false, true);
  case KILN_DTYPE_F8E5M2:
    return float8ToDouble(load(uint8_t()), 2, 15, false, false);
  case KILN_DTYPE_F8E5M2FNUZ:
    return float8ToDouble(load(uint8_t()), 2, 16, false, true);
  default:
    return 0;
  }
}

} // namespace kiln
