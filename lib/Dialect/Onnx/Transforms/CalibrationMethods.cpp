//===- CalibrationMethods.cpp - Activation ranges for int8 ----------------===//

#include "kiln/Dialect/Onnx/Transforms/CalibrationMethods.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir::kiln::int8;

std::string Method::str() const {
  switch (kind) {
  case MinMax:
    return "minmax";
  case Entropy:
    return "entropy";
  case Percentile: {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "percentile:%g", percentile);
    return buf;
  }
  }
  return "";
}

bool mlir::kiln::int8::parseMethod(llvm::StringRef spec, Method &method,
                                   std::string &error) {
  Method m;
  if (spec == "minmax") {
    m.kind = Method::MinMax;
  } else if (spec == "entropy") {
    m.kind = Method::Entropy;
  } else if (spec == "percentile") {
    m.kind = Method::Percentile;
  } else if (spec.consume_front("percentile:")) {
    m.kind = Method::Percentile;
    if (spec.getAsDouble(m.percentile) || !(m.percentile > 0) ||
        m.percentile > 100) {
      error = "--calibration-method=percentile:P needs 0 < P <= 100, got '" +
              spec.str() + "'";
      return false;
    }
  } else {
    error = "unknown calibration method '" + spec.str() +
            "' (expected minmax, percentile, percentile:P or entropy)";
    return false;
  }
  method = m;
  return true;
}

double mlir::kiln::int8::percentileThreshold(llvm::ArrayRef<int64_t> hist,
                                             double absmax, double percentile) {
  double total = 0;
  for (int64_t c : hist)
    total += static_cast<double>(c);
  if (hist.empty() || total == 0 || percentile >= 100)
    return absmax;
  double width = absmax / static_cast<double>(hist.size());
  double target = percentile / 100.0 * total, cum = 0;
  for (size_t i = 0; i < hist.size(); ++i) {
    cum += static_cast<double>(hist[i]);
    if (cum >= target)
      return std::min(absmax, static_cast<double>(i + 1) * width);
  }
  return absmax;
}

double mlir::kiln::int8::entropyThreshold(llvm::ArrayRef<int64_t> histIn,
                                          double absmax, int64_t levels) {
  // The first bin is left out: it holds a ReLU's zeros (often half of all
  // values), which the zero point represents exactly at any threshold, and
  // whose spike would otherwise dominate the divergence of every candidate
  // whose first level merges several bins, pulling the threshold down to
  // the smallest candidate.
  std::vector<int64_t> hist(histIn.begin(), histIn.end());
  if (!hist.empty())
    hist[0] = 0;
  int64_t bins = static_cast<int64_t>(hist.size());
  if (bins <= levels || absmax <= 0)
    return absmax;
  double width = absmax / static_cast<double>(bins);
  // Suffix sums: what a threshold at bin i clips.
  std::vector<double> above(bins + 1, 0.0);
  for (int64_t i = bins - 1; i >= 0; --i)
    above[i] = above[i + 1] + static_cast<double>(hist[i]);
  if (above[0] == 0)
    return absmax;
  double best = std::numeric_limits<double>::infinity();
  int64_t bestI = bins;
  std::vector<double> p, q, groupSum(levels), groupNonzero(levels);
  for (int64_t i = levels; i <= bins; ++i) {
    // P: the first i bins, the clipped ones added to the last.
    p.assign(hist.begin(), hist.begin() + i);
    p[i - 1] += above[i];
    // Q: the first i bins merged into `levels` groups, each group's mass
    // spread evenly over its non-empty bins.
    std::fill(groupSum.begin(), groupSum.end(), 0.0);
    std::fill(groupNonzero.begin(), groupNonzero.end(), 0.0);
    for (int64_t j = 0; j < i; ++j) {
      int64_t g = j * levels / i;
      groupSum[g] += static_cast<double>(hist[j]);
      groupNonzero[g] += hist[j] != 0;
    }
    q.assign(i, 0.0);
    for (int64_t j = 0; j < i; ++j) {
      int64_t g = j * levels / i;
      if (hist[j] != 0)
        q[j] = groupSum[g] / groupNonzero[g];
    }
    double pSum = 0, qSum = 0;
    for (int64_t j = 0; j < i; ++j) {
      pSum += p[j];
      qSum += q[j];
    }
    if (qSum == 0)
      continue;
    // KL(P || Q); a bin that P has and Q lacks (the clipped mass in an
    // empty last bin) counts as probability 1e-9 in Q rather than
    // infinity, so thresholds there stay comparable.
    double kl = 0;
    for (int64_t j = 0; j < i; ++j) {
      if (p[j] == 0)
        continue;
      double pj = p[j] / pSum, qj = std::max(q[j] / qSum, 1e-9);
      kl += pj * std::log(pj / qj);
    }
    if (kl < best) {
      best = kl;
      bestI = i;
    }
  }
  return std::min(absmax, (static_cast<double>(bestI) + 0.5) * width);
}

bool mlir::kiln::int8::rangeOf(const TensorRecord &r, const Method &method,
                               double &lo, double &hi, std::string &error) {
  lo = std::min(r.min, 0.0);
  hi = std::max(r.max, 0.0);
  if (method.kind == Method::MinMax)
    return true;
  if (r.hist.empty()) {
    error = "has no histogram (ranges recorded for another precision: "
            "recalibrate with --precision=int8, or use "
            "--calibration-method=minmax)";
    return false;
  }
  double t = method.kind == Method::Percentile
                 ? percentileThreshold(r.hist, r.absmax, method.percentile)
                 : entropyThreshold(r.hist, r.absmax, r.min >= 0 ? 256 : 128);
  lo = std::max(lo, -t);
  hi = std::min(hi, t);
  return true;
}

void mlir::kiln::int8::uint8Params(double lo, double hi, float &scale,
                                   int64_t &zeroPoint) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (!(hi - lo > 0) || !std::isfinite(hi - lo)) {
    scale = 1.0f;
    zeroPoint = 0;
    return;
  }
  scale = static_cast<float>((hi - lo) / 255.0);
  double z = std::nearbyint(-lo / static_cast<double>(scale));
  zeroPoint = static_cast<int64_t>(std::clamp(z, 0.0, 255.0));
}

double mlir::kiln::int8::activationError(const TensorRecord &r, double lo,
                                         double hi, double scale) {
  if (r.hist.empty() || !(r.absmax > 0))
    return 0;
  double width = r.absmax / static_cast<double>(r.hist.size());
  bool negative = r.min < 0, positive = r.max > 0;
  double rounding = scale * scale / 12.0, signal = 0, noise = 0;
  // The squared error of a value of magnitude v whose side is clipped at t.
  auto err = [&](double v, double t) {
    return v > t ? (v - t) * (v - t) : rounding;
  };
  for (size_t i = 0; i < r.hist.size(); ++i) {
    double c = static_cast<double>(r.hist[i]);
    if (c == 0)
      continue;
    double v = (static_cast<double>(i) + 0.5) * width;
    signal += c * v * v;
    // The first bin of a tensor without negative values holds a ReLU's
    // zeros, which the zero point represents exactly.
    if (i == 0 && !negative)
      continue;
    // A magnitude seen on both sides counts half on each (the histogram
    // is of |x|); one beyond a side's extreme lies on the other.
    bool pos = positive && v <= r.max + width,
         neg = negative && v <= -r.min + width;
    double e = pos && neg ? 0.5 * (err(v, hi) + err(v, -lo))
               : neg      ? err(v, -lo)
                          : err(v, hi);
    noise += c * e;
  }
  return signal > 0 ? noise / signal : 0;
}
