//===- GridConstants.cpp - Tile maps as grid-constant parameters ----------===//
//
// kiln-nvptx-grid-constants (Passes.td): a kernel's vector<16xi64> argument
// whose only uses take its address becomes a byval, grid-constant pointer.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/NVPTX/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNNVPTXGRIDCONSTANTS
#include "kiln/Target/NVPTX/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
bool isTileMapType(Type t) {
  auto v = dyn_cast<VectorType>(t);
  return v && v.getRank() == 1 && v.getNumElements() == 16 &&
         v.getElementType().isInteger(64);
}

struct GridConstantsPass
    : public kiln::impl::KilnNVPTXGridConstantsBase<GridConstantsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    auto byvalType =
        LLVM::LLVMArrayType::get(IntegerType::get(context, 64), 16);
    for (auto fn : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (!fn->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
          fn.isExternal())
        continue;
      Block &entry = fn.getBody().front();
      SmallVector<Type> argTypes(fn.getFunctionType().getParams());
      bool changed = false;
      for (BlockArgument arg : entry.getArguments()) {
        if (!isTileMapType(arg.getType()) || arg.use_empty() ||
            !llvm::all_of(arg.getUsers(), [&](Operation *u) {
              auto cast = dyn_cast<UnrealizedConversionCastOp>(u);
              return cast && cast->getNumOperands() == 1 &&
                     cast->getNumResults() == 1 &&
                     cast->getResult(0).getType() == ptrType;
            })) {
          if (isTileMapType(arg.getType()) && !arg.use_empty()) {
            fn.emitError("tile map argument ")
                << arg.getArgNumber() << " has a use that is not its address";
            return signalPassFailure();
          }
          continue;
        }
        for (Operation *u : llvm::make_early_inc_range(arg.getUsers())) {
          u->getResult(0).replaceAllUsesWith(arg);
          u->erase();
        }
        arg.setType(ptrType);
        unsigned i = arg.getArgNumber();
        argTypes[i] = ptrType;
        fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(byvalType));
        fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      IntegerAttr::get(IntegerType::get(context, 64), 64));
        fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      UnitAttr::get(context));
        changed = true;
      }
      if (changed)
        fn.setFunctionType(LLVM::LLVMFunctionType::get(
            fn.getFunctionType().getReturnType(), argTypes,
            fn.getFunctionType().isVarArg()));
    }
  }
};
} // namespace
