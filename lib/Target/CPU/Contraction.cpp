//===- Contraction.cpp - Contractions as register tiles of FMAs ----------===//
//
// Contractions (`out + a * b`) become register tiles written here: a tile
// of rows × vectors accumulators loaded from the output, kept in registers
// (loop-carried values) across every reduction loop, and stored once.
//   - Broadcast (the output's innermost dim `n` is the other operand's
//     innermost too, e.g. matmul, convolutions after Stencils.cpp): per
//     reduction step, `vectors` loads of the vector operand along n, one
//     scalar of the row operand per row broadcast, rows × vectors FMAs.
//   - Dot (both operands innermost along one reduction `k`, e.g. A·Bᵀ):
//     per step of `lanes` along k, one vector of each operand per row and
//     column and an FMA per pair, one horizontal sum per output at the end.
// Partial tiles (the ends of m, n and k) get fewer rows or columns and
// out-of-bounds transfers (masked). Integer contractions (i8/i16 into i32)
// widen their inputs to i32 lanes and multiply-add; a uint8 x int8 one
// whose int8 operand is packed in quads takes VNNI dot products instead
// (`vpdpbusd`: per 32-bit lane, four byte products summed into it), or
// with AMX (`int8Tiles`) tile products: per block of 2 x 2 tiles of R x 16
// int32 (R rows, a divisor of m up to 16), for every 64 bytes of k two
// tiles of the row operand (R rows of 64 uint8, read at the row
// operand's stride), two of the packed int8 panels (16 quads of 16
// columns) and four `tdpbusd`; the tiles go through a scratch buffer to
// the epilogue. Which ops get which roles is MatchContraction.cpp's.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::cpu;

namespace {

/// The operand's indices for the current value of every loop dim (results
/// are dims, `a * d + b * e`, or a packed panel's `d floordiv c`, `d mod c`).
SmallVector<Value> indicesOf(OpBuilder &b, Location loc, AffineMap map,
                             ArrayRef<Value> dimValues) {
  SmallVector<Value> idx;
  auto scaled = [&](AffineExpr e) -> Value {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return dimValues[d.getPosition()];
    auto mul = cast<AffineBinaryOpExpr>(e);
    Value v = dimValues[cast<AffineDimExpr>(mul.getLHS()).getPosition()];
    int64_t c = cast<AffineConstantExpr>(mul.getRHS()).getValue();
    return arith::MulIOp::create(b, loc, v, indexConst(b, loc, c));
  };
  for (AffineExpr e : map.getResults()) {
    if (isa<AffineDimExpr>(e)) {
      idx.push_back(scaled(e));
      continue;
    }
    // A packed panel's `d floordiv c` and `d mod c` (Packing.cpp).
    if (std::optional<PackedTerm> t = matchPackedTerm(e)) {
      Value d = dimValues[t->dim];
      Value c = indexConst(b, loc, t->panel);
      idx.push_back(t->isPanel
                        ? arith::DivUIOp::create(b, loc, d, c).getResult()
                        : arith::RemUIOp::create(b, loc, d, c).getResult());
      continue;
    }
    auto add = dyn_cast<AffineBinaryOpExpr>(e);
    auto simple = [](AffineExpr t) {
      if (isa<AffineDimExpr>(t))
        return true;
      auto mul = dyn_cast<AffineBinaryOpExpr>(t);
      return mul && mul.getKind() == AffineExprKind::Mul &&
             isa<AffineDimExpr>(mul.getLHS()) &&
             isa<AffineConstantExpr>(mul.getRHS());
    };
    if (add && add.getKind() == AffineExprKind::Add && simple(add.getLHS()) &&
        simple(add.getRHS())) {
      idx.push_back(arith::AddIOp::create(b, loc, scaled(add.getLHS()),
                                          scaled(add.getRHS())));
      continue;
    }
    // Anything else (a bf16 pair's `(n mod NR) * 2 + k mod 2`).
    idx.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, e), dimValues));
  }
  return idx;
}

/// Emits the register tiles of one contraction.
class ContractionEmitter {
public:
  ContractionEmitter(RewriterBase &b, linalg::LinalgOp op,
                     const ContractionRoles &roles, const RegisterTile &tile,
                     int64_t kBlock, Value fillValue, EpilogueWriter *epilogue,
                     bool int8Tiles = false)
      : b(b), op(op), roles(roles), tile(tile), loc(op.getLoc()),
        kBlock(kBlock), fillValue(fillValue), epilogue(epilogue),
        int8Tiles(int8Tiles) {
    isInt = isa<IntegerType>(
        cast<MemRefType>(op.getDpsInits()[0].getType()).getElementType());
    ranges = op.getStaticLoopRanges();
    iters = op.getIteratorTypesArray();
    vecIn = op.getDpsInputs()[roles.vectorOperand];
    rowIn = op.getDpsInputs()[1 - roles.vectorOperand];
    out = op.getDpsInits()[0];
    vecMap = op.getIndexingMapsArray()[roles.vectorOperand];
    rowMap = op.getIndexingMapsArray()[1 - roles.vectorOperand];
    outMap = op.getIndexingMapsArray()[2];
    accType = cast<MemRefType>(out.getType()).getElementType();
    accVector = VectorType::get({tile.lanes}, accType);
    dimValues.resize(ranges.size());
  }

  void emit() {
    b.setInsertionPoint(op);
    makeDenseView();
    // Loops over the parallel dims outside the tile.
    for (unsigned d = 0; d < ranges.size(); ++d) {
      if (iters[d] != utils::IteratorType::parallel || d == roles.m ||
          d == roles.n)
        continue;
      if (ranges[d] == 1) {
        dimValues[d] = indexConst(b, loc, 0);
        continue;
      }
      auto loop = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                                     indexConst(b, loc, ranges[d]),
                                     indexConst(b, loc, 1));
      b.setInsertionPointToStart(loop.getBody());
      dimValues[d] = loop.getInductionVar();
    }
    if (roles.kind == ContractionRoles::Broadcast && int8Tiles && planTiles()) {
      emitTiles();
    } else if (roles.kind == ContractionRoles::Broadcast) {
      // `first`: the accumulators start at the fused fill's value; `last`:
      // they go through the fused epilogue.
      auto tiles = [&](bool first, bool last) {
        forBlocks(roles.n, tile.vectors * tile.lanes, [&](Value n0, int64_t n) {
          forBlocks(roles.m, tile.rows, [&](Value m0, int64_t rows) {
            emitBroadcastTile(m0, rows, n0, n, first, last);
          });
        });
      };
      // One long reduction in blocks of kBlock: the vector operand's panel
      // of a block (kBlock x the tile's columns) stays in L1 across the
      // row tiles, the accumulators are reloaded once per block.
      SmallVector<unsigned> red = reductions();
      if (red.size() == 1 && ranges[red[0]] > 2 * kBlock) {
        unsigned k = red[0];
        int64_t blocks = (ranges[k] + kBlock - 1) / kBlock;
        // Blocks [from, to) in a loop (or one), the first and the last
        // peeled when ends are fused.
        auto run = [&](int64_t from, int64_t to, bool first, bool last) {
          if (from >= to)
            return;
          OpBuilder::InsertionGuard guard(b);
          int64_t end = std::min(to * kBlock, ranges[k]);
          if (to - from == 1) {
            kBlockStart = indexConst(b, loc, from * kBlock);
            kBlockSize = end - from * kBlock;
            tiles(first, last);
            return;
          }
          // Full blocks only: a partial last one is peeled by the caller.
          auto loop = scf::ForOp::create(
              b, loc, indexConst(b, loc, from * kBlock),
              indexConst(b, loc, to * kBlock), indexConst(b, loc, kBlock));
          b.setInsertionPointToStart(loop.getBody());
          kBlockStart = loop.getInductionVar();
          kBlockSize = kBlock;
          tiles(first, last);
        };
        bool partial = ranges[k] % kBlock != 0;
        if (!fillValue && !epilogue) {
          run(0, blocks - partial, false, false);
          run(blocks - partial, blocks, false, false);
        } else {
          run(0, 1, true, blocks == 1);
          run(1, blocks - 1, false, false);
          run(std::max<int64_t>(blocks - 1, 1), blocks, false, true);
        }
      } else {
        tiles(true, true);
      }
    } else
      forBlocks(roles.m, tile.rows, [&](Value m0, int64_t rows) {
        forBlocks(roles.n, tile.vectors, [&](Value n0, int64_t cols) {
          emitDotTile(m0, rows, n0, cols);
        });
      });
    b.eraseOp(op);
  }

private:
  /// Calls `body(start, size)` for the full blocks of `block` along `dim`
  /// (in a loop) and for the partial one at its end.
  void forBlocks(unsigned dim, int64_t block,
                 function_ref<void(Value, int64_t)> body) {
    int64_t extent = ranges[dim];
    int64_t full = extent / block;
    OpBuilder::InsertionGuard guard(b);
    if (full == 1) {
      body(indexConst(b, loc, 0), block);
    } else if (full > 1) {
      auto loop = scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                                     indexConst(b, loc, full * block),
                                     indexConst(b, loc, block));
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      body(loop.getInductionVar(), block);
    }
    if (extent % block)
      body(indexConst(b, loc, full * block), extent % block);
  }

  /// A vector operand read with a stride of 2 to 4 along `n` (a strided
  /// convolution's input): the same memory as a view of unit stride, read
  /// `stride` times as wide and deinterleaved (a shuffle) instead of one
  /// scalar load per lane.
  void makeDenseView() {
    auto type = cast<MemRefType>(vecIn.getType());
    int64_t stride = innermostStride(vecIn);
    if (roles.kind != ContractionRoles::Broadcast || type.getRank() == 0 ||
        ShapedType::isDynamic(stride) || stride < 2 || stride > 4 ||
        !type.hasStaticShape())
      return;
    dense = unitStrideView(b, loc, vecIn, stride);
    denseStride = stride;
  }

  Value readVector(Value memref, AffineMap map, VectorType type,
                   bool inBounds) {
    Value pad = arith::ConstantOp::create(b, loc, type.getElementType(),
                                          b.getZeroAttr(type.getElementType()));
    SmallVector<Value> idx = indicesOf(b, loc, map, dimValues);
    if (memref == vecIn && roles.stencil) {
      // `a * n + b * r` along the row: lanes * a elements from the first
      // lane's, every a-th kept; bounds checked (the window's last tile
      // may reach past the row).
      int64_t a = roles.vectorStride;
      auto wide = VectorType::get({tile.lanes * a}, type.getElementType());
      AffineMap minor = AffineMap::get(
          map.getNumResults(), 0,
          {getAffineDimExpr(map.getNumResults() - 1, b.getContext())},
          b.getContext());
      Value v = vector::TransferReadOp::create(b, loc, wide, memref, idx, pad,
                                               minor, ArrayRef<bool>{false});
      if (a > 1) {
        SmallVector<int64_t> lanes;
        for (int64_t i = 0; i < tile.lanes; ++i)
          lanes.push_back(i * a);
        v = vector::ShuffleOp::create(b, loc, v, v, lanes);
      }
      return widen(v, memref);
    }
    if (memref == vecIn && dense) {
      idx.back() = arith::MulIOp::create(b, loc, idx.back(),
                                         indexConst(b, loc, denseStride));
      auto wide =
          VectorType::get({tile.lanes * denseStride}, type.getElementType());
      AffineMap minor = AffineMap::get(
          map.getNumResults(), 0,
          {getAffineDimExpr(map.getNumResults() - 1, b.getContext())},
          b.getContext());
      Value w = vector::TransferReadOp::create(b, loc, wide, dense, idx, pad,
                                               minor, ArrayRef<bool>{inBounds});
      SmallVector<int64_t> lanes;
      for (int64_t i = 0; i < tile.lanes; ++i)
        lanes.push_back(i * denseStride);
      Value v = vector::ShuffleOp::create(b, loc, w, w, lanes);
      return widen(v, memref);
    }
    AffineMap perm = AffineMap::get(
        map.getNumResults(), 0,
        {getAffineDimExpr(map.getNumResults() - 1, b.getContext())},
        b.getContext());
    Value v = vector::TransferReadOp::create(b, loc, type, memref, idx, pad,
                                             perm, ArrayRef<bool>{inBounds});
    return widen(v, memref);
  }

  /// `v` (a scalar or vector read from input `memref`) in the accumulator's
  /// type: extf, or extsi/extui as the body extends that input.
  Value widen(Value v, Value memref) {
    Type to = accType;
    if (auto vt = dyn_cast<VectorType>(v.getType()))
      to = vt.clone(accType);
    if (v.getType() == to)
      return v;
    if (!isInt)
      return arith::ExtFOp::create(b, loc, to, v);
    unsigned operand =
        memref == vecIn ? roles.vectorOperand : 1 - roles.vectorOperand;
    if (roles.unsignedInput[operand])
      return arith::ExtUIOp::create(b, loc, to, v);
    return arith::ExtSIOp::create(b, loc, to, v);
  }

  /// `acc + a * c`: an FMA, or an integer multiply and add.
  Value mulAdd(Value a, Value c, Value acc) {
    if (!isInt)
      return vector::FMAOp::create(b, loc, a, c, acc);
    return arith::AddIOp::create(b, loc, acc,
                                 arith::MulIOp::create(b, loc, a, c));
  }

  void writeVector(Value v, bool inBounds) {
    SmallVector<Value> idx = indicesOf(b, loc, outMap, dimValues);
    AffineMap perm = AffineMap::get(
        outMap.getNumResults(), 0,
        {getAffineDimExpr(outMap.getNumResults() - 1, b.getContext())},
        b.getContext());
    vector::TransferWriteOp::create(b, loc, v, out, idx, perm,
                                    ArrayRef<bool>{inBounds});
  }

  Value readScalar(Value memref, AffineMap map) {
    Value s = memref::LoadOp::create(b, loc, memref,
                                     indicesOf(b, loc, map, dimValues));
    return widen(s, memref);
  }

  VectorType inputVector(Value memref) {
    return VectorType::get({tile.lanes},
                           cast<MemRefType>(memref.getType()).getElementType());
  }

  SmallVector<unsigned> reductions(std::optional<unsigned> skip = {}) {
    SmallVector<unsigned> dims;
    for (unsigned d = 0; d < ranges.size(); ++d)
      if (iters[d] == utils::IteratorType::reduction && d != skip)
        dims.push_back(d);
    return dims;
  }

  /// Loops over `dims` carrying `acc`; `step` computes the new values at
  /// the innermost point.
  SmallVector<Value>
  reductionLoops(ArrayRef<unsigned> dims, ValueRange acc,
                 function_ref<SmallVector<Value>(ValueRange)> step) {
    if (dims.empty())
      return step(acc);
    unsigned d = dims.front();
    if (ranges[d] == 1) {
      dimValues[d] = indexConst(b, loc, 0);
      return reductionLoops(dims.drop_front(), acc, step);
    }
    // The blocked reduction runs over its current block only; bf16 pairs
    // take two steps at a time.
    bool blocked = kBlockStart && dims.size() == 1 &&
                   roles.kind == ContractionRoles::Broadcast;
    Value lb = blocked ? kBlockStart : indexConst(b, loc, 0);
    Value ub = blocked ? addIndex(b, loc, kBlockStart, kBlockSize)
                       : indexConst(b, loc, ranges[d]);
    int64_t stride = d != roles.k ? 1 : roles.pairs ? 2 : roles.quads ? 4 : 1;
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, indexConst(b, loc, stride), acc,
        [&](OpBuilder &, Location, Value iv, ValueRange args) {
          dimValues[d] = iv;
          SmallVector<Value> next =
              reductionLoops(dims.drop_front(), args, step);
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  }

  void emitBroadcastTile(Value m0, int64_t rows, Value n0, int64_t n,
                         bool first, bool last) {
    int64_t vectors = (n + tile.lanes - 1) / tile.lanes;
    bool lastFull = n % tile.lanes == 0;
    auto inBounds = [&](int64_t v) { return v + 1 < vectors || lastFull; };
    SmallVector<Value> acc;
    Value init;
    if (first && fillValue)
      init = vector::BroadcastOp::create(b, loc, accVector, fillValue);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t v = 0; v < vectors; ++v) {
        dimValues[roles.m] = addIndex(b, loc, m0, i);
        dimValues[roles.n] = addIndex(b, loc, n0, v * tile.lanes);
        acc.push_back(init ? init
                           : readVector(out, outMap, accVector, inBounds(v)));
      }
    SmallVector<Value> result =
        reductionLoops(reductions(), acc, [&](ValueRange args) {
          if (roles.pairs)
            return pairsStep(m0, rows, n0, vectors, args);
          if (roles.quads)
            return quadsStep(m0, rows, n0, vectors, args);
          // The vector operand's vectors: one set for all rows, or (rows
          // along the vector operand: a depthwise convolution's output
          // rows) one per row.
          SmallVector<Value> bv;
          auto readRow = [&] {
            bv.clear();
            for (int64_t v = 0; v < vectors; ++v) {
              dimValues[roles.n] = addIndex(b, loc, n0, v * tile.lanes);
              bv.push_back(
                  readVector(vecIn, vecMap, inputVector(vecIn), inBounds(v)));
            }
          };
          dimValues[roles.m] = m0;
          auto scalar = [&] {
            return vector::BroadcastOp::create(b, loc, accVector,
                                               readScalar(rowIn, rowMap))
                .getResult();
          };
          // Rows along the vector operand: the row operand has no row dim,
          // one scalar (or with sharedVectors, one vector per column)
          // serves all rows.
          Value shared =
              roles.rowsInVector && !roles.sharedVectors ? scalar() : Value();
          SmallVector<Value> sharedVectors;
          if (roles.sharedVectors)
            for (int64_t v = 0; v < vectors; ++v) {
              dimValues[roles.n] = addIndex(b, loc, n0, v * tile.lanes);
              sharedVectors.push_back(
                  readVector(rowIn, rowMap, inputVector(rowIn), inBounds(v)));
            }
          if (!roles.rowsInVector)
            readRow();
          SmallVector<Value> next(args.begin(), args.end());
          for (int64_t i = 0; i < rows; ++i) {
            dimValues[roles.m] = addIndex(b, loc, m0, i);
            if (roles.rowsInVector)
              readRow();
            Value a = shared || roles.sharedVectors ? shared : scalar();
            for (int64_t v = 0; v < vectors; ++v)
              next[i * vectors + v] =
                  mulAdd(roles.sharedVectors ? sharedVectors[v] : a, bv[v],
                         next[i * vectors + v]);
          }
          return next;
        });
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t v = 0; v < vectors; ++v) {
        dimValues[roles.m] = addIndex(b, loc, m0, i);
        dimValues[roles.n] = addIndex(b, loc, n0, v * tile.lanes);
        if (last && epilogue)
          epilogue->write(b, loc, result[i * vectors + v],
                          indicesOf(b, loc, outMap, dimValues), inBounds(v));
        else
          writeVector(result[i * vectors + v], inBounds(v));
      }
  }

  /// One step of two along k with bf16 dot products (roles.pairs): per
  /// vector of 16 columns one load of 32 bf16 (each column's k, k + 1 side
  /// by side in the packed B), per row A's pair (k, k + 1) broadcast as
  /// one 32-bit word, and a dot product of pairs per accumulator.
  SmallVector<Value> pairsStep(Value m0, int64_t rows, Value n0,
                               int64_t vectors, ValueRange args) {
    Type bf16 = b.getBF16Type();
    auto pairs = VectorType::get({2 * tile.lanes}, bf16);
    auto words = VectorType::get({tile.lanes}, b.getI32Type());
    SmallVector<Value> bv;
    for (int64_t v = 0; v < vectors; ++v) {
      dimValues[roles.n] = addIndex(b, loc, n0, v * tile.lanes);
      bv.push_back(vector::LoadOp::create(
          b, loc, pairs, vecIn, indicesOf(b, loc, vecMap, dimValues)));
    }
    SmallVector<Value> next(args.begin(), args.end());
    for (int64_t i = 0; i < rows; ++i) {
      dimValues[roles.m] = addIndex(b, loc, m0, i);
      Value two =
          vector::LoadOp::create(b, loc, VectorType::get({2}, bf16), rowIn,
                                 indicesOf(b, loc, rowMap, dimValues));
      Value word = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), two);
      Value a = vector::BitCastOp::create(
          b, loc, pairs, vector::BroadcastOp::create(b, loc, words, word));
      for (int64_t v = 0; v < vectors; ++v)
        next[i * vectors + v] = x86vector::DotBF16Op::create(
            b, loc, next[i * vectors + v], a, bv[v]);
    }
    return next;
  }

  /// One step of four along k with VNNI dot products (roles.quads): per
  /// vector of lanes columns one load of 4 x lanes int8 (each column's k ..
  /// k + 3 side by side in the packed B), per row A's four uint8 at k
  /// broadcast as one 32-bit word, and a `vpdpbusd` per accumulator (each
  /// lane: its four u8 x s8 products summed into it, no saturation).
  SmallVector<Value> quadsStep(Value m0, int64_t rows, Value n0,
                               int64_t vectors, ValueRange args) {
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    auto bytes = VectorType::get({4 * tile.lanes}, i8);
    auto words = VectorType::get({tile.lanes}, i32);
    SmallVector<Value> bv;
    for (int64_t v = 0; v < vectors; ++v) {
      dimValues[roles.n] = addIndex(b, loc, n0, v * tile.lanes);
      bv.push_back(vector::LoadOp::create(
          b, loc, bytes, vecIn, indicesOf(b, loc, vecMap, dimValues)));
    }
    auto intrinsic = b.getStringAttr("llvm.x86.avx512.vpdpbusd." +
                                     std::to_string(tile.lanes * 32));
    SmallVector<Value> next(args.begin(), args.end());
    for (int64_t i = 0; i < rows; ++i) {
      dimValues[roles.m] = addIndex(b, loc, m0, i);
      Value four =
          vector::LoadOp::create(b, loc, VectorType::get({4}, i8), rowIn,
                                 indicesOf(b, loc, rowMap, dimValues));
      Value word =
          vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), four);
      Value a = vector::BitCastOp::create(
          b, loc, bytes, vector::BroadcastOp::create(b, loc, words, word));
      for (int64_t v = 0; v < vectors; ++v)
        next[i * vectors + v] = LLVM::CallIntrinsicOp::create(
                                    b, loc, accVector, intrinsic,
                                    ValueRange{next[i * vectors + v], a, bv[v]})
                                    .getResult(0);
    }
    return next;
  }

  /// The coefficient of dim `d` in the linear map result `e` (0 when it
  /// does not use it), nullopt when `e` is not linear in the dims.
  static std::optional<int64_t> coefficient(AffineExpr e, unsigned d) {
    if (auto dim = dyn_cast<AffineDimExpr>(e))
      return dim.getPosition() == d ? 1 : 0;
    if (isa<AffineConstantExpr>(e))
      return 0;
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin)
      return std::nullopt;
    if (bin.getKind() == AffineExprKind::Add) {
      std::optional<int64_t> l = coefficient(bin.getLHS(), d),
                             r = coefficient(bin.getRHS(), d);
      if (!l || !r)
        return std::nullopt;
      return *l + *r;
    }
    if (bin.getKind() == AffineExprKind::Mul)
      if (auto c = dyn_cast<AffineConstantExpr>(bin.getRHS())) {
        std::optional<int64_t> l = coefficient(bin.getLHS(), d);
        if (!l)
          return std::nullopt;
        return *l * c.getValue();
      }
    return std::nullopt;
  }

  /// AMX tiles for a quads contraction (int8Tiles): the accumulators start
  /// at 0 (a fused zero fill), k is a multiple of 64, m has a divisor of 4
  /// to 16 (the tiles' rows), and the row operand's rows are a constant
  /// stride apart in memory. Sets tileRows and the strides.
  bool planTiles() {
    if (!roles.quads || roles.panel % 16 != 0 || !fillValue ||
        !matchPattern(fillValue, m_Zero()) || ranges[roles.k] % 64 != 0)
      return false;
    int64_t m = ranges[roles.m];
    tileRows = 0;
    for (int64_t r = std::min<int64_t>(16, m); r >= 4; --r)
      if (m % r == 0) {
        tileRows = r;
        break;
      }
    if (!tileRows)
      return false;
    SmallVector<int64_t> rowStrides, vecStrides;
    int64_t offset;
    if (failed(cast<MemRefType>(rowIn.getType())
                   .getStridesAndOffset(rowStrides, offset)) ||
        failed(cast<MemRefType>(vecIn.getType())
                   .getStridesAndOffset(vecStrides, offset)) ||
        vecStrides.size() < 2 || vecStrides.back() != 1 ||
        ShapedType::isDynamic(vecStrides[vecStrides.size() - 2]))
      return false;
    panelRowStride = vecStrides[vecStrides.size() - 2];
    rowStride = 0;
    for (auto [i, e] : llvm::enumerate(rowMap.getResults())) {
      std::optional<int64_t> c = coefficient(e, roles.m);
      if (!c || (*c && ShapedType::isDynamic(rowStrides[i])))
        return false;
      rowStride += *c * rowStrides[i];
    }
    return rowStride > 0;
  }

  void emitTiles() {
    MLIRContext *ctx = b.getContext();
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    int64_t r = tileRows;
    auto aType = amx::TileType::get({r, 64}, i8);
    auto bType = amx::TileType::get({16, 64}, i8);
    auto cType = amx::TileType::get({r, 16}, i32);
    // The tiles' way to the epilogue: one 2R x 32 int32 buffer.
    Value scratch;
    {
      OpBuilder::InsertionGuard guard(b);
      auto fn = op->getParentOfType<FunctionOpInterface>();
      b.setInsertionPointToStart(&fn.getFunctionBody().front());
      scratch =
          memref::AllocaOp::create(b, loc, MemRefType::get({2 * r, 32}, i32),
                                   ValueRange{}, b.getI64IntegerAttr(64));
    }
    Value rowStrideV = indexConst(b, loc, rowStride);
    Value panelStrideV = indexConst(b, loc, panelRowStride);
    unsigned k = roles.k;
    int64_t kExtent = ranges[k];
    forBlocks(roles.n, 32, [&](Value n0, int64_t n) {
      int64_t nt = (n + 15) / 16;
      forBlocks(roles.m, 2 * r, [&](Value m0, int64_t rows) {
        int64_t mt = rows / r;
        SmallVector<Value> acc;
        for (int64_t t = 0; t < mt * nt; ++t)
          acc.push_back(amx::TileZeroOp::create(b, loc, cType));
        SmallVector<Value> result =
            reductionLoops(reductions(k), acc, [&](ValueRange args) {
              auto loop = scf::ForOp::create(
                  b, loc, indexConst(b, loc, 0), indexConst(b, loc, kExtent),
                  indexConst(b, loc, 64), args,
                  [&](OpBuilder &, Location, Value k0, ValueRange cs) {
                    dimValues[k] = k0;
                    SmallVector<Value> as, bs;
                    for (int64_t i = 0; i < mt; ++i) {
                      dimValues[roles.m] = addIndex(b, loc, m0, i * r);
                      as.push_back(amx::TileLoadOp::create(
                          b, loc, aType, rowIn,
                          indicesOf(b, loc, rowMap, dimValues), rowStrideV));
                    }
                    for (int64_t j = 0; j < nt; ++j) {
                      dimValues[roles.n] = addIndex(b, loc, n0, j * 16);
                      bs.push_back(amx::TileLoadOp::create(
                          b, loc, bType, vecIn,
                          indicesOf(b, loc, vecMap, dimValues), panelStrideV));
                    }
                    SmallVector<Value> next;
                    for (int64_t i = 0; i < mt; ++i)
                      for (int64_t j = 0; j < nt; ++j)
                        next.push_back(amx::TileMulIOp::create(
                            b, loc, cType, as[i], bs[j], cs[i * nt + j],
                            UnitAttr::get(ctx), UnitAttr()));
                    scf::YieldOp::create(b, loc, next);
                  });
              return SmallVector<Value>(loop.getResults());
            });
        for (int64_t i = 0; i < mt; ++i)
          for (int64_t j = 0; j < nt; ++j)
            amx::TileStoreOp::create(b, loc, scratch,
                                     ValueRange{indexConst(b, loc, i * r),
                                                indexConst(b, loc, j * 16)},
                                     result[i * nt + j]);
        // Each row of the block through the epilogue (or stored).
        auto rowLoop =
            scf::ForOp::create(b, loc, indexConst(b, loc, 0),
                               indexConst(b, loc, rows), indexConst(b, loc, 1));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(rowLoop.getBody());
        Value rr = rowLoop.getInductionVar();
        dimValues[roles.m] = arith::AddIOp::create(b, loc, m0, rr);
        for (int64_t j = 0; j < nt; ++j) {
          Value v = vector::LoadOp::create(
              b, loc, accVector, scratch,
              ValueRange{rr, indexConst(b, loc, j * 16)});
          dimValues[roles.n] = addIndex(b, loc, n0, j * 16);
          bool inBounds = (j + 1) * 16 <= n;
          if (epilogue)
            epilogue->write(b, loc, v, indicesOf(b, loc, outMap, dimValues),
                            inBounds);
          else
            writeVector(v, inBounds);
        }
      });
    });
  }

  void emitDotTile(Value m0, int64_t rows, Value n0, int64_t cols) {
    Value zero =
        arith::ConstantOp::create(b, loc, accVector, b.getZeroAttr(accVector));
    SmallVector<Value> acc(rows * cols, zero);
    unsigned k = roles.k;
    int64_t extent = ranges[k];
    int64_t full = extent / tile.lanes * tile.lanes;
    // One step along k at `k0`: every row's and column's vector, an FMA
    // per pair.
    auto step = [&](Value k0, ValueRange args, bool inBounds) {
      dimValues[k] = k0;
      SmallVector<Value> av, bv;
      for (int64_t i = 0; i < rows; ++i) {
        dimValues[roles.m] = addIndex(b, loc, m0, i);
        av.push_back(readVector(rowIn, rowMap, inputVector(rowIn), inBounds));
      }
      dimValues[roles.m] = m0;
      for (int64_t j = 0; j < cols; ++j) {
        dimValues[roles.n] = addIndex(b, loc, n0, j);
        bv.push_back(readVector(vecIn, vecMap, inputVector(vecIn), inBounds));
      }
      SmallVector<Value> next(args.begin(), args.end());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          next[i * cols + j] = mulAdd(av[i], bv[j], next[i * cols + j]);
      return next;
    };
    SmallVector<Value> result =
        reductionLoops(reductions(k), acc, [&](ValueRange args) {
          SmallVector<Value> cur(args.begin(), args.end());
          if (full > 0) {
            auto loop = scf::ForOp::create(
                b, loc, indexConst(b, loc, 0), indexConst(b, loc, full),
                indexConst(b, loc, tile.lanes), cur,
                [&](OpBuilder &, Location, Value iv, ValueRange inner) {
                  scf::YieldOp::create(b, loc, step(iv, inner, true));
                });
            cur.assign(loop.getResults().begin(), loop.getResults().end());
          }
          if (full < extent)
            cur = step(indexConst(b, loc, full), cur, false);
          return cur;
        });
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        dimValues[roles.m] = addIndex(b, loc, m0, i);
        dimValues[roles.n] = addIndex(b, loc, n0, j);
        Value sum = vector::ReductionOp::create(
            b, loc, vector::CombiningKind::ADD, result[i * cols + j]);
        SmallVector<Value> idx = indicesOf(b, loc, outMap, dimValues);
        Value old = memref::LoadOp::create(b, loc, out, idx);
        Value updated =
            isInt ? arith::AddIOp::create(b, loc, old, sum).getResult()
                  : arith::AddFOp::create(b, loc, old, sum).getResult();
        memref::StoreOp::create(b, loc, updated, out, idx);
      }
  }

  RewriterBase &b;
  linalg::LinalgOp op;
  ContractionRoles roles;
  /// An integer contraction (i32 accumulators).
  bool isInt = false;
  RegisterTile tile;
  Location loc;
  SmallVector<int64_t> ranges;
  SmallVector<utils::IteratorType> iters;
  Value vecIn, rowIn, out;
  AffineMap vecMap, rowMap, outMap;
  Type accType;
  VectorType accVector;
  SmallVector<Value> dimValues;
  /// The reduction block the tiles run over (Broadcast, one reduction).
  int64_t kBlock;
  Value kBlockStart;
  int64_t kBlockSize = 0;
  /// The unit-stride view of a strided vector operand (makeDenseView).
  Value dense;
  int64_t denseStride = 1;
  /// Fused ends (Epilogue.cpp): the fill's value, the epilogue.
  Value fillValue;
  EpilogueWriter *epilogue = nullptr;
  /// AMX tiles (planTiles): their rows, the row operand's stride between
  /// rows and the packed panels' between quads, in elements.
  bool int8Tiles = false;
  int64_t tileRows = 0, rowStride = 0, panelRowStride = 0;
};

/// Moves the ops `v` needs that follow `before` in its block (views of an
/// epilogue's operands) to just before it.
void hoistBefore(Value v, Operation *before) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != before->getBlock() ||
      def->isBeforeInBlock(before))
    return;
  for (Value operand : def->getOperands())
    hoistBefore(operand, before);
  def->moveBefore(before);
}

} // namespace

std::optional<int64_t>
mlir::kiln::cpu::emitContraction(RewriterBase &rewriter, linalg::LinalgOp op,
                                 int64_t vectorBits, int64_t l1Bytes, Value out,
                                 ArrayRef<ReassociationIndices> outGroups,
                                 bool int8Tiles) {
  std::optional<ContractionRoles> roles = matchContraction(op);
  if (!roles)
    return std::nullopt;
  RegisterTile tile = chooseRegisterTile(op, *roles, vectorBits);
  Type acc = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  if (!out)
    out = op.getDpsInits()[0];
  FusedEnds ends;
  if (roles->kind == ContractionRoles::Broadcast)
    ends = findFusedEnds(op, out);
  std::unique_ptr<EpilogueWriter> epilogue;
  if (ends.epilogue) {
    for (Value v : ends.epilogue->getOperands())
      hoistBefore(v, op);
    SmallVector<ReassociationIndices> groups(outGroups);
    if (groups.empty())
      for (int64_t d = 0; d < cast<MemRefType>(out.getType()).getRank(); ++d)
        groups.push_back({d});
    rewriter.setInsertionPoint(op);
    epilogue = EpilogueWriter::create(rewriter, ends.epilogue, out, groups,
                                      tile.lanes);
  }
  Value fillValue = ends.fill ? ends.fill.getInputs()[0] : Value();
  // The reduction block: the largest power of two whose panel (the block
  // x the tile's columns of the vector operand) fills at most two thirds of
  // L1, at least 64 steps.
  // (Quads: one byte per column and step of k.)
  int64_t columnBytes =
      tile.vectors * tile.lanes *
      (roles->quads ? 1 : std::max<int64_t>(elementBits(acc) / 8, 1));
  int64_t kBlock = 64;
  while (kBlock * 2 * columnBytes <= l1Bytes * 2 / 3)
    kBlock *= 2;
  ContractionEmitter(rewriter, op, *roles, tile, kBlock, fillValue,
                     epilogue.get(), int8Tiles && tile.lanes == 16)
      .emit();
  if (ends.fill)
    rewriter.eraseOp(ends.fill);
  if (epilogue)
    rewriter.eraseOp(ends.epilogue);
  return tile.lanes * elementBits(acc);
}
