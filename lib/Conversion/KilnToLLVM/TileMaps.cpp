//===- TileMaps.cpp - Tile and im2col maps as runtime calls ---------------===//
//
// Part of kiln-convert-host-to-llvm: `kiln.tile_map` and `kiln.im2col_map`
// become calls of kiln_rt_tile_map / kiln_rt_im2col_map
// (include/kiln/Runtime/ModelABI.h) that encode the descriptor into a
// 64-byte-aligned stack slot of 128 bytes, loaded as the value the launch
// passes. Dims, strides and the per-dim lists go innermost first.
//
//===----------------------------------------------------------------------===//

#include "HostToLLVM.h"

#include "kiln-c/runtime.h"
#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

Value i64(OpBuilder &b, Location loc, int64_t v) {
  return i64Constant(b, loc, v);
}

/// The kiln_dtype_t (include/kiln-c/runtime.h) of a tile map's elements;
/// KILN_DTYPE_INVALID for types bulk copies do not move.
int64_t tileMapDType(Type t) {
  if (t.isF16())
    return KILN_DTYPE_F16;
  if (t.isBF16())
    return KILN_DTYPE_BF16;
  if (t.isF32())
    return KILN_DTYPE_F32;
  if (t.isF64())
    return KILN_DTYPE_F64;
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8:
      return u ? KILN_DTYPE_U8 : KILN_DTYPE_I8;
    case 16:
      return u ? KILN_DTYPE_U16 : KILN_DTYPE_I16;
    case 32:
      return u ? KILN_DTYPE_U32 : KILN_DTYPE_I32;
    case 64:
      return u ? KILN_DTYPE_U64 : KILN_DTYPE_I64;
    default:
      break;
    }
  }
  return KILN_DTYPE_INVALID;
}

/// A stack array of `values.size()` i64 (one per dim).
Value stackArray(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  auto arrayType = LLVM::LLVMArrayType::get(b.getI64Type(), values.size());
  Value array =
      LLVM::AllocaOp::create(b, loc, ptrType, arrayType, i64(b, loc, 1));
  for (auto [i, v] : llvm::enumerate(values)) {
    Value at = LLVM::GEPOp::create(b, loc, ptrType, b.getI64Type(), array,
                                   ArrayRef<LLVM::GEPArg>{(int32_t)i});
    LLVM::StoreOp::create(b, loc, v, at);
  }
  return array;
}

/// Constants of `list`, reversed (the memref's dims are outermost first).
SmallVector<Value> innermostFirst(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> list) {
  SmallVector<Value> values;
  for (int64_t v : llvm::reverse(list))
    values.push_back(i64(b, loc, v));
  return values;
}

/// What both maps pass first: the slot, the dtype, the rank, the base and
/// the dims' sizes and byte strides, innermost first.
struct MapView {
  Value slot, dtype, rank, base, dims, strides;
};

FailureOr<MapView> mapView(ConversionPatternRewriter &rewriter, Operation *op,
                           Value buffer, MemRefType type,
                           const LLVMTypeConverter &converter) {
  Location loc = op->getLoc();
  int64_t dtype = tileMapDType(type.getElementType());
  if (dtype == KILN_DTYPE_INVALID)
    return op->emitOpError("has no tile maps of ") << type.getElementType();
  int64_t rank = type.getRank();
  MemRefDescriptor desc(buffer);
  SmallVector<Value> zeros(rank, i64(rewriter, loc, 0));
  MapView v;
  v.base =
      LLVM::getStridedElementPtr(rewriter, loc, converter, type, buffer, zeros);
  int64_t bytes = elementBytes(type);
  SmallVector<Value> sizes, strides;
  for (int64_t d = rank - 1; d >= 0; --d) {
    sizes.push_back(desc.size(rewriter, loc, d));
    strides.push_back(LLVM::MulOp::create(rewriter, loc,
                                          desc.stride(rewriter, loc, d),
                                          i64(rewriter, loc, bytes)));
  }
  v.dims = stackArray(rewriter, loc, sizes);
  v.strides = stackArray(rewriter, loc, strides);
  v.dtype = i64(rewriter, loc, dtype);
  v.rank = i64(rewriter, loc, rank);
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  auto mapType = VectorType::get({16}, rewriter.getI64Type());
  v.slot = LLVM::AllocaOp::create(rewriter, loc, ptrType, mapType,
                                  i64(rewriter, loc, 1), 64);
  return v;
}

/// Calls runtime function `fn` with `args` (the slot second) and loads the
/// encoded map as `op`'s value.
void encodeInto(ConversionPatternRewriter &rewriter, Operation *op,
                StringRef fn, const MapView &v, ValueRange args) {
  LLVM::CallOp::create(rewriter, op->getLoc(), TypeRange{}, fn, args);
  rewriter.replaceOpWithNewOp<LLVM::LoadOp>(
      op, VectorType::get({16}, rewriter.getI64Type()), v.slot, 64);
}

/// `kiln.tile_map` -> kiln_rt_tile_map(ctx, slot, dtype, rank, base, dims,
/// strides, box, swizzle).
struct TileMapOpLowering : public ConvertOpToLLVMPattern<TileMapOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(TileMapOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    FailureOr<MapView> v =
        mapView(rewriter, op, adaptor.getBuffer(), op.getBuffer().getType(),
                *getTypeConverter());
    if (failed(v))
      return failure();
    Value box =
        stackArray(rewriter, loc, innermostFirst(rewriter, loc, op.getBox()));
    encodeInto(rewriter, op, "kiln_rt_tile_map", *v,
               {adaptor.getCtx(), v->slot, v->dtype, v->rank, v->base, v->dims,
                v->strides, box, i64(rewriter, loc, op.getSwizzle())});
    return success();
  }
};

/// `kiln.im2col_map` -> kiln_rt_im2col_map(ctx, slot, dtype, rank, base,
/// dims, strides, lower, upper, element strides, channels, pixels, swizzle);
/// the element strides are 1 for the channels and the batch.
struct Im2colMapOpLowering : public ConvertOpToLLVMPattern<Im2colMapOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(Im2colMapOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    FailureOr<MapView> v =
        mapView(rewriter, op, adaptor.getBuffer(), op.getBuffer().getType(),
                *getTypeConverter());
    if (failed(v))
      return failure();
    SmallVector<int64_t> steps = {1};
    llvm::append_range(steps, op.getStrides());
    steps.push_back(1);
    Value lower =
        stackArray(rewriter, loc, innermostFirst(rewriter, loc, op.getLower()));
    Value upper =
        stackArray(rewriter, loc, innermostFirst(rewriter, loc, op.getUpper()));
    Value elementStrides =
        stackArray(rewriter, loc, innermostFirst(rewriter, loc, steps));
    encodeInto(rewriter, op, "kiln_rt_im2col_map", *v,
               {adaptor.getCtx(), v->slot, v->dtype, v->rank, v->base, v->dims,
                v->strides, lower, upper, elementStrides,
                i64(rewriter, loc, op.getChannels()),
                i64(rewriter, loc, op.getPixels()),
                i64(rewriter, loc, op.getSwizzle())});
    return success();
  }
};

} // namespace

void mlir::kiln::declareTileMapFns(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  Type voidType = LLVM::LLVMVoidType::get(ctx);
  Type ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64Type = IntegerType::get(ctx, 64);
  declareRuntimeFn(module, "kiln_rt_tile_map", voidType,
                   {ptrType, ptrType, i64Type, i64Type, ptrType, ptrType,
                    ptrType, ptrType, i64Type});
  declareRuntimeFn(module, "kiln_rt_im2col_map", voidType,
                   {ptrType, ptrType, i64Type, i64Type, ptrType, ptrType,
                    ptrType, ptrType, ptrType, ptrType, i64Type, i64Type,
                    i64Type});
}

void mlir::kiln::populateTileMapLowerings(LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<TileMapOpLowering, Im2colMapOpLowering>(converter);
}
