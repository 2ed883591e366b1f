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
//===----------------------------------------------------------------------===//

#include "CPUCodegen.h"

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

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

} // namespace

int64_t mlir::kiln::cpu::packWeights(ModuleOp module, int64_t vectorBits) {
  MLIRContext *ctx = module.getContext();
  SymbolTable symbols(module);
  llvm::StringMap<SmallVector<LaunchOp>> launches;
  module.walk([&](LaunchOp l) { launches[l.getKernel()].push_back(l); });
  // (global, panel) -> its packed copy.
  std::map<std::pair<Operation *, int64_t>, memref::GlobalOp> packed;
  IRRewriter rewriter(ctx);
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
      if (type.getNumElements() * elt < kMinPackedBytes)
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
      if (type.getShape().back() < 2 * panel)
        continue;
      // Every launch passes a constant of stored bytes.
      unsigned index = arg.getArgNumber();
      SmallVector<LaunchOp> &uses = launches[kernel.getName()];
      if (!llvm::all_of(uses, [&](LaunchOp l) {
            return constantOperand(l, index, symbols);
          }))
        continue;

      // A named op (linalg.matmul) as the generic it is, for its map.
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> g =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(g))
          continue;
        generic = *g;
      }

      // The packed type, globals and launch operands.
      SmallVector<int64_t> shape = {(type.getShape().back() + panel - 1) /
                                    panel};
      llvm::append_range(shape, type.getShape().drop_back());
      shape.push_back(panel);
      auto packedType = MemRefType::get(shape, type.getElementType());
      for (LaunchOp l : uses) {
        memref::GlobalOp global = constantOperand(l, index, symbols);
        memref::GlobalOp &p = packed[{global.getOperation(), panel}];
        if (!p) {
          std::vector<char> bytes =
              packPanels(*globalBytes(global), type.getShape(), elt, panel);
          auto tensorType = RankedTensorType::get(shape, type.getElementType());
          std::string name =
              (global.getSymName() + "_panels" + std::to_string(panel)).str();
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
      llvm::append_range(results, map.getResults().drop_back());
      results.push_back(n % panel);
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
