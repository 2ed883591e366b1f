//===- Einsum.cpp - Einsum equations --------------------------------------===//

#include "kiln/Dialect/Onnx/IR/Einsum.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <map>

using namespace mlir;
using namespace mlir::kiln::onnxops;

namespace {

int letterLabel(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return 26 + (c - 'a');
  return -1;
}

/// One term's labels; `rank` (when >= 0) sizes its ellipsis, else the
/// widest one (`maxEllipsis`) does.
FailureOr<SmallVector<int>> parseTerm(StringRef term, int64_t rank,
                                      int64_t maxEllipsis) {
  SmallVector<int> labels;
  size_t dots = term.find("...");
  if (dots != StringRef::npos && term.find("...", dots + 3) != StringRef::npos)
    return failure();
  int64_t letters = llvm::count_if(term, [](char c) { return c != '.'; });
  int64_t ell = 0;
  if (dots != StringRef::npos)
    ell = rank >= 0 ? rank - letters : maxEllipsis;
  if (ell < 0)
    return failure();
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (i != dots)
        return failure(); // a lone '.'
      for (int64_t k = 0; k < ell; ++k)
        labels.push_back(kEinsumEllipsis + (maxEllipsis - ell) + k);
      i += 2;
      continue;
    }
    int l = letterLabel(c);
    if (l < 0)
      return failure();
    labels.push_back(l);
  }
  if (rank >= 0 && static_cast<int64_t>(labels.size()) != rank)
    return failure();
  return labels;
}

} // namespace

FailureOr<EinsumLabels>
mlir::kiln::onnxops::parseEinsum(StringRef equation, ArrayRef<int64_t> ranks,
                                 std::string &error) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  StringRef eqRef(eq);
  auto [lhs, rhs] = eqRef.split("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size()) {
    error = "the equation has " + std::to_string(terms.size()) + " terms for " +
            std::to_string(ranks.size()) + " inputs";
    return failure();
  }
  int64_t maxEll = 0;
  for (auto [term, rank] : llvm::zip(terms, ranks))
    if (term.contains("..."))
      maxEll = std::max<int64_t>(
          maxEll, rank - llvm::count_if(term, [](char c) { return c != '.'; }));
  EinsumLabels labels;
  for (auto [i, term] : llvm::enumerate(terms)) {
    FailureOr<SmallVector<int>> l = parseTerm(term, ranks[i], maxEll);
    if (failed(l)) {
      error = "term '" + term.str() + "' does not match the rank of input " +
              std::to_string(i);
      return failure();
    }
    labels.inputs.push_back(*l);
  }
  if (eqRef.contains("->")) {
    FailureOr<SmallVector<int>> l = parseTerm(rhs, -1, maxEll);
    if (failed(l)) {
      error = "bad output term '" + rhs.str() + "'";
      return failure();
    }
    labels.output = *l;
  } else {
    for (int64_t k = 0; k < maxEll; ++k)
      labels.output.push_back(kEinsumEllipsis + k);
    std::map<int, int> count;
    for (auto &ls : labels.inputs)
      for (int l : ls)
        if (l < kEinsumEllipsis)
          ++count[l];
    for (auto [l, c] : count) // sorted, as ONNX's implicit output
      if (c == 1)
        labels.output.push_back(l);
  }
  for (size_t i = 0; i < labels.output.size(); ++i) {
    for (size_t j = i + 1; j < labels.output.size(); ++j)
      if (labels.output[i] == labels.output[j]) {
        error = "an output label is repeated";
        return failure();
      }
    if (!llvm::any_of(labels.inputs, [&](const SmallVector<int> &ls) {
          return llvm::is_contained(ls, labels.output[i]);
        })) {
      error = "an output label appears in no input";
      return failure();
    }
  }
  return labels;
}
