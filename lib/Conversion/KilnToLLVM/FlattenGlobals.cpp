//===- FlattenGlobals.cpp - Constant globals as byte arrays ---------------===//
//
// A memref.global becomes an LLVM global whose type nests one array per
// dim: translated, every row of the innermost dim is its own uniqued LLVM
// constant, and LLVM's AsmPrinter writes a float array one APFloat at a
// time. A model's weights (ResNet-50: millions of rows of 3 or 1 floats)
// are where the compile's time and memory went. As one array of bytes they
// translate to one ConstantDataArray (a copy of their bytes) that the
// AsmPrinter emits as a single blob.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFLATTENGLOBALS
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The bytes of `value` (elements in row-major order, as in memory) as an
/// attribute of `type` (a 1-D tensor of i8), or null for a splat of zeros
/// (LLVM's zeroinitializer is as cheap as it gets).
Attribute asBytes(Attribute value, RankedTensorType type) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    ArrayRef<char> raw = dense.getRawData();
    if (!dense.isSplat())
      return DenseElementsAttr::getFromRawBuffer(type, raw);
    if (llvm::all_of(raw, [](char c) { return c == 0; }))
      return {};
    std::vector<char> bytes;
    bytes.reserve(type.getNumElements());
    while (static_cast<int64_t>(bytes.size()) < type.getNumElements())
      bytes.insert(bytes.end(), raw.begin(), raw.end());
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    return DenseResourceElementsAttr::get(type, resource.getRawHandle());
  return {};
}

struct FlattenGlobalsPass
    : public kiln::impl::KilnFlattenGlobalsBase<FlattenGlobalsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto i8 = IntegerType::get(ctx, 8);
    // name -> the type the uses expect.
    llvm::StringMap<MemRefType> flattened;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      MemRefType type = global.getType();
      std::optional<Attribute> init = global.getInitialValue();
      Type element = type.getElementType();
      // Bit-packed i1 and index (target-sized) elements keep their type.
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() || !init ||
          isa<UnitAttr>(*init) || element == i8 ||
          !(element.isIntOrFloat() && !element.isInteger(1)) ||
          element.getIntOrFloatBitWidth() % 8 != 0 || type.getNumElements() < 1)
        continue;
      int64_t bytes =
          type.getNumElements() * (element.getIntOrFloatBitWidth() / 8);
      Attribute flatInit = asBytes(*init, RankedTensorType::get({bytes}, i8));
      if (!flatInit)
        continue;
      global.setType(
          MemRefType::get({bytes}, i8, AffineMap(), type.getMemorySpace()));
      global.setInitialValueAttr(flatInit);
      flattened[global.getSymName()] = type;
    }
    if (flattened.empty())
      return;

    auto lookup = [&](Operation *op, StringRef name) -> MemRefType {
      auto it = flattened.find(name);
      if (it == flattened.end() ||
          SymbolTable::getNearestSymbolTable(op) != module.getOperation())
        return {};
      return it->second;
    };
    module.walk([&](Operation *op) {
      OpBuilder b(op);
      Value flat;
      MemRefType type;
      if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
        if ((type = lookup(op, get.getName())))
          flat = memref::GetGlobalOp::create(
              b, get.getLoc(),
              module.lookupSymbol<memref::GlobalOp>(get.getName()).getType(),
              get.getName());
      } else if (auto weight = dyn_cast<WeightOp>(op)) {
        // A device target's copy of the global: bytes like its source.
        if ((type = lookup(op, weight.getGlobal())))
          flat = WeightOp::create(
              b, weight.getLoc(),
              module.lookupSymbol<memref::GlobalOp>(weight.getGlobal())
                  .getType(),
              weight.getCtx(), weight.getGlobalAttr(), weight.getIndexAttr());
      }
      if (!flat)
        return;
      // Each use: the bytes viewed as the buffer it had.
      Value zero = arith::ConstantIndexOp::create(b, op->getLoc(), 0);
      Value view = memref::ViewOp::create(b, op->getLoc(), type, flat, zero,
                                          ValueRange{});
      op->getResult(0).replaceAllUsesWith(view);
      op->erase();
    });
  }
};
} // namespace
