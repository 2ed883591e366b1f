//===- Einsum.cpp - Einsum ------------------------------------------------===//
//
// The equation is parsed at compile time into one linalg.generic: one loop
// per distinct label (output labels first, then summed ones), each input
// read through the map of its labels (a label repeated within a term reads
// a diagonal), the product of the inputs added into a zero-filled output.
// Ellipsis dims are labels too, aligned to the right and broadcast (size 1
// against a larger size) like numpy.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

#include <map>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

/// Labels: 0..51 letters (A-Z, a-z), 100+k the k-th ellipsis dim (counted from the
/// left of the widest ellipsis).
constexpr int kEllipsis = 100;

int letterLabel(char c) {
  // In ASCII order (the implicit output sorts its labels).
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return 26 + (c - 'a');
  return -1;
}

/// Parses one term into labels; `rank` (when >= 0) sizes its ellipsis.
FailureOr<SmallVector<int>> parseTerm(StringRef term, int64_t rank,
                                      int64_t &ellipsisDims,
                                      int64_t maxEllipsis) {
  SmallVector<int> labels;
  size_t dots = term.find("...");
  if (dots != StringRef::npos && term.find("...", dots + 3) != StringRef::npos)
    return failure();
  int64_t letters = 0;
  for (char c : term)
    if (c != '.')
      ++letters;
  int64_t ell = 0;
  if (dots != StringRef::npos)
    ell = rank >= 0 ? rank - letters : maxEllipsis;
  if (ell < 0)
    return failure();
  ellipsisDims = ell;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (i != dots)
        continue;
      for (int64_t k = 0; k < ell; ++k)
        labels.push_back(kEllipsis + (maxEllipsis - ell) + k);
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

LogicalResult lowerEinsum(Operation *op, OpBuilder &b,
                          SmallVectorImpl<Value> &results) {
  Location loc = op->getLoc();
  FailureOr<RankedTensorType> ty = rankedResult(op);
  if (failed(ty))
    return failure();
  Type elem = ty->getElementType();
  if (!isa<FloatType, IntegerType>(elem))
    return nodeError(op) << "unsupported element type " << elem, failure();
  std::string eq;
  for (char c : getStr(op, "equation", ""))
    if (c != ' ')
      eq.push_back(c);
  StringRef eqRef(eq);
  auto [lhs, rhs] = eqRef.split("->");
  bool explicitOut = eqRef.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  unsigned n = op->getNumOperands();
  if (terms.size() != n)
    return nodeError(op) << "the equation has " << terms.size() << " terms for "
                         << n << " inputs",
           failure();
  SmallVector<RankedTensorType> types;
  int64_t maxEll = 0;
  for (unsigned i = 0; i < n; ++i) {
    FailureOr<RankedTensorType> t = rankedOperand(op, i);
    if (failed(t))
      return failure();
    if (t->getElementType() != elem)
      return nodeError(op) << "inputs and output must have one element type",
             failure();
    types.push_back(*t);
    int64_t letters = 0;
    for (char c : terms[i])
      if (c != '.')
        ++letters;
    if (terms[i].contains("..."))
      maxEll = std::max(maxEll, t->getRank() - letters);
  }
  SmallVector<SmallVector<int>> inLabels;
  for (unsigned i = 0; i < n; ++i) {
    int64_t ell = 0;
    FailureOr<SmallVector<int>> l =
        parseTerm(terms[i], types[i].getRank(), ell, maxEll);
    if (failed(l))
      return nodeError(op) << "term '" << terms[i]
                           << "' does not match the rank of input " << i,
             failure();
    inLabels.push_back(*l);
  }
  SmallVector<int> outLabels;
  if (explicitOut) {
    int64_t ell = 0;
    FailureOr<SmallVector<int>> l = parseTerm(rhs, -1, ell, maxEll);
    if (failed(l))
      return nodeError(op) << "bad output term '" << rhs << "'", failure();
    outLabels = *l;
  } else {
    for (int64_t k = 0; k < maxEll; ++k)
      outLabels.push_back(kEllipsis + k);
    std::map<int, int> count;
    for (auto &ls : inLabels)
      for (int l : ls)
        if (l < kEllipsis)
          ++count[l];
    for (auto [l, c] : count) // sorted, as ONNX's implicit output
      if (c == 1)
        outLabels.push_back(l);
  }
  if (static_cast<int64_t>(outLabels.size()) != ty->getRank())
    return nodeError(op) << "the output term has " << outLabels.size()
                         << " dims, the output " << ty->getRank(),
           failure();
  // Loops: output labels, then the others in order of appearance.
  SmallVector<int> loops(outLabels);
  for (auto &ls : inLabels)
    for (int l : ls)
      if (!llvm::is_contained(loops, l))
        loops.push_back(l);
  for (size_t i = 0; i < outLabels.size(); ++i)
    for (size_t j = i + 1; j < outLabels.size(); ++j)
      if (outLabels[i] == outLabels[j])
        return nodeError(op) << "an output label is repeated", failure();
  // Static size of each label (the non-1 size when broadcast), and where to
  // read a dynamic one.
  llvm::DenseMap<int, int64_t> size;
  llvm::DenseMap<int, std::pair<unsigned, int64_t>> dynFrom;
  for (unsigned i = 0; i < n; ++i)
    for (auto [d, l] : llvm::enumerate(inLabels[i])) {
      int64_t s = types[i].getDimSize(d);
      if (ShapedType::isDynamic(s)) {
        dynFrom.try_emplace(l, i, d);
        continue;
      }
      auto it = size.find(l);
      if (it == size.end() || it->second == 1)
        size[l] = s;
      else if (s != 1 && s != it->second)
        return nodeError(op) << "inputs disagree on the size of a label",
               failure();
    }
  for (int l : outLabels)
    if (!size.count(l) && !dynFrom.count(l))
      return nodeError(op) << "an output label appears in no input", failure();

  MLIRContext *ctx = b.getContext();
  int64_t nLoops = loops.size();
  auto loopOf = [&](int l) {
    return static_cast<unsigned>(llvm::find(loops, l) - loops.begin());
  };
  SmallVector<AffineMap> maps;
  for (unsigned i = 0; i < n; ++i) {
    SmallVector<AffineExpr> exprs;
    for (auto [d, l] : llvm::enumerate(inLabels[i])) {
      int64_t s = types[i].getDimSize(d);
      auto it = size.find(l);
      if (s == 1 && it != size.end() && it->second != 1)
        exprs.push_back(getAffineConstantExpr(0, ctx));
      else
        exprs.push_back(getAffineDimExpr(loopOf(l), ctx));
    }
    maps.push_back(AffineMap::get(nLoops, 0, exprs, ctx));
  }
  SmallVector<AffineExpr> outExprs;
  for (int l : outLabels)
    outExprs.push_back(getAffineDimExpr(loopOf(l), ctx));
  maps.push_back(AffineMap::get(nLoops, 0, outExprs, ctx));
  SmallVector<Value> dyn;
  for (auto [d, l] : llvm::enumerate(outLabels)) {
    if (!ty->isDynamicDim(d))
      continue;
    auto it = dynFrom.find(l);
    if (it == dynFrom.end()) {
      dyn.push_back(arith::ConstantIndexOp::create(b, loc, size[l]));
      continue;
    }
    dyn.push_back(tensor::DimOp::create(
        b, loc, op->getOperand(it->second.first), it->second.second));
  }
  // Half-precision operands accumulate in f32 and round once.
  bool halfInputs = elem.isF16() || elem.isBF16();
  Type accElem = halfInputs ? Type(b.getF32Type()) : elem;
  auto accType = RankedTensorType::get(ty->getShape(), accElem);
  Value init = filledTensor(b, loc, accType, dyn, b.getZeroAttr(accElem));
  SmallVector<utils::IteratorType> iters;
  for (int64_t i = 0; i < nLoops; ++i)
    iters.push_back(i < static_cast<int64_t>(outLabels.size())
                        ? utils::IteratorType::parallel
                        : utils::IteratorType::reduction);
  bool fp = isa<FloatType>(elem);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{accType}, op->getOperands(), ValueRange{init}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        auto in = [&](unsigned i) -> Value {
          return halfInputs
                     ? arith::ExtFOp::create(nb, l, accElem, a[i]).getResult()
                     : a[i];
        };
        Value p = in(0);
        for (unsigned i = 1; i < n; ++i)
          p = fp ? arith::MulFOp::create(nb, l, p, in(i)).getResult()
                 : arith::MulIOp::create(nb, l, p, a[i]).getResult();
        Value acc = a[n];
        Value r = fp ? arith::AddFOp::create(nb, l, acc, p).getResult()
                     : arith::AddIOp::create(nb, l, acc, p).getResult();
        linalg::YieldOp::create(nb, l, r);
      });
  Value r = generic.getResult(0);
  if (halfInputs)
    r = buildElementwise(b, loc, *ty, r,
                         [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           return arith::TruncFOp::create(nb, l, elem, a[0]);
                         });
  results.push_back(r);
  return success();
}

} // namespace

void lowering::registerEinsumLowerings(llvm::StringMap<LowerFn> &t) {
  t["Einsum"] = lowerEinsum;
}
