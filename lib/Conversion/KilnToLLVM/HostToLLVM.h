//===- HostToLLVM.h - Pieces of kiln-convert-host-to-llvm -------*- C++ -*-===//
#ifndef KILN_LIB_CONVERSION_KILNTOLLVM_HOSTTOLLVM_H
#define KILN_LIB_CONVERSION_KILNTOLLVM_HOSTTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::kiln {

/// An i64 constant.
inline Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(), v);
}

/// Bytes per element of `type` (index as the target's 64 bits).
inline int64_t elementBytes(MemRefType type) {
  Type elem = type.getElementType();
  int64_t bits = elem.isIndex() ? 64 : elem.getIntOrFloatBitWidth();
  return (bits + 7) / 8;
}

/// Declares runtime function `name` in `module` if it is not there.
LLVM::LLVMFuncOp declareRuntimeFn(ModuleOp module, StringRef name, Type result,
                                  ArrayRef<Type> params);

/// Numbers the launch sites and emits their kiln_rt_launch_site calls
/// (LaunchSites.cpp); returns the signature's `launch` records.
std::string numberLaunchSites(ModuleOp module);

/// Declares kiln_rt_tile_map and kiln_rt_im2col_map (TileMaps.cpp).
void declareTileMapFns(ModuleOp module);

/// `kiln.tile_map` and `kiln.im2col_map` to runtime calls (TileMaps.cpp).
void populateTileMapLowerings(LLVMTypeConverter &converter,
                              RewritePatternSet &patterns);

/// Rewrites each n-D vector.from_elements (canonicalization folds a
/// transposed tile's row inserts into one) into 1-D rows, which the LLVM
/// lowering takes; other ops are left as they are (ConversionFixups.cpp).
LogicalResult unrollNDFromElements(ModuleOp module);

/// Moves every fixed-size llvm.alloca into its function's entry block
/// (ConversionFixups.cpp): elsewhere LLVM gives it new stack each time it
/// runs, which inside a host loop grows the stack every step.
void hoistFixedAllocas(ModuleOp module);

} // namespace mlir::kiln

#endif // KILN_LIB_CONVERSION_KILNTOLLVM_HOSTTOLLVM_H
