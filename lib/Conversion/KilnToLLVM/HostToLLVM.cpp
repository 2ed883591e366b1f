//===- HostToLLVM.cpp - Host program and CPU kernels to LLVM --------------===//
//
// Lowers the kiln host ops to calls of Kiln's runtime ABI
// (include/kiln/Runtime/ModelABI.h), together with the upstream conversions
// of everything else to the LLVM dialect; adds the packed kernel entries and
// the signature the runtime reads.
//
//===----------------------------------------------------------------------===//

#include "HostToLLVM.h"

#include "kiln-c/runtime.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/AMX/Transforms.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/X86Vector/Transforms.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNCONVERTHOSTTOLLVM
#include "kiln/Conversion/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {

Value i64(OpBuilder &b, Location loc, int64_t v) {
  return i64Constant(b, loc, v);
}

/// Builds a row-major descriptor of `type` over `ptr` with `sizes` (one i64
/// per dim).
Value buildDescriptor(OpBuilder &b, Location loc, const LLVMTypeConverter &tc,
                      MemRefType type, Value ptr, ArrayRef<Value> sizes) {
  auto desc = MemRefDescriptor::poison(b, loc, tc.convertType(type));
  desc.setAllocatedPtr(b, loc, ptr);
  desc.setAlignedPtr(b, loc, ptr);
  desc.setConstantOffset(b, loc, 0);
  int64_t rank = type.getRank();
  Value stride = i64(b, loc, 1);
  for (int64_t i = rank - 1; i >= 0; --i) {
    desc.setSize(b, loc, i, sizes[i]);
    desc.setStride(b, loc, i, stride);
    stride = LLVM::MulOp::create(b, loc, stride, sizes[i]);
  }
  return desc;
}

/// Sizes of `type` as i64 values: static dims as constants, dynamic ones
/// from `dynamic` (already converted to i64) in order.
SmallVector<Value> allSizes(OpBuilder &b, Location loc, MemRefType type,
                            ValueRange dynamic) {
  SmallVector<Value> sizes;
  unsigned k = 0;
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(type.isDynamicDim(i) ? dynamic[k++]
                                         : i64(b, loc, type.getDimSize(i)));
  return sizes;
}

struct InputOpLowering : public ConvertOpToLLVMPattern<InputOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(InputOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    Value index = i64(rewriter, loc, op.getIndex());
    Value ptr =
        LLVM::CallOp::create(rewriter, loc, TypeRange{ptrType}, "kiln_rt_input",
                             ValueRange{adaptor.getCtx(), index})
            .getResult();
    MemRefType type = op.getBuffer().getType();
    SmallVector<Value> dynamic;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamic.push_back(
            LLVM::CallOp::create(
                rewriter, loc, TypeRange{rewriter.getI64Type()},
                "kiln_rt_input_dim",
                ValueRange{adaptor.getCtx(), index, i64(rewriter, loc, i)})
                .getResult());
    rewriter.replaceOp(
        op, buildDescriptor(rewriter, loc, *getTypeConverter(), type, ptr,
                            allSizes(rewriter, loc, type, dynamic)));
    return success();
  }
};

struct OutputOpLowering : public ConvertOpToLLVMPattern<OutputOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(OutputOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    MemRefType type = op.getBuffer().getType();
    SmallVector<Value> sizes =
        allSizes(rewriter, loc, type, adaptor.getDynamicSizes());
    // The dims go to the runtime in a stack array.
    int64_t rank = std::max<int64_t>(type.getRank(), 1);
    auto arrayType = LLVM::LLVMArrayType::get(rewriter.getI64Type(), rank);
    Value dims = LLVM::AllocaOp::create(rewriter, loc, ptrType, arrayType,
                                        i64(rewriter, loc, 1));
    for (auto [i, s] : llvm::enumerate(sizes)) {
      Value slot =
          LLVM::GEPOp::create(rewriter, loc, ptrType, rewriter.getI64Type(),
                              dims, ArrayRef<LLVM::GEPArg>{(int32_t)i});
      LLVM::StoreOp::create(rewriter, loc, s, slot);
    }
    Value ptr = LLVM::CallOp::create(
                    rewriter, loc, TypeRange{ptrType}, "kiln_rt_output",
                    ValueRange{adaptor.getCtx(),
                               i64(rewriter, loc, op.getIndex()), dims})
                    .getResult();
    rewriter.replaceOp(op, buildDescriptor(rewriter, loc, *getTypeConverter(),
                                           type, ptr, sizes));
    return success();
  }
};

struct BufferOpLowering : public ConvertOpToLLVMPattern<BufferOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(BufferOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    MemRefType type = op.getBuffer().getType();
    SmallVector<Value> sizes =
        allSizes(rewriter, loc, type, adaptor.getDynamicSizes());
    Value ptr;
    if (std::optional<int64_t> offset = op.getOffset()) {
      Value base =
          LLVM::CallOp::create(rewriter, loc, TypeRange{ptrType},
                               "kiln_rt_arena", ValueRange{adaptor.getCtx()})
              .getResult();
      ptr = LLVM::GEPOp::create(
          rewriter, loc, ptrType, rewriter.getI8Type(), base,
          ArrayRef<LLVM::GEPArg>{i64(rewriter, loc, *offset)});
    } else {
      Value bytes = i64(rewriter, loc, elementBytes(type));
      for (Value s : sizes)
        bytes = LLVM::MulOp::create(rewriter, loc, bytes, s);
      ptr = LLVM::CallOp::create(rewriter, loc, TypeRange{ptrType},
                                 "kiln_rt_alloc",
                                 ValueRange{adaptor.getCtx(), bytes})
                .getResult();
    }
    rewriter.replaceOp(op, buildDescriptor(rewriter, loc, *getTypeConverter(),
                                           type, ptr, sizes));
    return success();
  }
};

/// kiln.release: kiln_rt_release(ctx, p), p the pointer kiln_rt_alloc
/// returned (the descriptor's allocated pointer).
struct ReleaseOpLowering : public ConvertOpToLLVMPattern<ReleaseOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ReleaseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value ptr =
        MemRefDescriptor(adaptor.getBuffer()).allocatedPtr(rewriter, loc);
    LLVM::CallOp::create(rewriter, loc, TypeRange{}, "kiln_rt_release",
                         ValueRange{adaptor.getCtx(), ptr});
    rewriter.eraseOp(op);
    return success();
  }
};

/// An argv for a packed entry: `slots` pointers (at least one), the last
/// args.size() pointing to a stack slot holding each argument; the first
/// `slots - args.size()` are left for the runtime to fill.
Value packArguments(ConversionPatternRewriter &rewriter, Location loc,
                    ValueRange args, int64_t slots) {
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  Value one = i64(rewriter, loc, 1);
  int64_t lead = slots - static_cast<int64_t>(args.size());
  Value argv = LLVM::AllocaOp::create(
      rewriter, loc, ptrType,
      LLVM::LLVMArrayType::get(ptrType, std::max<int64_t>(slots, 1)), one);
  for (auto [i, arg] : llvm::enumerate(args)) {
    // Each argument lives in its own stack slot; argv[lead + i] points to it.
    Value slot =
        LLVM::AllocaOp::create(rewriter, loc, ptrType, arg.getType(), one);
    LLVM::StoreOp::create(rewriter, loc, arg, slot);
    Value entry =
        LLVM::GEPOp::create(rewriter, loc, ptrType, ptrType, argv,
                            ArrayRef<LLVM::GEPArg>{(int32_t)(lead + i)});
    LLVM::StoreOp::create(rewriter, loc, slot, entry);
  }
  return argv;
}

struct LaunchOpLowering : public ConvertOpToLLVMPattern<LaunchOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(LaunchOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    Value argv = packArguments(rewriter, loc, adaptor.getArgs(),
                               adaptor.getArgs().size());
    Value fn = LLVM::AddressOfOp::create(rewriter, loc, ptrType,
                                         (op.getKernel() + "_packed").str());
    LLVM::CallOp::create(rewriter, loc, TypeRange{}, "kiln_rt_launch_cpu",
                         ValueRange{adaptor.getCtx(), fn, argv});
    rewriter.eraseOp(op);
    return success();
  }
};

/// `kiln.parallel_for`: an argv of one slot per body argument (slots 0 and
/// 1, the task range, filled by the runtime) and kiln_rt_parallel_for.
struct ParallelForOpLowering : public ConvertOpToLLVMPattern<ParallelForOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ParallelForOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    int64_t n = adaptor.getArgs().size() + 2;
    Value argv = packArguments(rewriter, loc, adaptor.getArgs(), n);
    Value fn = LLVM::AddressOfOp::create(rewriter, loc, ptrType,
                                         (op.getBody() + "_packed").str());
    LLVM::CallOp::create(rewriter, loc, TypeRange{}, "kiln_rt_parallel_for",
                         ValueRange{fn, argv, i64(rewriter, loc, n),
                                    i64(rewriter, loc, op.getTasks())});
    rewriter.eraseOp(op);
    return success();
  }
};

/// `kiln.read` (device targets): copies one element to a stack slot through
/// the runtime and loads it.
struct ReadOpLowering : public ConvertOpToLLVMPattern<ReadOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    MemRefType type = op.getBuffer().getType();
    Type elemType = getTypeConverter()->convertType(type.getElementType());
    if (!elemType)
      return failure();
    Value src = getStridedElementPtr(rewriter, loc, type, adaptor.getBuffer(),
                                     adaptor.getIndices());
    Value slot = LLVM::AllocaOp::create(rewriter, loc, ptrType, elemType,
                                        i64(rewriter, loc, 1));
    int64_t bytes = elementBytes(type);
    LLVM::CallOp::create(
        rewriter, loc, TypeRange{}, "kiln_rt_read_device",
        ValueRange{adaptor.getCtx(), slot, src, i64(rewriter, loc, bytes)});
    rewriter.replaceOpWithNewOp<LLVM::LoadOp>(op, elemType, slot);
    return success();
  }
};

/// `kiln.check_record` (device targets): the instance's record of failed
/// device checks, from kiln_rt_check_record, which also learns the
/// messages of the module's device checks (__kiln_device_checks: one
/// C string each, back to back).
struct CheckRecordOpLowering : public ConvertOpToLLVMPattern<CheckRecordOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(CheckRecordOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    auto module = op->getParentOfType<ModuleOp>();
    auto messages = module->getAttrOfType<ArrayAttr>("kiln.device_checks");
    if (!messages)
      return op.emitOpError("needs the module's kiln.device_checks");
    Value table = LLVM::AddressOfOp::create(rewriter, loc, ptrType,
                                            "__kiln_device_checks");
    Value ptr = LLVM::CallOp::create(
                    rewriter, loc, TypeRange{ptrType}, "kiln_rt_check_record",
                    ValueRange{adaptor.getCtx(), table,
                               i64(rewriter, loc, messages.size())})
                    .getResult();
    MemRefType type = cast<MemRefType>(op.getRecord().getType());
    rewriter.replaceOp(op,
                       buildDescriptor(rewriter, loc, *getTypeConverter(), type,
                                       ptr, allSizes(rewriter, loc, type, {})));
    return success();
  }
};

/// `kiln.weight` (device targets): the runtime's device copy of a global.
struct WeightOpLowering : public ConvertOpToLLVMPattern<WeightOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(WeightOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    MemRefType type = op.getBuffer().getType();
    int64_t bytes = elementBytes(type);
    for (int64_t d : type.getShape())
      bytes *= d;
    Value host =
        LLVM::AddressOfOp::create(rewriter, loc, ptrType, op.getGlobal());
    Value ptr =
        LLVM::CallOp::create(
            rewriter, loc, TypeRange{ptrType}, "kiln_rt_weight",
            ValueRange{adaptor.getCtx(), i64(rewriter, loc, op.getIndex()),
                       host, i64(rewriter, loc, bytes)})
            .getResult();
    SmallVector<Value> sizes = allSizes(rewriter, loc, type, {});
    rewriter.replaceOp(op, buildDescriptor(rewriter, loc, *getTypeConverter(),
                                           type, ptr, sizes));
    return success();
  }
};

/// `kiln.external_weight` (--external-weights): the runtime's pointer to the
/// weight, in the memory-mapped weights file (cpu) or its device copy.
struct ExternalWeightOpLowering
    : public ConvertOpToLLVMPattern<ExternalWeightOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(ExternalWeightOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    Value ptr =
        LLVM::CallOp::create(
            rewriter, loc, TypeRange{ptrType}, "kiln_rt_external_weight",
            ValueRange{adaptor.getCtx(), i64(rewriter, loc, op.getIndex())})
            .getResult();
    MemRefType type = op.getBuffer().getType();
    rewriter.replaceOp(op,
                       buildDescriptor(rewriter, loc, *getTypeConverter(), type,
                                       ptr, allSizes(rewriter, loc, type, {})));
    return success();
  }
};

/// Appends the scalar leaves of `value` (structs and arrays flattened in
/// order): a memref descriptor becomes allocated, aligned, offset, sizes,
/// strides — the parameters an outlined gpu.func gets when the target's
/// codegen lowers it to LLVM.
void flattenLeaves(OpBuilder &b, Location loc, Value value,
                   SmallVectorImpl<Value> &leaves) {
  Type type = value.getType();
  if (auto st = dyn_cast<LLVM::LLVMStructType>(type)) {
    for (auto [i, t] : llvm::enumerate(st.getBody()))
      flattenLeaves(b, loc,
                    LLVM::ExtractValueOp::create(b, loc, value,
                                                 ArrayRef<int64_t>{(int64_t)i}),
                    leaves);
    return;
  }
  if (auto at = dyn_cast<LLVM::LLVMArrayType>(type)) {
    for (unsigned i = 0; i < at.getNumElements(); ++i)
      flattenLeaves(b, loc,
                    LLVM::ExtractValueOp::create(b, loc, value,
                                                 ArrayRef<int64_t>{(int64_t)i}),
                    leaves);
    return;
  }
  leaves.push_back(value);
}

/// `gpu.launch_func` (device targets): `kiln_rt_launch_device` with the
/// kernel's index and name, its grid, and a kernelParams array of pointers
/// to stack slots holding each parameter. The context is the enclosing
/// launcher's first argument.
struct LaunchFuncOpLowering : public ConvertOpToLLVMPattern<gpu::LaunchFuncOp> {
  LaunchFuncOpLowering(const LLVMTypeConverter &converter,
                       const llvm::StringMap<int64_t> &kernelIndex)
      : ConvertOpToLLVMPattern(converter), kernelIndex(kernelIndex) {}

  LogicalResult
  matchAndRewrite(gpu::LaunchFuncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    auto fn = op->getParentOfType<FunctionOpInterface>();
    if (!fn || fn.getFunctionBody().empty() ||
        fn.getFunctionBody().front().getNumArguments() == 0)
      return op.emitOpError("needs an enclosing launcher taking the context");
    Value ctx = fn.getFunctionBody().front().getArgument(0);
    if (!isa<LLVM::LLVMPointerType>(ctx.getType()))
      return op.emitOpError("the launcher's first argument is not the context");
    StringRef name = op.getKernelName().getValue();
    auto it = kernelIndex.find(name);
    if (it == kernelIndex.end())
      return failure();

    SmallVector<Value> leaves;
    for (Value v : adaptor.getKernelOperands())
      flattenLeaves(rewriter, loc, v, leaves);
    Value one = i64(rewriter, loc, 1);
    int64_t n = std::max<size_t>(leaves.size(), 1);
    Value params = LLVM::AllocaOp::create(
        rewriter, loc, ptrType, LLVM::LLVMArrayType::get(ptrType, n), one);
    for (auto [i, leaf] : llvm::enumerate(leaves)) {
      Value slot =
          LLVM::AllocaOp::create(rewriter, loc, ptrType, leaf.getType(), one);
      LLVM::StoreOp::create(rewriter, loc, leaf, slot);
      Value entry = LLVM::GEPOp::create(rewriter, loc, ptrType, ptrType, params,
                                        ArrayRef<LLVM::GEPArg>{(int32_t)i});
      LLVM::StoreOp::create(rewriter, loc, slot, entry);
    }
    auto toI64 = [&](Value v) -> Value {
      if (v.getType().isInteger(64))
        return v;
      return LLVM::ZExtOp::create(rewriter, loc, rewriter.getI64Type(), v);
    };
    gpu::KernelDim3 grid{adaptor.getGridSizeX(), adaptor.getGridSizeY(),
                         adaptor.getGridSizeZ()};
    gpu::KernelDim3 block{adaptor.getBlockSizeX(), adaptor.getBlockSizeY(),
                          adaptor.getBlockSizeZ()};
    Value smem = adaptor.getDynamicSharedMemorySize()
                     ? toI64(adaptor.getDynamicSharedMemorySize())
                     : i64(rewriter, loc, 0);
    Value nameAddr = LLVM::AddressOfOp::create(
        rewriter, loc, ptrType,
        ("__kiln_kernel_name_" + std::to_string(it->second)));
    LLVM::CallOp::create(
        rewriter, loc, TypeRange{}, "kiln_rt_launch_device",
        ValueRange{ctx, i64(rewriter, loc, it->second), nameAddr, toI64(grid.x),
                   toI64(grid.y), toI64(grid.z), toI64(block.x), toI64(block.y),
                   toI64(block.z), smem, params});
    rewriter.eraseOp(op);
    return success();
  }

  const llvm::StringMap<int64_t> &kernelIndex;
};

/// A constant global holding `bytes` (NUL-terminated when `cString`).
void createByteGlobal(OpBuilder &b, Location loc, StringRef name,
                      StringRef bytes, bool external, bool cString,
                      uint64_t alignment = 1) {
  std::string data = bytes.str();
  if (cString)
    data.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
  auto global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                       external ? LLVM::Linkage::External
                                                : LLVM::Linkage::Internal,
                                       name, b.getStringAttr(data), alignment);
  (void)global;
}

/// `<kernel>_packed(void **args)`: loads each argument's slot and calls the
/// C interface wrapper `_mlir_ciface_<kernel>` (memref arguments by pointer
/// to their descriptor, scalars by value).
void createPackedEntry(ModuleOp module, StringRef kernel,
                       ArrayRef<bool> isMemRef, ArrayRef<Type> scalarTypes) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType});
  auto fn = LLVM::LLVMFuncOp::create(b, loc, (kernel + "_packed").str(), fnType,
                                     LLVM::Linkage::Internal);
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> args;
  for (auto [i, mem] : llvm::enumerate(isMemRef)) {
    Value slotPtr =
        LLVM::GEPOp::create(b, loc, ptrType, ptrType, entry->getArgument(0),
                            ArrayRef<LLVM::GEPArg>{(int32_t)i});
    Value slot = LLVM::LoadOp::create(b, loc, ptrType, slotPtr);
    args.push_back(
        mem ? slot
            : LLVM::LoadOp::create(b, loc, scalarTypes[i], slot).getResult());
  }
  LLVM::CallOp::create(b, loc, TypeRange{}, ("_mlir_ciface_" + kernel).str(),
                       args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// After each allocation through the runtime (outputs, dynamic buffers),
/// returns 1 from the host program when it failed; the runtime has recorded
/// why. Kernels never run on a null buffer.
void insertAllocationChecks(func::FuncOp host) {
  SmallVector<Operation *> allocs;
  host.walk([&](Operation *op) {
    if (isa<OutputOp, ExternalWeightOp>(op) ||
        (isa<BufferOp>(op) && !cast<BufferOp>(op).getOffset()))
      allocs.push_back(op);
  });
  for (Operation *op : allocs) {
    Location loc = op->getLoc();
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, op->getResult(0));
    Value isNull =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ptr,
                              arith::ConstantIndexOp::create(b, loc, 0));
    Block *cur = b.getInsertionBlock();
    Block *cont = cur->splitBlock(b.getInsertionPoint());
    Block *fail = b.createBlock(cont);
    func::ReturnOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, 1, 32).getResult());
    b.setInsertionPointToEnd(cur);
    cf::CondBranchOp::create(b, loc, isNull, fail, cont);
  }
}

/// Each kiln.check becomes a branch: when its condition is false the host
/// program records the message (kiln_rt_check_failed) and returns 1, so
/// nothing after the check runs.
LogicalResult insertRunChecks(func::FuncOp host, int64_t &numMessages) {
  SmallVector<CheckOp> checks;
  host.walk([&](CheckOp op) { checks.push_back(op); });
  auto module = host->getParentOfType<ModuleOp>();
  OpBuilder gb = OpBuilder::atBlockEnd(module.getBody());
  for (CheckOp check : checks) {
    if (!check.getCtx())
      return check.emitOpError("has no runtime context (it is not in the "
                               "host program)");
    Location loc = check.getLoc();
    std::string global = "__kiln_check_" + std::to_string(numMessages++);
    createByteGlobal(gb, loc, global, check.getMessage(), /*external=*/false,
                     /*cString=*/true);
    OpBuilder b(check);
    Block *cur = check->getBlock();
    Block *cont = cur->splitBlock(check->getIterator());
    Block *fail = b.createBlock(cont);
    auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
    Value message = LLVM::AddressOfOp::create(b, loc, ptrType, global);
    int64_t n = check.getValues().size();
    auto arrayType =
        LLVM::LLVMArrayType::get(b.getI64Type(), std::max<int64_t>(n, 1));
    Value values =
        LLVM::AllocaOp::create(b, loc, ptrType, arrayType, i64(b, loc, 1));
    for (int64_t i = 0; i < n; ++i) {
      Value wide = check.getValueAsI64(b, i);
      Value slot = LLVM::GEPOp::create(b, loc, ptrType, b.getI64Type(), values,
                                       ArrayRef<LLVM::GEPArg>{(int32_t)i});
      LLVM::StoreOp::create(b, loc, wide, slot);
    }
    LLVM::CallOp::create(
        b, loc, TypeRange{}, "kiln_rt_check_failed",
        ValueRange{check.getCtx(), message, i64(b, loc, n), values});
    func::ReturnOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, 1, 32).getResult());
    b.setInsertionPointToEnd(cur);
    cf::CondBranchOp::create(b, loc, check.getCondition(), cont, fail);
    check.erase();
  }
  return success();
}

struct ConvertHostToLLVMPass
    : public kiln::impl::KilnConvertHostToLLVMBase<ConvertHostToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(unrollNDFromElements(module)))
      return signalPassFailure();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto i64Type = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    declareRuntimeFn(module, "kiln_rt_input", ptrType, {ptrType, i64Type});
    declareRuntimeFn(module, "kiln_rt_input_dim", i64Type,
                     {ptrType, i64Type, i64Type});
    declareRuntimeFn(module, "kiln_rt_output", ptrType,
                     {ptrType, i64Type, ptrType});
    declareRuntimeFn(module, "kiln_rt_arena", ptrType, {ptrType});
    declareRuntimeFn(module, "kiln_rt_alloc", ptrType, {ptrType, i64Type});
    declareRuntimeFn(module, "kiln_rt_release", voidType, {ptrType, ptrType});
    declareRuntimeFn(module, "kiln_rt_launch_cpu", voidType,
                     {ptrType, ptrType, ptrType});
    declareRuntimeFn(module, "kiln_rt_external_weight", ptrType,
                     {ptrType, i64Type});
    declareRuntimeFn(module, "kiln_rt_parallel_for", voidType,
                     {ptrType, ptrType, i64Type, i64Type});
    declareRuntimeFn(module, "kiln_rt_check_failed", voidType,
                     {ptrType, ptrType, i64Type, ptrType});
    std::string launchRecords = numberLaunchSites(module);

    // Device targets: the device image, kernel names and device entries.
    std::string device;
    if (auto d = module->getAttrOfType<StringAttr>("kiln.device"))
      device = d.str();
    llvm::StringMap<int64_t> kernelIndex;
    bool hostReads = false;
    if (!device.empty()) {
      declareRuntimeFn(module, "kiln_rt_launch_device", voidType,
                       {ptrType, i64Type, ptrType, i64Type, i64Type, i64Type,
                        i64Type, i64Type, i64Type, i64Type, ptrType});
      declareRuntimeFn(module, "kiln_rt_weight", ptrType,
                       {ptrType, i64Type, ptrType, i64Type});
      declareRuntimeFn(module, "kiln_rt_read_device", voidType,
                       {ptrType, ptrType, ptrType, i64Type});
      declareTileMapFns(module);
      declareRuntimeFn(module, "kiln_rt_check_record", ptrType,
                       {ptrType, ptrType, i64Type});
      OpBuilder gb = OpBuilder::atBlockEnd(module.getBody());
      if (auto checks =
              module->getAttrOfType<ArrayAttr>("kiln.device_checks")) {
        std::string table;
        for (Attribute message : checks) {
          table += cast<StringAttr>(message).getValue();
          table.push_back('\0');
        }
        createByteGlobal(gb, module.getLoc(), "__kiln_device_checks", table,
                         /*external=*/false, /*cString=*/true);
      }
      module.walk([&](gpu::LaunchFuncOp launch) {
        StringRef name = launch.getKernelName().getValue();
        if (kernelIndex.count(name))
          return;
        int64_t index = kernelIndex.size();
        kernelIndex[name] = index;
        createByteGlobal(gb, launch.getLoc(),
                         "__kiln_kernel_name_" + std::to_string(index), name,
                         /*external=*/false, /*cString=*/true);
      });
      hostReads = !module.getOps<func::FuncOp>().empty() &&
                  module.walk([](ReadOp) { return WalkResult::interrupt(); })
                      .wasInterrupted();
      SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
      if (binaries.size() > 1) {
        module.emitError("expected one device image, found ")
            << binaries.size();
        return signalPassFailure();
      }
      std::string image;
      if (!binaries.empty()) {
        auto objects = binaries.front().getObjects();
        if (objects.size() != 1) {
          binaries.front().emitError("expected one device object");
          return signalPassFailure();
        }
        image = cast<gpu::ObjectAttr>(objects[0]).getObject().str();
        binaries.front().erase();
      }
      // The image, its size and its kind: the signature's device kind,
      // which names the runtime driver that loads it.
      createByteGlobal(gb, module.getLoc(), "kiln_model_device_image", image,
                       /*external=*/true, /*cString=*/false, 64);
      LLVM::GlobalOp::create(gb, module.getLoc(), i64Type, /*isConstant=*/true,
                             LLVM::Linkage::External,
                             "kiln_model_device_image_size",
                             gb.getI64IntegerAttr(image.size()));
      createByteGlobal(gb, module.getLoc(), "kiln_model_device_image_kind",
                       StringRef(device).split(' ').first, /*external=*/true,
                       /*cString=*/true);
      module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
    }

    // Kernels to give a packed entry, and the signature text.
    LowerToLLVMOptions options(ctx);
    // memref.alloc/dealloc call MLIR's generic allocation functions, which
    // the model runtime defines with a cache of freed blocks
    // (Model/KernelAlloc.c): a kernel's temporaries are not returned to the
    // system between runs.
    options.useGenericFunctions = true;
    LLVMTypeConverter converter(ctx, options);
    struct KernelInfo {
      std::string name;
      SmallVector<bool> isMemRef;
      SmallVector<Type> scalarTypes;
    };
    SmallVector<KernelInfo> kernels;
    std::string io;
    int64_t numMessages = 0;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (auto sig = fn->getAttrOfType<StringAttr>("kiln.signature_io")) {
        io = sig.str();
        insertAllocationChecks(fn);
      }
      if (failed(insertRunChecks(fn, numMessages)))
        return signalPassFailure();
      if (!(fn->hasAttr("kiln.kernel") || fn->hasAttr("kiln.parallel_body")) ||
          !device.empty())
        continue;
      KernelInfo info{fn.getName().str(), {}, {}};
      for (Type t : fn.getArgumentTypes()) {
        info.isMemRef.push_back(isa<MemRefType>(t));
        info.scalarTypes.push_back(
            isa<MemRefType>(t) ? Type() : converter.convertType(t));
      }
      kernels.push_back(std::move(info));
    }

    LLVMConversionTarget target(*ctx);
    target.addLegalOp<ModuleOp>();
    RewritePatternSet patterns(ctx);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    index::populateIndexToLLVMConversionPatterns(converter, patterns);
    ub::populateUBToLLVMConversionPatterns(converter, patterns);
    // CPU kernels' vector code (kiln-cpu-codegen lowered it to 1-D ops).
    populateVectorToLLVMConversionPatterns(converter, patterns,
                                           /*reassociateFPReductions=*/true);
    // The x86 ops the CPU codegen uses where the chip has them (AVX512-BF16
    // dot products) as LLVM's intrinsics.
    populateX86VectorLegalizeForLLVMExportPatterns(converter, patterns);
    configureX86VectorLegalizeForExportTarget(target);
    // And its AMX tile products (int8 contractions on chips with
    // AMX-INT8).
    populateAMXLegalizeForLLVMExportPatterns(converter, patterns);
    configureAMXLegalizeForExportTarget(target);
    patterns.add<InputOpLowering, OutputOpLowering, BufferOpLowering,
                 ReleaseOpLowering, LaunchOpLowering, ParallelForOpLowering,
                 ReadOpLowering, WeightOpLowering, CheckRecordOpLowering>(
        converter);
    patterns.add<LaunchFuncOpLowering>(converter, kernelIndex);
    patterns.add<ExternalWeightOpLowering>(converter);
    populateTileMapLowerings(converter, patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    hoistFixedAllocas(module);

    for (const KernelInfo &k : kernels)
      createPackedEntry(module, k.name, k.isMemRef, k.scalarTypes);

    int64_t arena = 0;
    if (auto a = module->getAttrOfType<IntegerAttr>("kiln.arena_size"))
      arena = a.getInt();
    std::string text =
        "kiln-signature 1\narena " + std::to_string(arena) + "\n" + io;
    // The CPU the host code is built for and the features it needs.
    if (auto cpu = module->getAttrOfType<StringAttr>("kiln.cpu")) {
      text += "cpu " + cpu.str();
      if (auto req = module->getAttrOfType<StringAttr>("kiln.cpu_requires"))
        if (!req.getValue().empty())
          text += " " + req.str();
      text += "\n";
    }
    text += launchRecords;
    if (!device.empty()) {
      int64_t weights = 0;
      if (auto w = module->getAttrOfType<IntegerAttr>("kiln.num_weights"))
        weights = w.getInt();
      text += "device " + device + "\nkernels " +
              std::to_string(kernelIndex.size()) + "\nweights " +
              std::to_string(weights) + "\n";
      // A run the runtime may capture into a device graph (one per input
      // shape when dims are symbolic): no host reads of device data, so
      // the symbols' values decide every launch and allocation.
      if (!hostReads)
        text += "graph-capturable\n";
      // Every kernel waits for the previous one itself (the target's
      // codegen marks the module): the runtime may launch it early.
      if (module->hasAttr("kiln.dependent_launch"))
        text += "dependent-launch\n";
    }
    text.push_back('\0');
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto arrayType =
        LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), text.size());
    LLVM::GlobalOp::create(b, module.getLoc(), arrayType, /*isConstant=*/true,
                           LLVM::Linkage::External, "kiln_model_signature",
                           b.getStringAttr(text));
  }
};
} // namespace
