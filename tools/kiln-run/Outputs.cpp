//===- Outputs.cpp - kiln-run's outputs: print, compare, write ------------===//
#include "Outputs.h"

#include "Inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using kiln::HostTensor;

namespace kiln::run {

namespace {
bool isFloat(kiln_dtype_t dtype) {
  return dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_BF16 ||
         dtype == KILN_DTYPE_F32 || dtype == KILN_DTYPE_F64 ||
         dtype == KILN_DTYPE_F8E4M3FN || dtype == KILN_DTYPE_F8E4M3FNUZ ||
         dtype == KILN_DTYPE_F8E5M2 || dtype == KILN_DTYPE_F8E5M2FNUZ;
}

std::string formatValue(kiln_dtype_t dtype, double v) {
  char buf[64];
  if (isFloat(dtype))
    std::snprintf(buf, sizeof(buf), "%.6g", v);
  else if (dtype == KILN_DTYPE_BOOL)
    return v != 0 ? "true" : "false";
  else
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

std::string indexString(size_t flat, const std::vector<int64_t> &dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] ? static_cast<int64_t>(flat % dims[d]) : 0;
    flat = dims[d] ? flat / dims[d] : 0;
  }
  return shapeString(idx.data(), idx.size());
}

} // namespace

void printOutput(size_t i, const OutputRef &out, size_t count) {
  kiln_dtype_t dtype = kiln_tensor_dtype(out.tensor);
  size_t n = kiln_tensor_num_elements(out.tensor);
  std::string values;
  for (size_t k = 0; k < n && k < count; ++k)
    values += (k ? ", " : "") +
              formatValue(dtype, kiln::elementAsDouble(
                                     dtype, kiln_tensor_data(out.tensor), k));
  if (n > count)
    values += ", ...";
  std::printf(
      "output %zu ('%s'): %s %s = [%s]\n", i, out.name.c_str(),
      kiln_dtype_name(dtype),
      shapeString(kiln_tensor_dims(out.tensor), kiln_tensor_rank(out.tensor))
          .c_str(),
      values.c_str());
}

/// Compares one output with its expected tensor and prints one line.
bool compareOutput(size_t i, const OutputRef &out, const HostTensor &expected,
                   double rtol, double atol) {
  kiln_dtype_t dtype = kiln_tensor_dtype(out.tensor);
  const int64_t *dims = kiln_tensor_dims(out.tensor);
  size_t rank = kiln_tensor_rank(out.tensor);
  std::printf("output %zu ('%s'): ", i, out.name.c_str());
  if (dtype != expected.dtype) {
    std::printf("MISMATCH dtype %s, expected %s\n", kiln_dtype_name(dtype),
                kiln_dtype_name(expected.dtype));
    return false;
  }
  if (rank != expected.dims.size() ||
      !std::equal(expected.dims.begin(), expected.dims.end(), dims)) {
    std::printf(
        "MISMATCH shape %s, expected %s\n", shapeString(dims, rank).c_str(),
        shapeString(expected.dims.data(), expected.dims.size()).c_str());
    return false;
  }
  size_t n = kiln_tensor_num_elements(out.tensor);
  const void *got = kiln_tensor_data(out.tensor);
  size_t bad = 0, nanInf = 0, firstBad = 0;
  double maxAbs = 0, maxRef = 0, firstGot = 0, firstWant = 0;
  for (size_t k = 0; k < n; ++k) {
    double a = kiln::elementAsDouble(dtype, got, k);
    double b = kiln::elementAsDouble(dtype, expected.data.data(), k);
    bool ok;
    if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
      nanInf += !ok;
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
      nanInf += !ok;
    } else {
      double diff = std::fabs(a - b);
      maxAbs = std::max(maxAbs, diff);
      maxRef = std::max(maxRef, std::fabs(b));
      ok = diff <= atol + rtol * std::fabs(b);
    }
    if (!ok && bad++ == 0) {
      firstBad = k;
      firstGot = a;
      firstWant = b;
    }
  }
  double maxRel = maxRef > 0 ? maxAbs / maxRef : (maxAbs > 0 ? INFINITY : 0);
  if (bad == 0) {
    std::printf("OK max_rel_err=%.3g max_abs_err=%.3g\n", maxRel, maxAbs);
    return true;
  }
  std::printf("MISMATCH %zu of %zu elements differ (first at %s: got %s, "
              "expected %s)",
              bad, n, indexString(firstBad, expected.dims).c_str(),
              formatValue(dtype, firstGot).c_str(),
              formatValue(dtype, firstWant).c_str());
  if (nanInf)
    std::printf(", %zu NaN/Inf mismatches", nanInf);
  std::printf(", max_rel_err=%.3g max_abs_err=%.3g (rtol=%g atol=%g)\n", maxRel,
              maxAbs, rtol, atol);
  return false;
}

bool writeOutputs(const std::string &dir, const std::vector<OutputRef> &refs,
                  std::string &error) {
  for (size_t i = 0; i < refs.size(); ++i) {
    HostTensor t;
    t.dtype = kiln_tensor_dtype(refs[i].tensor);
    const int64_t *dims = kiln_tensor_dims(refs[i].tensor);
    t.dims.assign(dims, dims + kiln_tensor_rank(refs[i].tensor));
    t.name = refs[i].name;
    const uint8_t *data =
        static_cast<const uint8_t *>(kiln_tensor_data(refs[i].tensor));
    t.data.assign(data, data + kiln_tensor_byte_size(refs[i].tensor));
    std::string path = dir + "/output_" + std::to_string(i) + ".pb";
    if (!kiln::writeTensorProtoFile(path, t, error))
      return false;
  }
  return true;
}

} // namespace kiln::run
