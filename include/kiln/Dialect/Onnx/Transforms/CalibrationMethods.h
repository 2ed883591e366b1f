//===- CalibrationMethods.h - Activation ranges for int8 --------*- C++ -*-===//
//
// What kiln-onnx-insert-qdq makes of a tensor's calibration record (kilnc
// --calibrate, lib/Compiler/Precision.cpp): the range [lo, hi] that its
// uint8 quantization covers, by one of three methods:
//
//   minmax      the smallest and largest value seen;
//   percentile  |x| clipped at the given percentile of the histogram of
//               |x| (e.g. 99.99: one value in 10^4 saturates);
//   entropy     TensorRT's calibrator: the clipping threshold whose 8-bit
//               histogram is closest (Kullback-Leibler) to the calibration
//               histogram of |x|.
//
// The histogram has `bins` equal bins of |x| over [0, absmax]. The two
// clipping methods give a threshold t; the range is [max(min, -t),
// min(max, t)], always widened to hold 0 (zero must be exact: padding and
// ReLU outputs).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_ONNX_TRANSFORMS_CALIBRATIONMETHODS_H
#define KILN_DIALECT_ONNX_TRANSFORMS_CALIBRATIONMETHODS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::kiln::int8 {

/// Bins of the |x| histograms that calibration records for int8.
constexpr int64_t kHistogramBins = 2048;

/// One tensor's calibration record.
struct TensorRecord {
  double min = 0, max = 0, absmax = 0;
  /// Counts of |x| in equal bins over [0, absmax]; empty when the record
  /// has none (a mixed-precision calibration).
  std::vector<int64_t> hist;
};

/// A parsed --calibration-method: minmax, entropy, percentile or
/// percentile:P (0 < P <= 100; 99.99 by default).
struct Method {
  enum Kind { MinMax, Percentile, Entropy } kind = Percentile;
  double percentile = 99.99;
  /// The spelling, for messages and the report.
  std::string str() const;
};

/// Parses `spec`; false with a message in `error` for anything else.
bool parseMethod(llvm::StringRef spec, Method &method, std::string &error);

/// The clipping threshold of |x| that `method` picks from `hist` (bins of
/// width absmax / hist.size()); `levels` is the number of quantization
/// steps that cover [0, t] (256 for a tensor without negative values, 128
/// otherwise: uint8 with its zero point in the middle).
double percentileThreshold(llvm::ArrayRef<int64_t> hist, double absmax,
                           double percentile);
double entropyThreshold(llvm::ArrayRef<int64_t> hist, double absmax,
                        int64_t levels);

/// The range [lo, hi] (lo <= 0 <= hi) of `record` by `method`; false with
/// `error` when the method needs a histogram the record lacks.
bool rangeOf(const TensorRecord &record, const Method &method, double &lo,
             double &hi, std::string &error);

/// uint8 asymmetric parameters of [lo, hi]: scale (hi - lo) / 255 and the
/// zero point round(-lo / scale) in [0, 255]; scale 1, zero point 0 for an
/// empty range.
void uint8Params(double lo, double hi, float &scale, int64_t &zeroPoint);

/// The relative mean squared error E[(q(x) - x)^2] / E[x^2] of quantizing
/// the values of `record`'s histogram over [lo, hi] with step `scale`:
/// scale^2 / 12 (rounding) for a value inside the range, its squared
/// distance to the range's end beyond it; a first bin without negative
/// values is exact (a ReLU's zeros). 0 without a histogram.
double activationError(const TensorRecord &record, double lo, double hi,
                       double scale);

} // namespace mlir::kiln::int8

#endif // KILN_DIALECT_ONNX_TRANSFORMS_CALIBRATIONMETHODS_H
