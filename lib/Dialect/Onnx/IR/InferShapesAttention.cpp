//===- InferShapesAttention.cpp - Attention, RotaryEmbedding --------------===//
//
// Shape inference of the Attention family (OnnxFamilies.def). Attention
// (opset 23) takes Q/K/V as [B, H, S, D] or as [B, S, H·D] with the head
// counts in q_num_heads / kv_num_heads:
//   Y                [B, Hq, S, Dv]  (3-D Q: [B, S, Hq·Dv])
//   present_key      [B, Hkv, P + L, D]
//   present_value    [B, Hkv, P + L, Dv]
//   qk_matmul_output [B, Hq, S, P + L]
// with L the keys' sequence length and P past_key's (0 without). Dims not
// known statically stay dynamic. RotaryEmbedding keeps its input's type.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

int64_t mulDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? kDyn : a * b;
}
int64_t addDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? kDyn : a + b;
}

/// Batch, heads, sequence and head size of a Q/K/V operand (dynamic where
/// unknown); failure for a rank other than 3 or 4.
struct Heads {
  int64_t batch = kDyn, heads = kDyn, seq = kDyn, headSize = kDyn;
};
FailureOr<Heads> headsOf(Operation *op, Value v, std::optional<int64_t> n,
                         StringRef what) {
  Heads h;
  std::optional<ArrayRef<int64_t>> s = getShapeOf(v);
  if (!s)
    return h;
  if (s->size() == 4) {
    h = {(*s)[0], (*s)[1], (*s)[2], (*s)[3]};
    return h;
  }
  if (s->size() != 3)
    return op->emitOpError()
               << what << " must be 3-D or 4-D, got rank " << s->size(),
           failure();
  h.batch = (*s)[0];
  h.seq = (*s)[1];
  if (n && *n > 0) {
    h.heads = *n;
    if (!ShapedType::isDynamic((*s)[2])) {
      if ((*s)[2] % *n != 0)
        return op->emitOpError()
                   << what << " hidden size " << (*s)[2]
                   << " is not a multiple of the number of heads " << *n,
               failure();
      h.headSize = (*s)[2] / *n;
    }
  }
  return h;
}

/// The first static value of `dims`, else dynamic.
int64_t firstStatic(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (!ShapedType::isDynamic(d))
      return d;
  return kDyn;
}
} // namespace

InferredTypes AttentionOp::inferResultTypes() {
  Operation *op = getOperation();
  auto heads = [](std::optional<uint64_t> v) -> std::optional<int64_t> {
    if (!v)
      return std::nullopt;
    return static_cast<int64_t>(*v);
  };
  FailureOr<Heads> q = headsOf(op, getQ(), heads(getQNumHeads()), "Q");
  FailureOr<Heads> k = headsOf(op, getK(), heads(getKvNumHeads()), "K");
  FailureOr<Heads> v = headsOf(op, getV(), heads(getKvNumHeads()), "V");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  Type elem = getElementTypeOrSelf(getQ().getType());
  std::optional<ArrayRef<int64_t>> qs = getShapeOf(getQ());
  int64_t past = 0;
  bool hasPast = !isNoValue(getPastKey());
  if (hasPast) {
    std::optional<ArrayRef<int64_t>> ps = getShapeOf(getPastKey());
    past = ps && ps->size() == 4 ? (*ps)[2] : kDyn;
  }
  int64_t batch = firstStatic({q->batch, k->batch, v->batch});
  int64_t total = addDims(past, k->seq);
  int64_t kvHeads = firstStatic({k->heads, v->heads});
  SmallVector<Type> types;
  // Y: the rank of Q.
  if (!qs) {
    types.push_back(UnrankedTensorType::get(elem));
  } else if (qs->size() == 4) {
    types.push_back(
        RankedTensorType::get({batch, q->heads, q->seq, v->headSize}, elem));
  } else {
    types.push_back(RankedTensorType::get(
        {batch, q->seq, mulDims(q->heads, v->headSize)}, elem));
  }
  auto optional = [&](unsigned i, ArrayRef<int64_t> shape) {
    if (i >= op->getNumResults())
      return;
    types.push_back(isa<NoneType>(op->getResult(i).getType())
                        ? Type()
                        : RankedTensorType::get(shape, elem));
  };
  optional(1, {batch, kvHeads, total, k->headSize});
  optional(2, {batch, kvHeads, total, v->headSize});
  optional(3, {batch, q->heads, q->seq, total});
  return types;
}

InferredTypes RotaryEmbeddingOp::inferResultTypes() {
  return SmallVector<Type>{getOperation()->getOperand(0).getType()};
}
