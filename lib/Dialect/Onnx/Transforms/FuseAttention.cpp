//===- FuseAttention.cpp - Attention subgraphs as one Attention op --------===//
//
// Exporters write scaled dot-product attention as a chain of ops; this pass
// rewrites each such chain into one `onnx.Attention` (opset 23/24 semantics:
// Y = softmax(Q·Kᵀ·scale + mask)·V over [B, H, S, D] operands), so that a
// target can run it as one kernel whose S×L scores never reach memory. The
// spellings recognized, around a Softmax over the last axis whose only user
// is the MatMul by V:
//   - the scale after the product: Div(Q·Kᵀ, c) (torch.onnx) or
//     Mul(Q·Kᵀ, c) (tf2onnx, HF), or none (scale 1);
//   - the scale folded into Q before it: MatMul(Mul(Q, c), Kᵀ);
//   - an additive float mask: Add(scores, mask) in either operand order;
//   - Kᵀ as Transpose([B, L, H, D], perm [0, 2, 3, 1]) (heads split from
//     [B, L, H·D]), Transpose([B, H, L, D], perm [0, 1, 3, 2]), or any
//     [B, H, D, L] value (transposed back here).
// The scales must be scalar constants; Q, K and V rank 4 with one element
// type. Anything else is left as it is. A Q, K or V that is data movement
// of a per-tensor DequantizeLinear (an int8 build's --int8-attention) is
// read as that movement of the integers, dequantized right before the
// attention, which the lowering then takes in 8 bits.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNONNXFUSEATTENTION
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnxops;

namespace {

/// The value of a scalar (one-element) float constant.
std::optional<double> scalarOf(Value v) {
  std::optional<SmallVector<double>> values = getConstantFloatValues(v);
  if (!values || values->size() != 1)
    return std::nullopt;
  return values->front();
}

/// `x` times a scalar constant: its other operand and the constant.
std::optional<std::pair<Value, double>> scaledBy(Value x) {
  if (auto div = x.getDefiningOp<DivOp>())
    if (std::optional<double> c = scalarOf(div.getB()); c && *c != 0.0)
      return std::make_pair(div.getA(), 1.0 / *c);
  if (auto mul = x.getDefiningOp<MulOp>()) {
    if (std::optional<double> c = scalarOf(mul.getB()))
      return std::make_pair(mul.getA(), *c);
    if (std::optional<double> c = scalarOf(mul.getA()))
      return std::make_pair(mul.getB(), *c);
  }
  return std::nullopt;
}

bool isRank4(Value v, Type elem) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 4 && t.getElementType() == elem;
}

bool hasPerm(TransposeOp t, ArrayRef<int64_t> perm) {
  std::optional<ArrayAttr> attr = t.getPerm();
  if (!attr || attr->size() != perm.size())
    return false;
  for (auto [a, p] : llvm::zip(*attr, perm))
    if (cast<IntegerAttr>(a).getInt() != p)
      return false;
  return true;
}

Value transpose(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return TransposeOp::create(b, loc, t.clone(shape), x,
                             b.getI64ArrayAttr(perm));
}

/// x when `v` [B, S, H, D] is Reshape(x [B, S, H·D]) (static shapes): the
/// heads split from the hidden dim; `heads` is H.
Value splitHeads(Value v, int64_t &heads) {
  auto r = v.getDefiningOp<ReshapeOp>();
  if (!r)
    return Value();
  auto in = dyn_cast<RankedTensorType>(r.getData().getType());
  auto out = dyn_cast<RankedTensorType>(v.getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      in.getRank() != 3 || out.getRank() != 4 ||
      in.getDimSize(0) != out.getDimSize(0) ||
      in.getDimSize(1) != out.getDimSize(1) ||
      in.getDimSize(2) != out.getDimSize(2) * out.getDimSize(3))
    return Value();
  heads = out.getDimSize(2);
  return r.getData();
}

/// x when `v` [B, H, S, D] is Transpose(Reshape(x [B, S, H·D]), perm [0, 2,
/// 1, 3]): how the exporters move a 3-D input's heads before its sequence.
Value headsOf(Value v, int64_t &heads) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t || !hasPerm(t, {0, 2, 1, 3}))
    return Value();
  return splitHeads(t.getData(), heads);
}

/// The Reshape [B, S, H·D] after `y` [B, H, S, D] (through a Transpose of
/// perm [0, 2, 1, 3]): the heads merged back into the hidden dim.
ReshapeOp mergedHeads(Value y) {
  if (!y.hasOneUse())
    return ReshapeOp();
  auto t = dyn_cast<TransposeOp>(*y.getUsers().begin());
  if (!t || !hasPerm(t, {0, 2, 1, 3}) || !t->hasOneUse())
    return ReshapeOp();
  auto r = dyn_cast<ReshapeOp>(*t->getUsers().begin());
  auto yType = dyn_cast<RankedTensorType>(y.getType());
  auto out = r ? dyn_cast<RankedTensorType>(r.getType()) : nullptr;
  if (!r || !yType || !out || !yType.hasStaticShape() ||
      !out.hasStaticShape() || out.getRank() != 3 ||
      out.getDimSize(0) != yType.getDimSize(0) ||
      out.getDimSize(1) != yType.getDimSize(2) ||
      out.getDimSize(2) != yType.getDimSize(1) * yType.getDimSize(3))
    return ReshapeOp();
  return r;
}

/// Whether `dq` dequantizes 8-bit integers with one constant scale and
/// zero point (which commute with moving elements around).
bool isPerTensorDequantize(DequantizeLinearOp dq) {
  auto xt = dyn_cast<RankedTensorType>(dq->getOperand(0).getType());
  if (!xt || !isa<IntegerType>(xt.getElementType()) ||
      xt.getElementTypeBitWidth() != 8)
    return false;
  for (unsigned i = 1; i < dq->getNumOperands(); ++i) {
    Value p = dq->getOperand(i);
    if (isNoValue(p))
      continue;
    auto pt = dyn_cast<RankedTensorType>(p.getType());
    if (!pt || !pt.hasStaticShape() || pt.getNumElements() != 1 ||
        (!getConstantFloatValues(p) && !getConstantIntValues(p)))
      return false;
  }
  return true;
}

/// `v` when it is not data movement (Split, Slice, Reshape, Transpose,
/// Squeeze, Unsqueeze, Flatten, Identity) of a per-tensor
/// DequantizeLinear; else the same movement of the integers, dequantized
/// after it: the attention then reads 8-bit operands (its lowering takes
/// the integers and the scale into the fused kernel).
Value sinkDequantize(OpBuilder &b, Value v) {
  SmallVector<Value> chain; // the moved values, from `v` up
  Value cur = v;
  DequantizeLinearOp dq;
  while (Operation *def = cur.getDefiningOp()) {
    if ((dq = dyn_cast<DequantizeLinearOp>(def)))
      break;
    if (!movesElements(def))
      return v;
    chain.push_back(cur);
    cur = def->getOperand(0);
  }
  if (!dq || !isPerTensorDequantize(dq))
    return v;
  Value x = dq->getOperand(0);
  Type ints = cast<RankedTensorType>(x.getType()).getElementType();
  for (Value moved : llvm::reverse(chain)) {
    Operation *def = moved.getDefiningOp();
    IRMapping map;
    map.map(def->getOperand(0), x);
    Operation *copy = b.clone(*def, map);
    for (Value r : copy->getResults())
      if (auto rt = dyn_cast<RankedTensorType>(r.getType()))
        r.setType(rt.clone(ints));
    x = copy->getResult(cast<OpResult>(moved).getResultNumber());
  }
  IRMapping map;
  map.map(dq->getOperand(0), x);
  Operation *copy = b.clone(*dq, map);
  copy->getResult(0).setType(v.getType());
  return copy->getResult(0);
}

/// Rewrites the attention chain ending in `softmax`; false when it is not
/// one.
bool fuse(SoftmaxOp softmax) {
  Value probs = softmax.getResult();
  auto probsType = dyn_cast<RankedTensorType>(probs.getType());
  if (!probsType || probsType.getRank() != 4 || !probs.hasOneUse())
    return false;
  Type elem = probsType.getElementType();
  if (!isa<FloatType>(elem))
    return false;
  int64_t axis = softmax.getAxis();
  if (axis != -1 && axis != 3)
    return false;
  auto pv = dyn_cast<MatMulOp>(*probs.getUsers().begin());
  if (!pv || pv.getA() != probs || !isRank4(pv.getB(), elem))
    return false;

  // softmax(scores [+ mask]): the mask is the Add's other operand.
  Value x = softmax.getInput();
  Value mask;
  auto matmulBehind = [&](Value v) {
    while (std::optional<std::pair<Value, double>> s = scaledBy(v))
      v = s->first;
    return v.getDefiningOp<MatMulOp>() != nullptr;
  };
  if (auto add = x.getDefiningOp<AddOp>()) {
    if (!add->hasOneUse())
      return false;
    bool aIsScores = matmulBehind(add.getA());
    Value scores = aIsScores ? add.getA() : add.getB();
    mask = aIsScores ? add.getB() : add.getA();
    auto maskType = dyn_cast<RankedTensorType>(mask.getType());
    if (!matmulBehind(scores) || !maskType || maskType.getRank() > 4 ||
        maskType.getElementType() != elem)
      return false;
    x = scores;
  }
  double scale = 1.0;
  while (std::optional<std::pair<Value, double>> s = scaledBy(x)) {
    if (!x.hasOneUse())
      return false;
    scale *= s->second;
    x = s->first;
  }
  auto qk = x.getDefiningOp<MatMulOp>();
  if (!qk || !x.hasOneUse() || !isRank4(qk.getA(), elem) ||
      !isRank4(qk.getB(), elem))
    return false;
  Value q = qk.getA(), kt = qk.getB();
  // Q pre-scaled by a constant (a scale split between Q and the scores).
  while (std::optional<std::pair<Value, double>> s = scaledBy(q)) {
    if (!q.hasOneUse() || !isRank4(s->first, elem))
      break;
    scale *= s->second;
    q = s->first;
  }

  OpBuilder b(pv);
  Location loc = pv.getLoc();
  Value none = NoValueOp::create(b, loc, b.getNoneType());
  auto t = kt.getDefiningOp<TransposeOp>();
  // The 3-D form (Q, K, V [B, S, H·D] and Y [B, S, H·Dv], the heads given
  // by q_num_heads and kv_num_heads) when the heads are split from the
  // hidden dim before it and merged back after it: no transpose is left
  // around the attention (the lowering views [B, S, H·D] as [B, S, H, D]);
  // head splits other ops share stay for them.
  {
    int64_t qHeads = 0, kHeads = 0, vHeads = 0;
    Value q3 = headsOf(q, qHeads), v3 = headsOf(pv.getB(), vHeads), k3;
    if (t && hasPerm(t, {0, 2, 3, 1}))
      k3 = splitHeads(t.getData(), kHeads);
    else if (t && hasPerm(t, {0, 1, 3, 2}))
      k3 = headsOf(t.getData(), kHeads);
    ReshapeOp merged = mergedHeads(pv.getResult());
    if (q3 && k3 && v3 && merged && kHeads == vHeads && qHeads % kHeads == 0) {
      q3 = sinkDequantize(b, q3);
      k3 = sinkDequantize(b, k3);
      v3 = sinkDequantize(b, v3);
      auto attention = AttentionOp::create(
          b, loc,
          TypeRange{merged.getType(), b.getNoneType(), b.getNoneType(),
                    b.getNoneType()},
          q3, k3, v3, mask ? mask : none, none, none, none,
          /*is_causal=*/b.getI64IntegerAttr(0),
          /*kv_num_heads=*/b.getI64IntegerAttr(kHeads),
          /*q_num_heads=*/b.getI64IntegerAttr(qHeads),
          /*qk_matmul_output_mode=*/b.getI64IntegerAttr(0),
          b.getF32FloatAttr(scale), /*softcap=*/b.getF32FloatAttr(0.0f),
          /*softmax_precision=*/nullptr);
      merged.getResult().replaceAllUsesWith(attention.getY());
      return true;
    }
  }
  // K as [B, H, L, D].
  Value k;
  if (t && hasPerm(t, {0, 1, 3, 2}))
    k = t.getData();
  else if (t && hasPerm(t, {0, 2, 3, 1}))
    k = transpose(b, loc, t.getData(), {0, 2, 1, 3});
  else
    k = transpose(b, loc, kt, {0, 1, 3, 2});
  auto yType = cast<RankedTensorType>(pv.getResult().getType());
  q = sinkDequantize(b, q);
  k = sinkDequantize(b, k);
  Value v = sinkDequantize(b, pv.getB());
  auto attention = AttentionOp::create(
      b, loc,
      TypeRange{yType, b.getNoneType(), b.getNoneType(), b.getNoneType()}, q, k,
      v, mask ? mask : none, none, none, none,
      /*is_causal=*/b.getI64IntegerAttr(0), /*kv_num_heads=*/nullptr,
      /*q_num_heads=*/nullptr, /*qk_matmul_output_mode=*/b.getI64IntegerAttr(0),
      b.getF32FloatAttr(scale), /*softcap=*/b.getF32FloatAttr(0.0f),
      /*softmax_precision=*/nullptr);
  pv.getResult().replaceAllUsesWith(attention.getY());
  pv.erase();
  return true;
}

struct FuseAttentionPass
    : public kiln::impl::KilnOnnxFuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp op : softmaxes)
      fuse(op);
    // The chains' ops are Pure: the pipeline's canonicalizer removes them.
  }
};

} // namespace
