//===- Packing.cpp - Constant weights packed in panels at compile time ----===//
//
// A matmul's register tile reads its vector operand B (`k x n`) as rows
// of the tile's NR columns: one row of B per reduction step, each from a
// different cache line, rows apart by the whole width of B (12 KiB for
// BERT's 768 x 3072: every row in the same L1 set). Packed as panels
// `n/NR x k x NR` the tile streams one contiguous panel. Weights are
// constants, so the panels are made once here: the global's bytes are
// rewritten, and the kernel reads the packed operand through
// `(n floordiv NR, ..., n mod NR)`.
//
// Weights the model reads at load (--external-weights), and what the
// load-time step computes from them (a convolution's weights permuted to
// the target's layout), are packed at load instead: a pack kernel launched
// at the end of `kiln_model_init` writes the panels into a persistent
// buffer of their own (appended to the arena), which the kernels read.
//
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSet.h"

#include <cstring>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::cpu;

namespace {

/// Below this a weight fits the caches whichever way it is read.
constexpr int64_t kMinPackedBytes = 64 * 1024;

/// The bytes of a constant global's value (null for a splat, whose
/// elements are not stored).
std::optional<ArrayRef<char>> globalBytes(memref::GlobalOp global) {
  std::optional<Attribute> init = global.getInitialValue();
  if (!global.getConstant() || !init)
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(*init)) {
    if (dense.isSplat())
      return std::nullopt;
    return dense.getRawData();
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(*init))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  return std::nullopt;
}

/// `bytes` of shape `shape` (row-major, `elt` bytes per element) with its
/// last dim cut into panels of `panel`: shape `ceil(n/panel) x shape[:-1]
/// x panel`, the columns past n zero.
std::vector<char> packPanels(ArrayRef<char> bytes, ArrayRef<int64_t> shape,
                             int64_t elt, int64_t panel) {
  int64_t n = shape.back();
  int64_t rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;
  int64_t panels = (n + panel - 1) / panel;
  std::vector<char> out(panels * rows * panel * elt, 0);
  for (int64_t p = 0; p < panels; ++p) {
    int64_t cols = std::min(panel, n - p * panel);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(&out[((p * rows + r) * panel) * elt],
                  &bytes[(r * n + p * panel) * elt], cols * elt);
  }
  return out;
}

/// A bf16 `k x n` B (row-major, 2-byte elements, k even) in pairs:
/// `ceil(n/panel) x k/2 x 2*panel`, element (p, kk, 2c + t) = B[2kk + t]
/// [p * panel + c], the columns past n zero.
std::vector<char> packPairs(ArrayRef<char> bytes, int64_t k, int64_t n,
                            int64_t panel) {
  int64_t panels = (n + panel - 1) / panel;
  std::vector<char> out(panels * k * panel * 2, 0);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t kk = 0; kk < k / 2; ++kk)
      for (int64_t c = 0; c < panel && p * panel + c < n; ++c)
        for (int64_t t = 0; t < 2; ++t)
          std::memcpy(&out[((p * (k / 2) + kk) * 2 * panel + 2 * c + t) * 2],
                      &bytes[((2 * kk + t) * n + p * panel + c) * 2], 2);
  return out;
}

/// An int8 B of shape (d..., k, n) (row-major, k a multiple of 4) in
/// quads: `ceil(n/panel) x d... x k/4 x 4*panel`, element (p, d, kk,
/// 4c + t) = B[d][4kk + t][p * panel + c], the columns past n zero.
std::vector<char> packQuads(ArrayRef<char> bytes, ArrayRef<int64_t> shape,
                            int64_t panel) {
  int64_t n = shape.back(), k = shape[shape.size() - 2], outer = 1;
  for (int64_t d : shape.drop_back(2))
    outer *= d;
  int64_t panels = (n + panel - 1) / panel;
  std::vector<char> out(panels * outer * k * panel, 0);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t kk = 0; kk < k / 4; ++kk)
        for (int64_t c = 0; c < panel && p * panel + c < n; ++c)
          for (int64_t t = 0; t < 4; ++t)
            out[((p * outer + o) * (k / 4) + kk) * 4 * panel + 4 * c + t] =
                bytes[(o * k + 4 * kk + t) * n + p * panel + c];
  return out;
}

/// Whether `op`'s vector operand `use` (an int8 `d... x k x n` constant,
/// read at (d..., k, n)) can be packed in quads for VNNI: a uint8 x int8
/// contraction into i32 whose row operand reads k innermost (unit
/// stride), k a multiple of 4 and a reduction.
bool quadsCandidate(linalg::LinalgOp op, OpOperand *use,
                    const ContractionRoles &roles, MemRefType type) {
  MLIRContext *ctx = op.getContext();
  unsigned v = use->getOperandNumber(), row = 1 - v;
  AffineMap map = op.getMatchingIndexingMap(use);
  AffineMap rowMap = op.getIndexingMapsArray()[row];
  int64_t rank = type.getRank();
  if (rank < 2 || !type.getElementType().isInteger(8) ||
      !getElementTypeOrSelf(op.getDpsInputs()[row].getType()).isInteger(8) ||
      !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isInteger(32) ||
      !roles.unsignedInput[row] || roles.unsignedInput[v] ||
      rowMap.getNumResults() == 0 || !map.isProjectedPermutation() ||
      innermostStride(op.getDpsInputs()[row]) != 1)
    return false;
  auto k = dyn_cast<AffineDimExpr>(map.getResult(rank - 2));
  return k && rowMap.getResults().back() == k &&
         op.getIteratorTypesArray()[k.getPosition()] ==
             utils::IteratorType::reduction &&
         type.getShape()[rank - 2] % 4 == 0 &&
         map.getResults().back() == getAffineDimExpr(roles.n, ctx);
}

/// The operand of `launch` for kernel argument `i` as a constant global
/// with stored bytes, or null.
memref::GlobalOp constantOperand(LaunchOp launch, unsigned i,
                                 SymbolTable &symbols) {
  auto get = launch.getArgs()[i].getDefiningOp<memref::GetGlobalOp>();
  if (!get)
    return {};
  auto global = symbols.lookup<memref::GlobalOp>(get.getName());
  if (!global || !globalBytes(global) ||
      global.getType() != launch.getArgs()[i].getType())
    return {};
  return global;
}

/// A value the host program gets the same on every run from the weights
/// file: an external weight or a persistent buffer (an output of
/// kiln_model_init). Its key names it across functions.
std::optional<std::pair<int, int64_t>> loadTimeSource(Value v) {
  if (auto w = v.getDefiningOp<ExternalWeightOp>())
    return std::make_pair(0, static_cast<int64_t>(w.getIndex()));
  if (auto b = v.getDefiningOp<BufferOp>())
    if (b->hasAttr("kiln.persistent") && b.getOffset() &&
        b.getDynamicSizes().empty())
      return std::make_pair(1, static_cast<int64_t>(*b.getOffset()));
  return std::nullopt;
}

/// Packs at load: the kernels, launches and persistent buffers of one
/// module's load-time panels.
class LoadTimePacker {
public:
  LoadTimePacker(ModuleOp module, IRRewriter &rewriter)
      : module(module), rewriter(rewriter) {
    // Where the persistent part of the arena starts (kiln-plan-memory puts
    // it after the planned part).
    persistentBase = attr("kiln.arena_size") - attr("kiln.persistent_size");
  }

  /// The packed buffer (`packedType`, panels of `panel`) of source `v` as
  /// `launch` (in the host program) reads it.
  Value packedFor(LaunchOp launch, Value v, MemRefType packedType,
                  int64_t panel) {
    auto key = std::make_tuple(*loadTimeSource(v), panel);
    int64_t &offset = offsets[key];
    if (!offset)
      offset = emitPack(v, packedType, panel) + 1;
    rewriter.setInsertionPoint(launch);
    return bufferAt(launch.getLoc(), launch.getCtx(), packedType, offset - 1);
  }

private:
  /// A persistent buffer at `offset` in the arena.
  Value bufferAt(Location loc, Value ctx, MemRefType type, int64_t offset) {
    auto i64 = rewriter.getI64Type();
    auto b = BufferOp::create(rewriter, loc, type, ctx, ValueRange{},
                              IntegerAttr::get(i64, offset));
    b->setAttr("kiln.persistent",
               IntegerAttr::get(i64, offset - persistentBase));
    return b;
  }

  func::FuncOp init(Location loc) {
    if (auto fn = module.lookupSymbol<func::FuncOp>("kiln_model_init"))
      return fn;
    func::FuncOp host;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("kiln.signature_io"))
        host = fn;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(host);
    Type ctxType = host.getArgument(0).getType();
    auto fn = func::FuncOp::create(
        rewriter, loc, "kiln_model_init",
        rewriter.getFunctionType({ctxType}, {rewriter.getI32Type()}));
    rewriter.setInsertionPointToStart(fn.addEntryBlock());
    func::ReturnOp::create(
        rewriter, loc,
        ValueRange{arith::ConstantIntOp::create(rewriter, loc, 0, 32)});
    return fn;
  }

  /// Adds the pack kernel of `v` and its launch at the end of
  /// kiln_model_init; returns the packed buffer's offset in the arena.
  int64_t emitPack(Value v, MemRefType packedType, int64_t panel) {
    OpBuilder::InsertionGuard guard(rewriter);
    Location loc = v.getLoc();
    auto srcType = cast<MemRefType>(v.getType());
    MLIRContext *ctx = module.getContext();
    // The kernel: out[p, d..., j] = in[d..., p * panel + j], read through
    // a view of the input's last dim as (p, j): a copy whose innermost dim
    // is contiguous on both sides (vectorized, split into tasks).
    func::FuncOp initFn = init(loc);
    rewriter.setInsertionPoint(initFn);
    std::string name = "kiln_pack_panels_" + std::to_string(count++);
    auto kernel = func::FuncOp::create(
        rewriter, loc, name,
        rewriter.getFunctionType({srcType, packedType}, {}));
    kernel.setPrivate();
    kernel->setAttr("kiln.kernel", rewriter.getUnitAttr());
    kernel->setAttr("kiln.num_outputs", rewriter.getI64IntegerAttr(1));
    kernel->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
    Block *entry = kernel.addEntryBlock();
    rewriter.setInsertionPointToStart(entry);
    int64_t rank = packedType.getRank();
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 1 < srcType.getRank(); ++d)
      groups.push_back({d});
    groups.push_back({srcType.getRank() - 1, srcType.getRank()});
    SmallVector<int64_t> split(srcType.getShape().drop_back());
    split.append({packedType.getShape().front(), panel});
    Value view = memref::ExpandShapeOp::create(
        rewriter, loc, MemRefType::get(split, srcType.getElementType()),
        entry->getArgument(0), groups);
    SmallVector<AffineExpr> in;
    for (int64_t d = 1; d + 1 < rank; ++d)
      in.push_back(getAffineDimExpr(d, ctx));
    in.push_back(getAffineDimExpr(0, ctx));
    in.push_back(getAffineDimExpr(rank - 1, ctx));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, in, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    linalg::GenericOp::create(
        rewriter, loc, ValueRange{view}, ValueRange{entry->getArgument(1)},
        maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });
    func::ReturnOp::create(rewriter, loc);
    // Its launch, after everything kiln_model_init computes.
    int64_t offset = appendToArena(packedType);
    Operation *ret = initFn.getBody().front().getTerminator();
    rewriter.setInsertionPoint(ret);
    Value initCtx = initFn.getArgument(0);
    Value src;
    if (auto w = v.getDefiningOp<ExternalWeightOp>()) {
      src = ExternalWeightOp::create(rewriter, loc, srcType, initCtx,
                                     w.getIndexAttr());
    } else {
      auto b = v.getDefiningOp<BufferOp>();
      src = bufferAt(loc, initCtx, srcType, *b.getOffset());
    }
    Value dst = bufferAt(loc, initCtx, packedType, offset);
    LaunchOp::create(rewriter, loc, initCtx, name, ValueRange{src, dst});
    return offset;
  }

  int64_t attr(StringRef n) {
    auto a = module->getAttrOfType<IntegerAttr>(n);
    return a ? a.getInt() : 0;
  }

  /// A persistent region of `type` after the arena (which grows by it, as
  /// the persistent part does).
  int64_t appendToArena(MemRefType type) {
    constexpr int64_t kAlign = 64;
    auto i64 = rewriter.getI64Type();
    int64_t offset = (attr("kiln.arena_size") + kAlign - 1) / kAlign * kAlign;
    int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    module->setAttr("kiln.arena_size", IntegerAttr::get(i64, offset + bytes));
    module->setAttr("kiln.persistent_size",
                    IntegerAttr::get(i64, offset + bytes - persistentBase));
    return offset;
  }

  ModuleOp module;
  IRRewriter &rewriter;
  std::map<std::tuple<std::pair<int, int64_t>, int64_t>, int64_t> offsets;
  int64_t count = 0;
  int64_t persistentBase = 0;
};

} // namespace

int64_t mlir::kiln::cpu::packWeights(ModuleOp module, int64_t vectorBits,
                                     bool bf16Pairs, bool int8Quads) {
  MLIRContext *ctx = module.getContext();
  SymbolTable symbols(module);
  llvm::StringMap<SmallVector<LaunchOp>> launches;
  module.walk([&](LaunchOp l) { launches[l.getKernel()].push_back(l); });
  // (global, panel) -> its packed copy.
  std::map<std::pair<Operation *, int64_t>, memref::GlobalOp> packed;
  IRRewriter rewriter(ctx);
  LoadTimePacker loadTime(module, rewriter);
  int64_t count = 0;
  SmallVector<memref::GlobalOp> replaced;
  for (auto kernel :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (!kernel->hasAttr("kiln.kernel") || kernel.isExternal() ||
        !launches.count(kernel.getName()))
      continue;
    for (BlockArgument arg : kernel.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || type.getRank() < 2 || !type.hasStaticShape() ||
          !type.getLayout().isIdentity() || !arg.hasOneUse() ||
          !type.getElementType().isIntOrFloat() ||
          type.getElementTypeBitWidth() % 8 != 0)
        continue;
      int64_t elt = type.getElementTypeBitWidth() / 8;
      // int8 weights of VNNI dot products are packed whatever their size
      // (the instruction needs the layout); others when they are large.
      if (type.getNumElements() * elt < kMinPackedBytes &&
          !(int8Quads && type.getElementType().isInteger(8)))
        continue;
      auto op = dyn_cast<linalg::LinalgOp>(*arg.getUsers().begin());
      if (!op || !op.hasPureBufferSemantics())
        continue;
      OpOperand *use = &*arg.getUses().begin();
      if (!op.isDpsInput(use))
        continue;
      std::optional<ContractionRoles> roles = matchContraction(op);
      if (!roles || roles->kind != ContractionRoles::Broadcast ||
          roles->stencil || roles->panel ||
          use->getOperandNumber() != roles->vectorOperand)
        continue;
      AffineMap map = op.getMatchingIndexingMap(use);
      if (!map.isProjectedPermutation() ||
          map.getResults().back() != getAffineDimExpr(roles->n, ctx))
        continue;
      RegisterTile tile = chooseRegisterTile(op, *roles, vectorBits);
      int64_t panel = tile.vectors * tile.lanes;
      bool quads = int8Quads && quadsCandidate(op, use, *roles, type);
      if (!quads && (type.getNumElements() * elt < kMinPackedBytes ||
                     type.getShape().back() < 2 * panel))
        continue;
      // Every launch passes a constant of stored bytes, or every launch
      // one the host program reads from the weights file (packed at load,
      // where the panels must fill exactly: nothing pads them there).
      unsigned index = arg.getArgNumber();
      SmallVector<LaunchOp> uses = launches[kernel.getName()];
      bool atLoad = false;
      if (!llvm::all_of(uses, [&](LaunchOp l) {
            return constantOperand(l, index, symbols);
          })) {
        atLoad = type.getShape().back() % panel == 0 &&
                 llvm::all_of(uses, [&](LaunchOp l) {
                   return l->getParentOfType<func::FuncOp>()->hasAttr(
                              "kiln.signature_io") &&
                          loadTimeSource(l.getArgs()[index]);
                 });
        if (!atLoad || quads)
          continue;
      }

      // A named op (linalg.matmul) as the generic it is, for its map.
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> g =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(g))
          continue;
        generic = *g;
        // The named op is gone: read everything below from the generic
        // (reading the erased op crashed kilnc now and then, in
        // test/tools/cpu-bf16.test).
        op = cast<linalg::LinalgOp>(generic.getOperation());
      }

      // bf16 x bf16 into f32 along one reduction k that both read, the row
      // operand's innermost (its pair of k, k + 1 one 32-bit word): packed
      // in pairs for AVX512-BF16's dot products.
      unsigned rowOperand = 1 - roles->vectorOperand;
      AffineMap rowMap = op.getIndexingMapsArray()[rowOperand];
      int64_t kDim = map.getNumResults() == 2
                         ? cast<AffineDimExpr>(map.getResult(0)).getPosition()
                         : -1;
      bool pairs =
          bf16Pairs && !atLoad && type.getRank() == 2 &&
          type.getElementType().isBF16() &&
          getElementTypeOrSelf(op.getDpsInputs()[rowOperand].getType())
              .isBF16() &&
          getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32() &&
          op.getNumReductionLoops() == 1 && kDim >= 0 &&
          op.getIteratorTypesArray()[kDim] == utils::IteratorType::reduction &&
          type.getShape()[0] % 2 == 0 && rowMap.getNumResults() > 0 &&
          rowMap.getResults().back() == getAffineDimExpr(kDim, ctx) &&
          innermostStride(op.getDpsInputs()[rowOperand]) == 1;

      // The packed type, globals and launch operands.
      SmallVector<int64_t> shape = {(type.getShape().back() + panel - 1) /
                                    panel};
      if (pairs) {
        shape.append({type.getShape()[0] / 2, 2 * panel});
      } else if (quads) {
        llvm::append_range(shape, type.getShape().drop_back(2));
        shape.append({type.getShape()[type.getRank() - 2] / 4, 4 * panel});
      } else {
        llvm::append_range(shape, type.getShape().drop_back());
        shape.push_back(panel);
      }
      auto packedType = MemRefType::get(shape, type.getElementType());
      for (LaunchOp l : uses) {
        if (atLoad) {
          Value v =
              loadTime.packedFor(l, l.getArgs()[index], packedType, panel);
          l->setOperand(l.getArgs().getBeginOperandIndex() + index, v);
          continue;
        }
        memref::GlobalOp global = constantOperand(l, index, symbols);
        memref::GlobalOp &p =
            packed[{global.getOperation(), pairs || quads ? -panel : panel}];
        if (!p) {
          std::vector<char> bytes =
              pairs   ? packPairs(*globalBytes(global), type.getShape()[0],
                                  type.getShape()[1], panel)
              : quads ? packQuads(*globalBytes(global), type.getShape(), panel)
                      : packPanels(*globalBytes(global), type.getShape(), elt,
                                   panel);
          auto tensorType = RankedTensorType::get(shape, type.getElementType());
          std::string name = (global.getSymName() +
                              (pairs   ? "_pairs"
                               : quads ? "_quads"
                                       : "_panels") +
                              std::to_string(panel))
                                 .str();
          auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
              ArrayRef<char>(bytes), alignof(std::max_align_t));
          auto value =
              DenseResourceElementsAttr::get(tensorType, name, std::move(blob));
          rewriter.setInsertionPoint(global);
          p = memref::GlobalOp::create(
              rewriter, global.getLoc(), rewriter.getStringAttr(name),
              rewriter.getStringAttr("private"), TypeAttr::get(packedType),
              value, rewriter.getUnitAttr(), global.getAlignmentAttr());
          symbols.insert(p);
          replaced.push_back(global);
        }
        rewriter.setInsertionPoint(l);
        Value v = memref::GetGlobalOp::create(rewriter, l.getLoc(), packedType,
                                              p.getSymName());
        l->setOperand(l.getArgs().getBeginOperandIndex() + index, v);
      }

      // The kernel reads the panels.
      arg.setType(packedType);
      SmallVector<Type> inputs(kernel.getBody().getArgumentTypes());
      kernel.setType(FunctionType::get(ctx, inputs, kernel.getResultTypes()));
      AffineExpr n = getAffineDimExpr(roles->n, ctx);
      SmallVector<AffineExpr> results = {n.floorDiv(panel)};
      if (pairs) {
        AffineExpr k = getAffineDimExpr(kDim, ctx);
        results.append({k.floorDiv(2), (n % panel) * 2 + k % 2});
      } else if (quads) {
        llvm::append_range(results, map.getResults().drop_back(2));
        AffineExpr k = map.getResult(map.getNumResults() - 2);
        results.append({k.floorDiv(4), (n % panel) * 4 + k % 4});
      } else {
        llvm::append_range(results, map.getResults().drop_back());
        results.push_back(n % panel);
      }
      SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
      maps[roles->vectorOperand] =
          AffineMap::get(map.getNumDims(), 0, results, ctx);
      generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      ++count;
    }
  }
  if (replaced.empty())
    return count;
  // The weights no kernel reads unpacked any more.
  module.walk([&](memref::GetGlobalOp get) {
    if (get->use_empty())
      get->erase();
  });
  llvm::StringSet<> named;
  if (auto symbolUses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
    for (const SymbolTable::SymbolUse &u : *symbolUses)
      named.insert(u.getSymbolRef().getRootReference());
  for (memref::GlobalOp global : replaced)
    if (!named.contains(global.getSymName()))
      global->erase();
  return count;
}
