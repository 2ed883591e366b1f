//===- Inputs.cpp - kiln-run's inputs: files, shapes, random data ---------===//
#include "Inputs.h"

#include <cmath>
#include <cstring>
#include <map>

namespace kiln::run {

std::string shapeString(const int64_t *dims, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

namespace {

/// splitmix64: the same stream on every machine.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1), a multiple of 2^-23 (exact in every float type).
  float uniform() {
    return static_cast<float>(static_cast<int64_t>(next() >> 40) -
                              (int64_t{1} << 23)) /
           static_cast<float>(1 << 23);
  }
};

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// IEEE binary16 of `f` (|f| < 1, finite), rounded to nearest even.
uint16_t toHalf(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  int exponent = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = u & 0x7fffff;
  if (exponent <= 0) { // subnormal half (or zero)
    if (exponent < -10)
      return sign;
    mantissa |= 0x800000;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // carries into the exponent correctly
  return static_cast<uint16_t>(sign | half);
}

uint16_t toBFloat16(float f) {
  uint32_t u = floatBits(f);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

} // namespace

void fillRandom(kiln::HostTensor &t, uint64_t seed) {
  size_t n = 1;
  for (int64_t d : t.dims)
    n *= static_cast<size_t>(d);
  size_t elem = kiln_dtype_size(t.dtype);
  t.data.assign(n * elem, 0);
  Random rng{seed};
  uint8_t *p = t.data.data();
  for (size_t i = 0; i < n; ++i, p += elem) {
    switch (t.dtype) {
    case KILN_DTYPE_F32: {
      float v = rng.uniform();
      std::memcpy(p, &v, 4);
      break;
    }
    case KILN_DTYPE_F64: {
      double v = rng.uniform();
      std::memcpy(p, &v, 8);
      break;
    }
    case KILN_DTYPE_F16:
    case KILN_DTYPE_BF16: {
      float v = rng.uniform();
      uint16_t h = t.dtype == KILN_DTYPE_F16 ? toHalf(v) : toBFloat16(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case KILN_DTYPE_F8E4M3FN:
    case KILN_DTYPE_F8E4M3FNUZ:
    case KILN_DTYPE_F8E5M2:
    case KILN_DTYPE_F8E5M2FNUZ:
      // A bit pattern whose value is finite and within [-1, 1].
      for (;;) {
        *p = static_cast<uint8_t>(rng.next() >> 56);
        double v = kiln::elementAsDouble(t.dtype, p, 0);
        if (std::isfinite(v) && std::fabs(v) <= 1)
          break;
      }
      break;
    case KILN_DTYPE_BOOL:
      *p = static_cast<uint8_t>(rng.next() >> 63);
      break;
    default: { // integers: 0 to 3, little-endian
      uint64_t v = rng.next() >> 62;
      std::memcpy(p, &v, elem); // the low bytes (little-endian host)
      break;
    }
    }
  }
}

bool prepareInputs(const Options &opts,
                   const std::vector<kiln_value_info_t> &info, Inputs &out,
                   std::string &error) {
  size_t numInputs = info.size();
  auto inputNames = [&] {
    std::string names;
    for (size_t i = 0; i < numInputs; ++i)
      names += (i ? ", " : "") + std::string(info[i].name);
    return names;
  };
  auto label = [&](size_t i) {
    return "input " + std::to_string(i) + " ('" + info[i].name + "')";
  };

  // --input files to signature slots: NAME=FILE by name, the others in
  // order into the slots left.
  std::vector<std::string> files(numInputs);
  std::vector<std::string> positional;
  for (const std::string &spec : opts.inputs) {
    size_t eq = spec.find('=');
    size_t slot = numInputs;
    if (eq != std::string::npos)
      for (size_t i = 0; i < numInputs; ++i)
        if (spec.compare(0, eq, info[i].name) == 0 &&
            std::strlen(info[i].name) == eq)
          slot = i;
    if (slot == numInputs) {
      positional.push_back(spec);
      continue;
    }
    if (!files[slot].empty()) {
      error = label(slot) + " given twice";
      return false;
    }
    files[slot] = spec.substr(eq + 1);
  }
  size_t next = 0;
  for (const std::string &file : positional) {
    while (next < numInputs && !files[next].empty())
      ++next;
    if (next == numInputs) {
      error = "model has " + std::to_string(numInputs) + " input" +
              (numInputs == 1 ? "" : "s") + " (" + inputNames() + "), got " +
              std::to_string(opts.inputs.size()) + " --input";
      return false;
    }
    files[next++] = file;
  }

  out.tensors.assign(numInputs, kiln::HostTensor());
  out.random.assign(numInputs, false);
  for (size_t i = 0; i < numInputs; ++i)
    if (!files[i].empty() &&
        !kiln::readTensorProtoFile(files[i], out.tensors[i], error))
      return false;

  // --shapes against the signature and the files.
  std::vector<const InputShape *> shapeOf(numInputs, nullptr);
  for (const InputShape &shape : opts.shapes) {
    size_t i = 0;
    while (i < numInputs && shape.name != info[i].name)
      ++i;
    if (i == numInputs) {
      error =
          "--shapes names '" + shape.name +
          "', which is not an input of the model (its inputs: " + inputNames() +
          ")";
      return false;
    }
    if (shape.dims.size() != info[i].rank) {
      error = "--shapes " + shape.spelling + ": input '" + shape.name +
              "' has rank " + std::to_string(info[i].rank) +
              ", the shape gives " + std::to_string(shape.dims.size()) +
              " dim" + (shape.dims.size() == 1 ? "" : "s");
      return false;
    }
    for (size_t d = 0; d < info[i].rank; ++d)
      if (info[i].dims[d] >= 0 && info[i].dims[d] != shape.dims[d]) {
        error = "--shapes " + shape.spelling + ": dim " + std::to_string(d) +
                " of input '" + shape.name + "' is " +
                std::to_string(info[i].dims[d]) + " in the model";
        return false;
      }
    if (!files[i].empty() && out.tensors[i].dims != shape.dims) {
      error =
          "--shapes " + shape.spelling + ": input '" + shape.name +
          "' is read from '" + files[i] + "', whose shape is " +
          shapeString(out.tensors[i].dims.data(), out.tensors[i].dims.size());
      return false;
    }
    shapeOf[i] = &shape;
  }

  // The symbols the files and --shapes bind, for the other inputs' dims.
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < numInputs; ++i) {
    const std::vector<int64_t> *dims = !files[i].empty() ? &out.tensors[i].dims
                                       : shapeOf[i]      ? &shapeOf[i]->dims
                                                         : nullptr;
    if (!dims || dims->size() != info[i].rank)
      continue; // a file of another rank: the run says so
    for (size_t d = 0; d < info[i].rank; ++d)
      if (info[i].dims[d] < 0 && *info[i].dim_symbols[d])
        bound.emplace(info[i].dim_symbols[d], (*dims)[d]);
  }

  for (size_t i = 0; i < numInputs; ++i) {
    if (!files[i].empty())
      continue;
    kiln::HostTensor &t = out.tensors[i];
    t.name = info[i].name;
    t.dtype = info[i].dtype;
    if (shapeOf[i]) {
      t.dims = shapeOf[i]->dims;
    } else {
      for (size_t d = 0; d < info[i].rank; ++d) {
        int64_t dim = info[i].dims[d];
        const char *symbol = info[i].dim_symbols[d];
        auto it = *symbol ? bound.find(symbol) : bound.end();
        if (dim < 0 && it == bound.end()) {
          error = label(i) + " has the symbolic dim " + std::to_string(d) +
                  (*symbol ? " ('" + std::string(symbol) + "')" : "") +
                  ": give its run shape with --shapes " + info[i].name +
                  ":DxD... or give it an --input file";
          return false;
        }
        t.dims.push_back(dim >= 0 ? dim : it->second);
      }
    }
    // One stream per input: giving another input a file keeps this data.
    fillRandom(t, opts.seed * 0x100000001b3ull + i + 1);
    out.random[i] = true;
  }
  return true;
}

} // namespace kiln::run
