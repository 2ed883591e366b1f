//===- FinalizeDeviceMemRefs.cpp - A gpu.module's leftovers to LLVM -------===//
//
// kiln-finalize-device-memrefs: around the vendor's GPU-to-LLVM conversion
// (in each target's codegen pipeline), the cf, arith and index ops
// (stage=before) and the memref and vector ops (stage=after) of one device
// module, with the address spaces every GPU target shares.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/GPU/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNFINALIZEDEVICEMEMREFS
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct FinalizeDeviceMemRefsPass
    : public kiln::impl::KilnFinalizeDeviceMemRefsBase<
          FinalizeDeviceMemRefsPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    LowerToLLVMOptions options(context);
    LLVMTypeConverter converter(context, options);
    // Shared memory (workgroup attributions) is address space 3 on every
    // GPU target.
    populateGpuMemorySpaceAttributeConversions(
        converter, [](gpu::AddressSpace space) -> unsigned {
          switch (space) {
          case gpu::AddressSpace::Global:
            return 1;
          case gpu::AddressSpace::Workgroup:
            return 3;
          case gpu::AddressSpace::Private:
            return 0;
          }
          return 0;
        });
    RewritePatternSet patterns(context);
    if (stage == "before") {
      // Branches carry index values: converted with the arithmetic before
      // the vendor's conversion rewrites the kernels' block signatures (it
      // has no cf or arith patterns).
      cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
      arith::populateArithToLLVMConversionPatterns(converter, patterns);
      index::populateIndexToLLVMConversionPatterns(converter, patterns);
    } else {
      populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
      populateVectorToLLVMConversionPatterns(converter, patterns);
    }
    LLVMConversionTarget target(*context);
    if (stage == "before") {
      target.addIllegalDialect<cf::ControlFlowDialect, arith::ArithDialect,
                               index::IndexDialect>();
      // The vendor's conversion lowers remf to its math library's fmod
      // (some GPUs have no frem).
      target.addLegalOp<arith::RemFOp>();
    } else {
      target.addIllegalDialect<memref::MemRefDialect, vector::VectorDialect>();
    }
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // Shared buffers are read 16 bytes at a time (tiled contractions).
    if (stage != "before")
      getOperation().walk([](LLVM::GlobalOp global) {
        if (global.getAddrSpace() == 3 &&
            global.getAlignment().value_or(0) < 16)
          global.setAlignment(16);
      });
  }
};

} // namespace
