//===- Signal.cpp - Window functions ---------------------------------------===//
//
// The Signal family (OnnxFamilies.def): the window generators HannWindow,
// HammingWindow and BlackmanWindow (DFT and STFT would go here).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::lowering;

namespace {

/// Element `i` of a 1-D integer tensor (or the scalar of a 0-D one) as an
/// index, read on the host.
Value extractIndex(OpBuilder &b, Location loc, Value t, int64_t i) {
  auto tt = cast<RankedTensorType>(t.getType());
  SmallVector<Value> ix;
  if (tt.getRank() == 1)
    ix.push_back(idx(b, loc, i));
  Value v = tensor::ExtractOp::create(b, loc, toSignless(b, loc, t), ix);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

Value maxIdx(OpBuilder &b, Location loc, Value a, int64_t m) {
  return arith::MaxSIOp::create(b, loc, a, idx(b, loc, m));
}

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

/// A window of length `size` (input 0): w[n] = sum_k a_k cos(2 pi k n / D)
/// with D = size when periodic, size - 1 otherwise; computed in f64.
template <typename OpTy> LowerOpFn<OpTy> window(SmallVector<double> coeffs) {
  return [coeffs](OpTy op, OpBuilder &b,
                  SmallVectorImpl<Value> &results) -> LogicalResult {
    FailureOr<RankedTensorType> ty = rankedResult(op);
    FailureOr<RankedTensorType> ts = rankedOperand(op, 0);
    if (failed(ty) || failed(ts))
      return failure();
    if (ty->getRank() != 1 || ts->getRank() > 1 ||
        !ts->getElementType().isInteger())
      return nodeError(op) << "expects an integer scalar size and a 1-D result",
             failure();
    Type elem = ty->getElementType();
    if (!isa<FloatType>(elem) && !elem.isSignlessInteger())
      return nodeError(op) << "output type " << elem << " is not supported",
             failure();
    Location loc = op->getLoc();
    Value size = maxIdx(b, loc, extractIndex(b, loc, op->getOperand(0), 0), 0);
    bool periodic = asInt(op.getPeriodic()) != 0;
    Value den =
        periodic ? size : arith::SubIOp::create(b, loc, size, idx(b, loc, 1));
    Type f64 = b.getF64Type();
    Value denF = arith::SIToFPOp::create(
        b, loc, f64, arith::IndexCastOp::create(b, loc, b.getI64Type(), den));
    SmallVector<Value> dyn;
    if (ty->isDynamicDim(0))
      dyn.push_back(size);
    Value init = emptyTensor(b, loc, *ty, dyn);
    MLIRContext *ctx = b.getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
    results.push_back(
        linalg::GenericOp::create(
            b, loc, TypeRange{*ty}, ValueRange{}, ValueRange{init},
            ArrayRef<AffineMap>{id},
            ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
            [&](OpBuilder &nb, Location l, ValueRange) {
              Value i = linalg::IndexOp::create(nb, l, 0);
              Value n = arith::SIToFPOp::create(
                  nb, l, f64,
                  arith::IndexCastOp::create(nb, l, nb.getI64Type(), i));
              Value phase = arith::DivFOp::create(
                  nb, l,
                  arith::MulFOp::create(
                      nb, l, n,
                      scalarConstant(nb, l, f64, 2 * llvm::numbers::pi)),
                  denF);
              Value w = scalarConstant(nb, l, f64, coeffs[0]);
              for (size_t k = 1; k < coeffs.size(); ++k) {
                Value c = math::CosOp::create(
                    nb, l,
                    arith::MulFOp::create(nb, l, phase,
                                          scalarConstant(nb, l, f64, k)));
                w = arith::AddFOp::create(
                    nb, l, w,
                    arith::MulFOp::create(
                        nb, l, c, scalarConstant(nb, l, f64, coeffs[k])));
              }
              Value r;
              if (auto ft = dyn_cast<FloatType>(elem))
                r = ft.getWidth() == 64
                        ? w
                        : arith::TruncFOp::create(nb, l, elem, w).getResult();
              else
                r = arith::FPToSIOp::create(nb, l, elem, w);
              linalg::YieldOp::create(nb, l, r);
            })
            .getResult(0));
    return success();
  };
}

} // namespace

void lowering::populateSignalLoweringPatterns(RewritePatternSet &patterns) {
  FamilyPatterns<OnnxFamily::Signal> t(patterns);
  t.add<onnxops::HannWindowOp>(window<onnxops::HannWindowOp>({0.5, -0.5}));
  t.add<onnxops::HammingWindowOp>(
      window<onnxops::HammingWindowOp>({25.0 / 46.0, -(1.0 - 25.0 / 46.0)}));
  t.add<onnxops::BlackmanWindowOp>(
      window<onnxops::BlackmanWindowOp>({0.42, -0.5, 0.08}));
}
