//===- MapKernelsToGPU.cpp - Bufferized kernels onto a GPU ----------------===//
//
// After bufferization, every kernel function holds linalg ops (and the odd
// loop or scalar access) on memrefs. On a device target:
//   - each kernel function takes the runtime context first and becomes a
//     host-side launcher; `kiln.launch` becomes a call of it;
//   - allocations inside kernels become run-scoped `kiln.buffer`s (device
//     scratch from the runtime), their deallocations go away, and each is
//     released (`kiln.release`) where its block ends, so later kernels of
//     the run reuse its memory;
//   - linalg ops become parallel loop nests (reduction dims as sequential
//     loops inside); each top-level nest becomes one `gpu.launch` whose
//     threads each run one iteration of the flattened nest;
//   - other memory accesses in host code run in single-thread launches,
//     consecutive ones grouped into one launch;
//   - host code reads device data only through `kiln.read` and sees
//     constants only through `kiln.weight`.
//
//===----------------------------------------------------------------------===//

#include "LaunchMapping.h"

#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"
#include "kiln/Target/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMAPKERNELSTOGPU
#include "kiln/Target/GPU/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::gpumap;

namespace {
struct MapKernelsToGPUPass
    : public kiln::impl::KilnMapKernelsToGPUBase<MapKernelsToGPUPass> {
  using Base::Base;
  MapKernelsToGPUPass(const KilnMapKernelsToGPUOptions &options,
                      std::shared_ptr<const GPUTargetInfo> info)
      : Base(options), info(std::move(info)) {}

  /// The target-info: the one the pipeline passed in, else the one
  /// registered for `device`; `resolved` is the device spelled out.
  std::shared_ptr<const GPUTargetInfo> getInfo(std::string &resolved,
                                               std::string &error) const {
    if (info) {
      resolved = device;
      return info;
    }
    return lookupGPUTargetInfo(device, resolved, error);
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    std::string resolved, error;
    if (std::shared_ptr<const GPUTargetInfo> i = getInfo(resolved, error))
      i->getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(context);
    std::string resolved, error;
    std::shared_ptr<const GPUTargetInfo> target = getInfo(resolved, error);
    if (!target) {
      module.emitError(error);
      return signalPassFailure();
    }
    int64_t warp = target->getWarpSize(), maxBlock = target->getMaxBlockSize();
    if (blockSize < warp || blockSize > maxBlock || blockSize % warp != 0) {
      module.emitError("block-size must be a multiple of ")
          << warp << " in [" << warp << ", " << maxBlock << "]";
      return signalPassFailure();
    }
    std::optional<PersistentKernels> persistentKernels =
        parsePersistentKernels(persistent);
    if (!persistentKernels) {
      module.emitError("persistent must be off, on or auto, not '")
          << persistent << "'";
      return signalPassFailure();
    }
    AttentionBlock attention;
    if (!parseAttentionBlock(attentionBlock, attention, error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    ContractionChoices choices;
    choices.persistent = *persistentKernels;
    choices.splitK = splitK;
    if (!parseContractionTiles(tiles, choices.tiles, error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    // A tile the target's kernels cannot take; a target without kernels of
    // its own (or an image without them) has nothing to choose.
    ContractionTiles own = target->getContractionTiles();
    for (const ContractionTile &tile : choices.tiles)
      if (!own.empty() && !llvm::is_contained(own, tile)) {
        module.emitError("gpu-tiles: ")
            << stringifyContractionTile(tile)
            << " is not a tile of this target's contraction kernels ("
            << stringifyContractionTiles(own) << ")";
        return signalPassFailure();
      }

    // Launchers take the runtime context first.
    SmallVector<func::FuncOp> kernels, hosts;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      if (fn->hasAttr("kiln.kernel")) {
        if (failed(fn.insertArgument(0, ptrType, {}, fn.getLoc())))
          return signalPassFailure();
        kernels.push_back(fn);
      } else {
        hosts.push_back(fn);
      }
    }
    SmallVector<LaunchOp> launches;
    module.walk([&](LaunchOp op) { launches.push_back(op); });
    for (LaunchOp op : launches) {
      OpBuilder b(op);
      SmallVector<Value> args = {op.getCtx()};
      llvm::append_range(args, op.getArgs());
      auto call = func::CallOp::create(b, op.getLoc(), op.getKernelAttr(),
                                       TypeRange{}, args);
      // The launch's ONNX nodes (the signature's launch records).
      if (Attribute nodes = op->getAttr(kLaunchNodesAttr))
        call->setAttr(kLaunchNodesAttr, nodes);
      op.erase();
    }

    // Constants: one weight index per global, in module order.
    llvm::DenseMap<StringAttr, int64_t> weightIndex;
    for (auto global : module.getOps<memref::GlobalOp>())
      if (global.getConstant() && global.getInitialValue())
        weightIndex.try_emplace(global.getSymNameAttr(), weightIndex.size());

    IRRewriter rewriter(context);
    auto prepare = [&](func::FuncOp fn, Value ctx) -> LogicalResult {
      // Allocations → run-scoped device buffers; memref.copy → linalg.copy.
      SmallVector<Operation *> ops;
      fn.walk([&](Operation *op) { ops.push_back(op); });
      for (Operation *op : ops) {
        rewriter.setInsertionPoint(op);
        if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
          auto type = cast<MemRefType>(op->getResult(0).getType());
          if (!type.getLayout().isIdentity() || type.getMemorySpace())
            return op->emitError("unsupported allocation on the GPU: ") << type;
          auto buffer = BufferOp::create(rewriter, op->getLoc(), type, ctx,
                                         op->getOperands(), IntegerAttr());
          rewriter.replaceOp(op, buffer.getBuffer());
        } else if (isa<memref::DeallocOp>(op)) {
          rewriter.eraseOp(op);
        } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
          linalg::CopyOp::create(rewriter, op->getLoc(), copy.getSource(),
                                 copy.getTarget());
          rewriter.eraseOp(op);
        } else if (auto reshape = dyn_cast<memref::ReshapeOp>(op)) {
          // A reshape reads its shape operand: static result dims need no
          // read; dynamic ones are host reads. The result is a row-major
          // view of the (contiguous) source.
          MemRefType type = reshape.getType();
          Location loc = op->getLoc();
          SmallVector<OpFoldResult> sizes, strides(type.getRank());
          for (int64_t i = 0; i < type.getRank(); ++i) {
            if (!type.isDynamicDim(i)) {
              sizes.push_back(rewriter.getIndexAttr(type.getDimSize(i)));
              continue;
            }
            Value idx = arith::ConstantIndexOp::create(rewriter, loc, i);
            Value v = ReadOp::create(
                rewriter, loc, reshape.getShape().getType().getElementType(),
                ctx, reshape.getShape(), ValueRange{idx});
            if (!v.getType().isIndex())
              v = arith::IndexCastOp::create(rewriter, loc,
                                             rewriter.getIndexType(), v);
            sizes.push_back(v);
          }
          OpFoldResult stride = rewriter.getIndexAttr(1);
          for (int64_t i = type.getRank() - 1; i >= 0; --i) {
            strides[i] = stride;
            std::optional<int64_t> a = getConstantIntValue(stride);
            std::optional<int64_t> b = getConstantIntValue(sizes[i]);
            if (a && b)
              stride = rewriter.getIndexAttr(*a * *b);
            else
              stride =
                  arith::MulIOp::create(
                      rewriter, loc,
                      getValueOrCreateConstantIndexOp(rewriter, loc, stride),
                      getValueOrCreateConstantIndexOp(rewriter, loc, sizes[i]))
                      .getResult();
          }
          auto cast = memref::ReinterpretCastOp::create(
              rewriter, loc, type, reshape.getSource(),
              rewriter.getIndexAttr(0), sizes, strides);
          rewriter.replaceOp(op, cast.getResult());
        } else if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
          auto it = weightIndex.find(get.getNameAttr().getAttr());
          if (it == weightIndex.end())
            return op->emitError("global '")
                   << get.getName() << "' is not a constant";
          rewriter.replaceOpWithNewOp<WeightOp>(
              op, get.getType(), ctx, get.getNameAttr(),
              rewriter.getI64IntegerAttr(it->second));
        }
      }
      // Buffers of static shape and weights move to the entry block, so a
      // loop that runs on the device as a whole does not allocate inside
      // device code (sharing one buffer across iterations is what the CPU
      // path's per-iteration alloc/dealloc amounts to).
      Block &entry = fn.getBody().front();
      SmallVector<Operation *> hoist;
      fn.walk([&](Operation *op) {
        if (op->getBlock() == &entry)
          return;
        if (isa<WeightOp>(op) ||
            (isa<BufferOp>(op) && cast<BufferOp>(op).getDynamicSizes().empty()))
          hoist.push_back(op);
      });
      for (Operation *op : hoist)
        op->moveBefore(&entry, entry.begin());
      // Fused attention: one launch each (the target claimed the op when
      // the attention lowering asked, Target::hasFusedAttention).
      SmallVector<AttentionOp> attentions;
      fn.walk([&](AttentionOp op) { attentions.push_back(op); });
      for (AttentionOp op : attentions)
        if (failed(FlashAttention(rewriter, *target, attention).lower(op)))
          return failure();
      // A stem's few-channel convolutions become im2col GEMMs first.
      if (tensorCores)
        (void)SmallChannelConv(rewriter, *target)
            .run(fn.getBody().front(), ctx);
      // Reductions and contractions first (they absorb the fill before and
      // the elementwise op after them), then every other linalg op →
      // parallel loops.
      SmallVector<linalg::LinalgOp> reductions;
      fn.walk([&](linalg::LinalgOp op) {
        if (op.getNumReductionLoops() > 0)
          reductions.push_back(op);
      });
      ReductionLowering lowering(rewriter, *target, minThreads);
      TiledContraction tiled(rewriter, *target, ctx, /*minBlocks=*/24,
                             fillBlocks > 0 ? fillBlocks
                                            : target->getFillBlocks(),
                             tensorCores, asyncCopy);
      // Shared-memory tiles for the contractions they fill the GPU with
      // (a warp per output would read one operand with a stride), then a
      // warp per output for the other reductions along a contiguous dim,
      // else a thread per output tile.
      SmallVector<linalg::LinalgOp> rest;
      for (linalg::LinalgOp op : reductions) {
        if (tensorCores &&
            succeeded(target->lowerContraction(rewriter, op, ctx, choices)))
          continue;
        if (tiledContractions && succeeded(tiled.lower(op)))
          continue;
        rest.push_back(op);
      }
      // Normalizations and softmax: a launch per chain of row-local ops.
      if (warpReductions && rowFusion && !rest.empty()) {
        RowFusion rows(rewriter, *target);
        if (rows.run(fn.getBody().front()) > 0) {
          rest.clear();
          fn.walk([&](linalg::LinalgOp op) {
            if (op.getNumReductionLoops() > 0)
              rest.push_back(op);
          });
        }
      }
      for (linalg::LinalgOp op : rest) {
        if (warpReductions && succeeded(lowering.lowerWarp(op)))
          continue;
        if (warpReductions && succeeded(lowering.lowerFull(op)))
          continue;
        (void)lowering.lower(op);
      }
      // Buffers the fusion left unused (an epilogue's intermediate).
      SmallVector<BufferOp> buffers;
      fn.walk([&](BufferOp op) { buffers.push_back(op); });
      for (BufferOp buffer : buffers) {
        if (!llvm::all_of(buffer->getUsers(), [](Operation *u) {
              return isa<memref::DimOp>(u) && u->use_empty();
            }))
          continue;
        for (Operation *u : llvm::make_early_inc_range(buffer->getUsers()))
          rewriter.eraseOp(u);
        rewriter.eraseOp(buffer);
      }
      SmallVector<linalg::LinalgOp> linalgOps;
      fn.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
      for (linalg::LinalgOp op : linalgOps) {
        rewriter.setInsertionPoint(op);
        if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
          return op->emitError("cannot lower to loops for the GPU");
        rewriter.eraseOp(op);
      }
      return success();
    };

    for (func::FuncOp fn : kernels) {
      Value ctx = fn.getArgument(0);
      if (failed(prepare(fn, ctx)))
        return signalPassFailure();
      releaseKernelBuffers(fn, ctx);
      GPUMapper mapper(ctx, blockSize, /*hostLoads=*/false);
      if (failed(mapper.mapBlock(fn.getBody().front())))
        return signalPassFailure();
    }
    SmallVector<Attribute> deviceChecks;
    for (func::FuncOp fn : hosts) {
      if (fn.getNumArguments() == 0 ||
          !isa<LLVM::LLVMPointerType>(fn.getArgumentTypes()[0]))
        continue;
      moveDeviceDataChecks(fn, deviceChecks);
      Value ctx = fn.getArgument(0);
      if (failed(prepare(fn, ctx)))
        return signalPassFailure();
      GPUMapper mapper(ctx, blockSize, /*hostLoads=*/true);
      if (failed(mapper.mapBlock(fn.getBody().front())))
        return signalPassFailure();
    }

    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
    module->setAttr("kiln.device", StringAttr::get(context, resolved));
    if (!deviceChecks.empty())
      module->setAttr("kiln.device_checks",
                      ArrayAttr::get(context, deviceChecks));
    module->setAttr(
        "kiln.num_weights",
        IntegerAttr::get(IntegerType::get(context, 64), weightIndex.size()));
  }

private:
  std::shared_ptr<const GPUTargetInfo> info;
};

} // namespace

std::unique_ptr<Pass> mlir::kiln::createKilnMapKernelsToGPU(
    const GPUCodegenOptions &gpu, StringRef device,
    std::shared_ptr<const GPUTargetInfo> info) {
  KilnMapKernelsToGPUOptions options;
  options.device = device.str();
  options.blockSize = gpu.blockSize;
  options.tiledContractions = gpu.tiledContractions;
  options.warpReductions = gpu.warpReductions;
  options.tensorCores = gpu.tensorCores;
  options.asyncCopy = gpu.asyncCopy;
  options.rowFusion = gpu.rowFusion;
  options.fillBlocks = gpu.fillBlocks;
  options.minThreads = gpu.minThreads;
  options.persistent = stringifyPersistentKernels(gpu.persistent).str();
  options.tiles = stringifyContractionTiles(gpu.tiles);
  options.splitK = gpu.splitK;
  options.attentionBlock = stringifyAttentionBlock(gpu.attentionBlock);
  return std::make_unique<MapKernelsToGPUPass>(options, std::move(info));
}
