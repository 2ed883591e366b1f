//===- MatchContraction.cpp - Which contractions get register tiles ------===//
//
// matchContraction: the roles of a contraction's loops for the register
// tiles of Contraction.cpp (rows, the vector dim, broadcast, dot, packed
// panels, bf16 pairs, stencil reads, depthwise shapes), and
// chooseRegisterTile: the tile's rows x vectors from the register file.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::cpu;

namespace {

/// The block argument `v` is, looking through one extension (extf of a
/// float, extsi/extui of an integer; `isUnsigned` says which).
BlockArgument throughExtension(Value v, bool &isUnsigned) {
  isUnsigned = false;
  if (auto ext = v.getDefiningOp<arith::ExtFOp>()) {
    v = ext.getIn();
  } else if (auto ext = v.getDefiningOp<arith::ExtSIOp>()) {
    v = ext.getIn();
  } else if (auto ext = v.getDefiningOp<arith::ExtUIOp>()) {
    v = ext.getIn();
    isUnsigned = true;
  }
  return dyn_cast<BlockArgument>(v);
}

/// Whether the body is `yield(out + in0 * in1)` (either order), inputs
/// maybe extended to the output's type: float (addf, mulf, extf) or
/// integer (addi, muli, extsi/extui). `unsignedIn` gets which inputs
/// extend as unsigned.
bool isMulAddBody(linalg::LinalgOp op, bool unsignedIn[2] = nullptr) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  Operation *add = yield.getOperand(0).getDefiningOp();
  bool isInt = isa_and_nonnull<arith::AddIOp>(add);
  if (!isa_and_nonnull<arith::AddFOp, arith::AddIOp>(add))
    return false;
  Value out = body->getArgument(2);
  Value other;
  if (add->getOperand(0) == out)
    other = add->getOperand(1);
  else if (add->getOperand(1) == out)
    other = add->getOperand(0);
  else
    return false;
  Operation *mul = other.getDefiningOp();
  if (!(isInt ? isa_and_nonnull<arith::MulIOp>(mul)
              : isa_and_nonnull<arith::MulFOp>(mul)))
    return false;
  bool ua = false, ub = false;
  BlockArgument a = throughExtension(mul->getOperand(0), ua);
  BlockArgument b = throughExtension(mul->getOperand(1), ub);
  if (!a || !b || a.getOwner() != body || b.getOwner() != body)
    return false;
  if (isInt != isa<IntegerType>(a.getType()) ||
      isInt != isa<IntegerType>(b.getType()))
    return false;
  unsigned ia = a.getArgNumber(), ib = b.getArgNumber();
  // Only ops in the body: the extensions, the product and the sum.
  size_t ops = body->getOperations().size();
  size_t expected = 3 + (mul->getOperand(0) != a) + (mul->getOperand(1) != b);
  if (!((ia == 0 && ib == 1) || (ia == 1 && ib == 0)) || ops != expected)
    return false;
  if (unsignedIn) {
    unsignedIn[ia] = ua;
    unsignedIn[ib] = ub;
  }
  return true;
}

/// Dims a map reads (projected permutation results).
SmallVector<unsigned> mapDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  return dims;
}

/// Every dim a map's results use.
SmallVector<unsigned> usedDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    if (map.isFunctionOfDim(d))
      dims.push_back(d);
  return dims;
}

} // namespace

std::optional<PackedTerm> mlir::kiln::cpu::matchPackedTerm(AffineExpr e) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin || (bin.getKind() != AffineExprKind::FloorDiv &&
               bin.getKind() != AffineExprKind::Mod))
    return std::nullopt;
  auto d = dyn_cast<AffineDimExpr>(bin.getLHS());
  auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
  if (!d || !c || c.getValue() < 2)
    return std::nullopt;
  return PackedTerm{d.getPosition(), c.getValue(),
                    bin.getKind() == AffineExprKind::FloorDiv};
}

/// Broadcast roles: rows along `m`, vectors along `n` of operand `v`.
static ContractionRoles broadcastRoles(unsigned m, unsigned n, unsigned v) {
  ContractionRoles roles;
  roles.kind = ContractionRoles::Broadcast;
  roles.m = m;
  roles.n = n;
  roles.vectorOperand = v;
  return roles;
}

std::optional<PairsLayout> mlir::kiln::cpu::matchPairsLayout(AffineMap map) {
  // (n floordiv NR, k floordiv 2, (n mod NR) * 2 + k mod 2)
  if (map.getNumResults() != 3)
    return std::nullopt;
  std::optional<PackedTerm> panel = matchPackedTerm(map.getResult(0));
  std::optional<PackedTerm> pair = matchPackedTerm(map.getResult(1));
  if (!panel || !pair || !panel->isPanel || !pair->isPanel || pair->panel != 2)
    return std::nullopt;
  MLIRContext *ctx = map.getContext();
  AffineExpr n = getAffineDimExpr(panel->dim, ctx),
             k = getAffineDimExpr(pair->dim, ctx);
  if (map.getResult(2) != (n % panel->panel) * 2 + k % 2)
    return std::nullopt;
  return PairsLayout{panel->dim, pair->dim, panel->panel};
}

std::optional<QuadsLayout> mlir::kiln::cpu::matchQuadsLayout(AffineMap map) {
  // (n floordiv NR, d..., k floordiv 4, (n mod NR) * 4 + k mod 4)
  unsigned r = map.getNumResults();
  if (r < 3)
    return std::nullopt;
  std::optional<PackedTerm> panel = matchPackedTerm(map.getResult(0));
  std::optional<PackedTerm> quad = matchPackedTerm(map.getResult(r - 2));
  if (!panel || !quad || !panel->isPanel || !quad->isPanel || quad->panel != 4)
    return std::nullopt;
  for (unsigned i = 1; i + 2 < r; ++i)
    if (!isa<AffineDimExpr>(map.getResult(i)))
      return std::nullopt;
  MLIRContext *ctx = map.getContext();
  AffineExpr n = getAffineDimExpr(panel->dim, ctx),
             k = getAffineDimExpr(quad->dim, ctx);
  if (map.getResult(r - 1) != (n % panel->panel) * 4 + k % 4)
    return std::nullopt;
  return QuadsLayout{panel->dim, quad->dim, panel->panel};
}

/// The roles of a matmul or convolution whose vector operand (int8) is
/// packed in quads along k (QuadsLayout, Packing.cpp) and whose row
/// operand (uint8) is read along k innermost: AVX512-VNNI dot products of
/// four bytes (`vpdpbusd`).
static std::optional<ContractionRoles> matchQuads(linalg::LinalgOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  MLIRContext *ctx = op.getContext();
  bool unsignedIn[2] = {false, false};
  for (unsigned v = 0; v < 2; ++v) {
    std::optional<QuadsLayout> quads = matchQuadsLayout(maps[v]);
    if (!quads)
      continue;
    AffineMap rowMap = maps[1 - v], outMap = maps[2];
    Value row = op.getDpsInputs()[1 - v];
    if (rowMap.getNumResults() == 0 || !outMap.isProjectedPermutation() ||
        rowMap.getResults().back() != getAffineDimExpr(quads->k, ctx) ||
        outMap.getResults().back() != getAffineDimExpr(quads->n, ctx) ||
        iters[quads->k] != utils::IteratorType::reduction ||
        !isMulAddBody(op, unsignedIn) || !unsignedIn[1 - v] || unsignedIn[v] ||
        !getElementTypeOrSelf(row.getType()).isInteger(8) ||
        !getElementTypeOrSelf(op.getDpsInputs()[v].getType()).isInteger(8) ||
        !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isInteger(32) ||
        innermostStride(row) != 1 ||
        innermostStride(op.getDpsInits()[0]) != 1 ||
        llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
      continue;
    // The row operand's other indices: dims or stencil terms.
    if (llvm::any_of(rowMap.getResults(), [&](AffineExpr e) {
          return !isa<AffineDimExpr>(e) && !matchStencilTerm(e, iters);
        }))
      continue;
    // Rows: the longest output dim the row operand reads and the vector
    // operand does not.
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    std::optional<unsigned> m;
    for (AffineExpr e : outMap.getResults()) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      if (d != quads->n && rowMap.isFunctionOfDim(d) &&
          !maps[v].isFunctionOfDim(d) && (!m || ranges[d] >= ranges[*m]))
        m = d;
    }
    if (!m)
      continue;
    ContractionRoles roles;
    roles.kind = ContractionRoles::Broadcast;
    roles.m = *m;
    roles.n = quads->n;
    roles.vectorOperand = v;
    roles.k = quads->k;
    roles.panel = quads->panel;
    roles.quads = true;
    roles.unsignedInput[0] = unsignedIn[0];
    roles.unsignedInput[1] = unsignedIn[1];
    return roles;
  }
  return std::nullopt;
}

std::optional<ContractionRoles>
mlir::kiln::cpu::matchContraction(linalg::LinalgOp op) {
  std::optional<ContractionRoles> roles = matchRoles(op);
  if (roles)
    isMulAddBody(op, roles->unsignedInput);
  return roles;
}

std::optional<ContractionRoles>
mlir::kiln::cpu::matchRoles(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.hasIndexSemantics())
    return std::nullopt;
  if (std::optional<ContractionRoles> quads = matchQuads(op))
    return quads;
  // B packed in pairs for bf16 dot products (Packing.cpp): a matmul whose
  // A is read along k.
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  for (unsigned v = 0; v < 2; ++v) {
    std::optional<PairsLayout> pairs =
        matchPairsLayout(op.getIndexingMapsArray()[v]);
    AffineMap rowMap = op.getIndexingMapsArray()[1 - v];
    AffineMap outMap = op.getIndexingMapsArray()[2];
    if (!pairs || !rowMap.isProjectedPermutation() ||
        !outMap.isProjectedPermutation() || rowMap.getNumResults() == 0 ||
        rowMap.getResults().back() !=
            getAffineDimExpr(pairs->k, op.getContext()) ||
        outMap.getResults().back() !=
            getAffineDimExpr(pairs->n, op.getContext()) ||
        iters[pairs->k] != utils::IteratorType::reduction ||
        op.getNumReductionLoops() != 1 || !isMulAddBody(op) ||
        innermostStride(op.getDpsInputs()[1 - v]) != 1 ||
        innermostStride(op.getDpsInits()[0]) != 1)
      continue;
    std::optional<unsigned> m;
    for (AffineExpr e : outMap.getResults()) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      if (rowMap.isFunctionOfDim(d) && d != pairs->n)
        m = d;
    }
    if (!m)
      continue;
    ContractionRoles roles = broadcastRoles(*m, pairs->n, v);
    roles.k = pairs->k;
    roles.panel = pairs->panel;
    roles.pairs = true;
    return roles;
  }
  // Inputs read at dims or stencil terms (`a * d_p + b * d_r`), the output
  // at dims.
  bool stencil = false;
  int64_t panel = 0;
  for (OpOperand *in : op.getDpsInputOperands())
    for (AffineExpr e : op.getMatchingIndexingMap(in).getResults()) {
      if (isa<AffineDimExpr>(e))
        continue;
      if (std::optional<PackedTerm> t = matchPackedTerm(e)) {
        panel = t->panel;
        continue;
      }
      if (!matchStencilTerm(e, iters))
        return std::nullopt;
      stencil = true;
    }
  if (!op.getMatchingIndexingMap(op.getDpsInitOperand(0))
           .isProjectedPermutation())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      op.getNumReductionLoops() == 0)
    return std::nullopt;
  // Float contractions, and integer ones (i8/i16 inputs, i32 accumulator:
  // widened to i32 lanes unless packed in quads for VNNI).
  Type acc = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  bool isInt = acc.isInteger(32);
  if ((!isa<FloatType>(acc) && !isInt) || !isMulAddBody(op))
    return std::nullopt;
  for (Value in : op.getDpsInputs()) {
    Type t = getElementTypeOrSelf(in.getType());
    if (isInt ? !(t.isInteger(8) || t.isInteger(16)) : !isa<FloatType>(t))
      return std::nullopt;
  }
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<unsigned> outDims = mapDims(maps[2]);
  if (outDims.empty() || innermostStride(op.getDpsInits()[0]) != 1)
    return std::nullopt;
  SmallVector<unsigned> in[2] = {usedDims(maps[0]), usedDims(maps[1])};
  auto uses = [&](unsigned operand, unsigned d) {
    return llvm::is_contained(in[operand], d);
  };
  // A row dim: in the output and the row operand, not the vector one (the
  // longest; of equals the innermost, whose rows are nearest in memory).
  auto rowDim = [&](unsigned rowOperand) -> std::optional<unsigned> {
    std::optional<unsigned> best;
    for (unsigned d : outDims)
      if (uses(rowOperand, d) && !uses(1 - rowOperand, d) &&
          (!best || ranges[d] >= ranges[*best]))
        best = d;
    return best;
  };
  unsigned n = outDims.back();
  for (unsigned v = 0; v < 2; ++v) {
    AffineMap map = maps[v];
    if (map.getNumResults() == 0 || uses(1 - v, n))
      continue;
    // The vector operand's innermost index: n, or a stencil term along n
    // (unit stride in memory, at most 4 apart).
    AffineExpr last = map.getResults().back();
    int64_t stride = 1;
    std::optional<PackedTerm> packed = matchPackedTerm(last);
    if (auto d = dyn_cast<AffineDimExpr>(last)) {
      if (d.getPosition() != n)
        continue;
    } else if (packed) {
      // A packed panel: `n floordiv c` first, `n mod c` last, dims
      // between; the panels' columns contiguous.
      auto first = matchPackedTerm(map.getResult(0));
      if (packed->isPanel || packed->dim != n || !first || !first->isPanel ||
          first->dim != n || first->panel != packed->panel ||
          innermostStride(op.getDpsInputs()[v]) != 1)
        continue;
    } else {
      std::optional<StencilTerm> t = matchStencilTerm(last, iters);
      if (!t || t->p != n || t->a > 4 ||
          innermostStride(op.getDpsInputs()[v]) != 1)
        continue;
      stride = t->a;
    }
    std::optional<unsigned> m = rowDim(1 - v);
    // No dim of the row operand alone (a depthwise convolution: weights
    // per channel, which the input has too): rows along an output dim
    // only the vector operand reads (the output's rows), each row with its
    // own vectors and one scalar for all.
    bool rowsInVector = false;
    if (!m) {
      for (unsigned d : outDims)
        if (d != n && !uses(1 - v, d) && uses(v, d) &&
            (!m || ranges[d] > ranges[*m]))
          m = d;
      rowsInVector = m.has_value();
    }
    if (!m)
      continue;
    // The row operand is read at dims or stencil terms (a weight, or a
    // channels-last convolution's input); only the vector operand is
    // packed.
    if (llvm::any_of(maps[1 - v].getResults(),
                     [](AffineExpr e) { return matchPackedTerm(e); }) ||
        (panel && !packed))
      continue;
    ContractionRoles roles = broadcastRoles(*m, n, v);
    roles.vectorStride = stride;
    roles.stencil = !isa<AffineDimExpr>(last) && !packed;
    roles.panel = packed ? packed->panel : 0;
    roles.rowsInVector = rowsInVector;
    return roles;
  }
  // Both operands along n, contiguous (a channels-last depthwise
  // convolution: input and weights per channel): rows along an output dim
  // only one of them reads (the input's columns), whose vectors are read
  // per row; the other's vectors serve all rows.
  if (!panel)
    for (unsigned v = 0; v < 2; ++v) {
      auto innermostIsN = [&](unsigned operand) {
        AffineMap map = maps[operand];
        if (map.getNumResults() == 0)
          return false;
        auto d = dyn_cast<AffineDimExpr>(map.getResults().back());
        return d && d.getPosition() == n &&
               innermostStride(op.getDpsInputs()[operand]) == 1;
      };
      if (!innermostIsN(0) || !innermostIsN(1) ||
          !maps[1 - v].isProjectedPermutation())
        continue;
      std::optional<unsigned> m;
      for (unsigned d : outDims)
        if (d != n && uses(v, d) && !uses(1 - v, d) &&
            (!m || ranges[d] > ranges[*m]))
          m = d;
      if (!m)
        continue;
      ContractionRoles roles = broadcastRoles(*m, n, v);
      roles.rowsInVector = true;
      roles.sharedVectors = true;
      return roles;
    }
  // Dot: both innermost along one reduction, contiguous.
  if (stencil || panel)
    return std::nullopt;
  SmallVector<unsigned> dims[2] = {mapDims(maps[0]), mapDims(maps[1])};
  if (dims[0].empty() || dims[1].empty() || dims[0].back() != dims[1].back())
    return std::nullopt;
  unsigned k = dims[0].back();
  if (op.getIteratorTypesArray()[k] != utils::IteratorType::reduction ||
      innermostStride(op.getDpsInputs()[0]) != 1 ||
      innermostStride(op.getDpsInputs()[1]) != 1)
    return std::nullopt;
  std::optional<unsigned> m = rowDim(0), cols = rowDim(1);
  if (!m || !cols)
    return std::nullopt;
  ContractionRoles roles;
  roles.kind = ContractionRoles::Dot;
  roles.m = *m;
  roles.n = *cols;
  roles.k = k;
  roles.vectorOperand = 1;
  return roles;
}

RegisterTile mlir::kiln::cpu::chooseRegisterTile(linalg::LinalgOp op,
                                                 const ContractionRoles &roles,
                                                 int64_t vectorBits) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Type acc = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  RegisterTile t;
  t.lanes = std::max<int64_t>(vectorBits / elementBits(acc), 1);
  // Accumulators the register file holds beside the operands: 24 of 32
  // zmm, 12 of 16 ymm/xmm.
  int64_t budget = vectorBits >= 512 ? 24 : 12;
  if (roles.kind == ContractionRoles::Broadcast) {
    int64_t n = ranges[roles.n];
    t.vectors = std::clamp<int64_t>((n + t.lanes - 1) / t.lanes, 1, 2);
    t.rows = std::min<int64_t>(ranges[roles.m],
                               std::min<int64_t>(budget / t.vectors, 8));
  } else {
    t.rows = std::min<int64_t>(ranges[roles.m], 4);
    t.vectors = std::min<int64_t>(ranges[roles.n], budget / 2 / t.rows * 2);
    t.vectors = std::clamp<int64_t>(t.vectors, 1, 4);
  }
  return t;
}
