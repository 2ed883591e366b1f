//===- Pipelines.cpp - Kiln's stages as pass pipelines --------------------===//
//
// The stages of the flow (getStageNames), each built from CompileOptions by
// buildStagePipeline: kilnc runs them in order (lowerToLLVMDialect) and
// kiln-opt registers each as `kiln-<stage>-pipeline` with CompileOptions'
// fields as pipeline options, so both build the same passes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Kiln/IR/KilnDialect.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"
#include "kiln/Dialect/Onnx/IR/OnnxDialect.h"
#include "kiln/Dialect/Onnx/Transforms/CalibrationMethods.h"
#include "kiln/Dialect/Onnx/Transforms/Passes.h"
#include "kiln/Target/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kiln;

void mlir::kiln::registerKilnDialects(DialectRegistry &registry) {
  registry.insert<onnxops::OnnxDialect, KilnDialect, affine::AffineDialect,
                  arith::ArithDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, func::FuncDialect,
                  index::IndexDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect, ub::UBDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerTargetDialects(registry);
}

static const llvm::StringLiteral kStages[] = {"import",  "graph", "lower",
                                              "kernels", "host",  "bufferize",
                                              "codegen", "llvm"};

ArrayRef<llvm::StringLiteral> mlir::kiln::getStageNames() { return kStages; }

namespace {
/// Readies kernels for bufferization: tensor.concat decomposed into
/// insert_slices, and every side-effect-free op whose results all have no
/// elements (a dim fixed to 0, e.g. `--dim batch=0`) replaced by
/// tensor.empty: there is nothing to compute, and bufferizing a pad or slice
/// of a zero-size dim would build a subview that does not verify.
struct DecomposeConcatPass
    : public PassWrapper<DecomposeConcatPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DecomposeConcatPass)
  StringRef getArgument() const final { return "kiln-decompose-concat"; }
  StringRef getDescription() const final {
    return "Decomposes tensor.concat into tensor.insert_slice and folds "
           "zero-element results to tensor.empty";
  }
  static bool isZeroElements(Type t) {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && rt.hasStaticShape() && rt.getNumElements() == 0;
  }
  void runOnOperation() override {
    SmallVector<Operation *> empty;
    getOperation().walk([&](Operation *op) {
      if (op->getNumResults() == 0 ||
          isa<tensor::EmptyOp, bufferization::ToTensorOp>(op) ||
          !llvm::all_of(op->getResultTypes(), isZeroElements) ||
          !isMemoryEffectFree(op))
        return;
      empty.push_back(op);
    });
    for (Operation *op : empty) {
      OpBuilder b(op);
      for (Value r : op->getResults()) {
        auto t = cast<RankedTensorType>(r.getType());
        r.replaceAllUsesWith(tensor::EmptyOp::create(
            b, op->getLoc(), t.getShape(), t.getElementType()));
      }
      op->erase();
    }
    RewritePatternSet patterns(&getContext());
    tensor::populateDecomposeTensorConcatPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// The options of kiln-opt's `kiln-<stage>-pipeline`s: CompileOptions under
/// kilnc's flag names (without the leading dashes; -O is `opt-level`).
struct StagePipelineOptions : public PassPipelineOptions<StagePipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("<kind>[:<chip>] as kilnc --target takes it"),
      llvm::cl::init("cpu")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("Optimization level (kilnc -O)"),
                       llvm::cl::init(2)};
  Option<std::string> layout{
      *this, "layout",
      llvm::cl::desc("Convolution layout: target, nchw or nhwc"),
      llvm::cl::init("target")};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Exported attention chains as one onnx.Attention each"),
      llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision", llvm::cl::desc("fp32, tf32, fp16, bf16 or int8"),
      llvm::cl::init("fp32")};
  ListOption<std::string> keepFp32{
      *this, "keep-fp32",
      llvm::cl::desc("ONNX node names or op types kept in fp32")};
  Option<std::string> calibrationRanges{
      *this, "calibration-ranges",
      llvm::cl::desc("Calibration ranges (JSON) for the mixed precision pass"),
      llvm::cl::init("")};
  Option<std::string> calibrationMethod{
      *this, "calibration-method",
      llvm::cl::desc("int8: minmax, percentile[:P] or entropy"),
      llvm::cl::init("")};
  ListOption<std::string> int8Exclude{
      *this, "int8-exclude",
      llvm::cl::desc("int8: ONNX node names or op types kept in fp32")};
  Option<int64_t> int8KeepFp32{
      *this, "int8-keep-fp32",
      llvm::cl::desc("int8: keep the N most sensitive contractions in fp32"),
      llvm::cl::init(0)};
  Option<bool> int8Residuals{
      *this, "int8-residuals",
      llvm::cl::desc("int8: residual Adds read the quantized activation"),
      llvm::cl::init(true)};
  Option<bool> int8Attention{
      *this, "int8-attention",
      llvm::cl::desc("int8: quantize attention's Q, K and V for the fused "
                     "kernel"),
      llvm::cl::init(false)};
  Option<bool> f32ConstantDivision{
      *this, "f32-constant-division",
      llvm::cl::desc("f32 divisions by a constant as a product and one FMA "
                     "correction (default: on for int8)")};
  Option<std::string> int8Float{
      *this, "int8-float",
      llvm::cl::desc("int8: what the ops left in float compute in: auto, "
                     "fp32, fp16 or bf16"),
      llvm::cl::init("auto")};
  ListOption<std::string> exposeIntermediates{
      *this, "expose-intermediates",
      llvm::cl::desc("Return intermediate values as outputs: all, or these "
                     "nodes'")};
  Option<bool> gpuTiledContractions{
      *this, "gpu-tiled-contractions",
      llvm::cl::desc("GPU: shared-memory tiled contractions"),
      llvm::cl::init(GPUCodegenOptions().tiledContractions)};
  Option<bool> gpuWarpReductions{
      *this, "gpu-warp-reductions",
      llvm::cl::desc("GPU: one warp per output for row reductions"),
      llvm::cl::init(GPUCodegenOptions().warpReductions)};
  Option<bool> gpuRowFusion{
      *this, "gpu-row-fusion",
      llvm::cl::desc("GPU: chains of row-local ops (normalizations, softmax) "
                     "as one launch"),
      llvm::cl::init(GPUCodegenOptions().rowFusion)};
  Option<bool> gpuDependentLaunch{
      *this, "gpu-dependent-launch",
      llvm::cl::desc("GPU: kernels wait for the previous one themselves and "
                     "are launched while it runs, where the chip can"),
      llvm::cl::init(GPUCodegenOptions().dependentLaunch)};
  Option<bool> gpuTensorCores{
      *this, "gpu-tensor-cores",
      llvm::cl::desc("GPU: half contractions on tensor cores"),
      llvm::cl::init(GPUCodegenOptions().tensorCores)};
  Option<bool> gpuAsyncCopy{
      *this, "gpu-async-copy",
      llvm::cl::desc("GPU: tiled contractions' operands through a ring of "
                     "shared buffers filled by asynchronous copies"),
      llvm::cl::init(GPUCodegenOptions().asyncCopy)};
  Option<int64_t> gpuBlockSize{
      *this, "gpu-block-size",
      llvm::cl::desc("GPU: threads per block of a parallel loop nest"),
      llvm::cl::init(GPUCodegenOptions().blockSize)};
  Option<int64_t> gpuFillBlocks{
      *this, "gpu-fill-blocks",
      llvm::cl::desc("GPU: blocks that fill the GPU (fewer split their K)"),
      llvm::cl::init(GPUCodegenOptions().fillBlocks)};
  Option<int64_t> gpuMinThreads{
      *this, "gpu-min-threads",
      llvm::cl::desc("GPU: unroll reduction outputs while this many threads "
                     "remain"),
      llvm::cl::init(GPUCodegenOptions().minThreads)};
  Option<std::string> gpuPersistent{
      *this, "gpu-persistent",
      llvm::cl::desc("GPU: persistent contraction kernels (off, on, auto)"),
      llvm::cl::init(
          stringifyPersistentKernels(GPUCodegenOptions().persistent).str())};
  Option<std::string> gpuSplitK{
      *this, "gpu-split-k",
      llvm::cl::desc("GPU: the target's contraction kernels split K for few "
                     "tiles (auto, off)"),
      llvm::cl::init("auto")};
  Option<std::string> gpuTiles{
      *this, "gpu-tiles",
      llvm::cl::desc("GPU: output tiles (BMxBN, comma-separated) the "
                     "target's contraction kernels may choose from")};
  Option<std::string> gpuAttentionBlock{
      *this, "gpu-attention-block",
      llvm::cl::desc("GPU: the fused attention kernel's block, "
                     "WARPSxKEYS[/BLOCKS] (default: the kernel's own)")};
  Option<std::string> maxMemory{
      *this, "max-memory",
      llvm::cl::desc("Arena budget for kiln-remat: bytes with K/M/G, or a "
                     "fraction of the unconstrained peak such as 0.6x"),
      llvm::cl::init("")};
  Option<bool> maxMemoryWeights{
      *this, "max-memory-weights",
      llvm::cl::desc("The max-memory budget covers the weights too"),
      llvm::cl::init(false)};

  /// The --gpu-* values toCompileOptions parses into structures (a
  /// value that is none is an error here, not the default).
  LogicalResult verifyGPUChoices(std::string &error) const {
    ContractionTiles tiles;
    AttentionBlock block;
    return success(parseContractionTiles(gpuTiles, tiles, error) &&
                   parseAttentionBlock(gpuAttentionBlock, block, error));
  }

  CompileOptions toCompileOptions() const {
    CompileOptions o;
    o.target = target;
    o.optLevel = optLevel;
    o.precision = precision;
    o.layout = layout;
    if (fuseAttention.hasValue())
      o.fuseAttention = fuseAttention;
    o.keepFp32.assign(keepFp32.begin(), keepFp32.end());
    o.calibrationRanges = calibrationRanges;
    o.calibrationMethod = calibrationMethod;
    o.int8Exclude.assign(int8Exclude.begin(), int8Exclude.end());
    o.int8KeepFp32 = int8KeepFp32;
    o.int8Float = int8Float;
    o.int8Residuals = int8Residuals;
    o.int8Attention = int8Attention;
    if (f32ConstantDivision.hasValue())
      o.f32ConstantDivision = f32ConstantDivision;
    setExposeIntermediates(o, exposeIntermediates);
    o.gpu.tiledContractions = gpuTiledContractions;
    o.gpu.warpReductions = gpuWarpReductions;
    o.gpu.tensorCores = gpuTensorCores;
    o.gpu.asyncCopy = gpuAsyncCopy;
    o.gpu.rowFusion = gpuRowFusion;
    o.gpu.dependentLaunch = gpuDependentLaunch;
    o.gpu.blockSize = gpuBlockSize;
    o.gpu.fillBlocks = gpuFillBlocks;
    o.gpu.minThreads = gpuMinThreads;
    if (std::optional<PersistentKernels> pk =
            parsePersistentKernels(gpuPersistent))
      o.gpu.persistent = *pk;
    std::string error;
    (void)parseContractionTiles(gpuTiles, o.gpu.tiles, error);
    (void)parseAttentionBlock(gpuAttentionBlock, o.gpu.attentionBlock, error);
    o.gpu.splitK = gpuSplitK != "off";
    o.maxMemory = maxMemory;
    o.maxMemoryWeights = maxMemoryWeights;
    return o;
  }
};
} // namespace

void mlir::kiln::setExposeIntermediates(CompileOptions &options,
                                        ArrayRef<std::string> nodes) {
  options.exposeIntermediates = false;
  options.exposeNodes.clear();
  for (const std::string &n : nodes) {
    options.exposeIntermediates = true;
    if (n != "all" && !n.empty())
      options.exposeNodes.push_back(n);
  }
}

/// The graph-stage passes `options` asks for after the graph optimizer:
/// The type the float ops of an int8 build compute in (--int8-float; auto:
/// fp16 where the target is a device, fp32 on the CPU).
static std::string int8FloatPrecision(const CompileOptions &options,
                                      const Target &target) {
  if (options.int8Float != "auto")
    return options.int8Float;
  return target.isDevice() ? "fp16" : "fp32";
}

/// kiln-expose-intermediates, kiln-mixed-precision (for --precision=int8,
/// over what the quantization left in float).
static void buildPrecisionPasses(OpPassManager &pm,
                                 const CompileOptions &options,
                                 const Target &target) {
  if (options.exposeIntermediates) {
    KilnExposeIntermediatesOptions o;
    o.nodes.assign(options.exposeNodes.begin(), options.exposeNodes.end());
    pm.addPass(createKilnExposeIntermediates(o));
  }
  std::string precision = options.precision == "int8"
                              ? int8FloatPrecision(options, target)
                              : options.precision;
  if (!precision.empty() && precision != "fp32") {
    KilnMixedPrecisionOptions o;
    o.precision = precision;
    o.keepFp32.assign(options.keepFp32.begin(), options.keepFp32.end());
    o.ranges = options.calibrationRanges;
    pm.addPass(createKilnMixedPrecision(o));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
}

LogicalResult mlir::kiln::buildStagePipeline(OpPassManager &pm, StringRef stage,
                                             const CompileOptions &options,
                                             const Target &targetRef) {
  const Target *target = &targetRef;
  int optLevel = options.optLevel;
  if (stage == "graph") {
    pm.addNestedPass<func::FuncOp>(createKilnOnnxInferShapes());
    if (optLevel >= 1) {
      // Folding makes shapes static, which lets more fold: twice.
      for (int i = 0; i < 2; ++i) {
        pm.addNestedPass<func::FuncOp>(createKilnOnnxSimplify());
        pm.addPass(createCanonicalizerPass());
        pm.addPass(createCSEPass());
        pm.addNestedPass<func::FuncOp>(createKilnOnnxInferShapes());
      }
    }
    // --precision=int8: QDQ around the contractions, from the calibration
    // (where the calibration build exposed its values: the keys match).
    if (options.precision == "int8") {
      KilnOnnxInsertQDQOptions o;
      o.ranges = options.calibrationRanges;
      if (!options.calibrationMethod.empty())
        o.method = options.calibrationMethod;
      o.exclude.assign(options.int8Exclude.begin(), options.int8Exclude.end());
      llvm::append_range(o.exclude, options.keepFp32);
      o.keepCount = options.int8KeepFp32;
      o.quantizeResiduals = options.int8Residuals;
      // Q, K, V in 8 bits where the attention becomes the fused kernel
      // (its condition below), which reads them so.
      o.attentionInputs = options.int8Attention && optLevel >= 1 &&
                          options.fuseAttention.value_or(
                              target->hasFusedAttention() &&
                              int8FloatPrecision(options, *target) != "fp32");
      pm.addPass(createKilnOnnxInsertQDQ(o));
    }
    // Quantized (QDQ) layers as integer products: what such a model asks
    // for, and exact where the float form rounds (docs/int8.md).
    if (optLevel >= 1) {
      pm.addNestedPass<func::FuncOp>(createKilnOnnxFuseQDQ());
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
    bool halfBuild = options.precision == "fp16" ||
                     options.precision == "bf16" ||
                     (options.precision == "int8" &&
                      int8FloatPrecision(options, *target) != "fp32");
    if (options.fuseAttention.value_or(target->hasFusedAttention() &&
                                       halfBuild)) {
      pm.addNestedPass<func::FuncOp>(createKilnOnnxFuseAttention());
      pm.addPass(createCanonicalizerPass());
      pm.addNestedPass<func::FuncOp>(createKilnOnnxInferShapes());
    }
    buildPrecisionPasses(pm, options, *target);
    std::string layout = options.layout;
    if (layout == "target")
      layout = target->getConvLayout() == ConvLayout::NHWC ? "nhwc" : "nchw";
    if (optLevel >= 1 && layout == "nhwc") {
      KilnOnnxConvertLayoutOptions o;
      o.layout = layout;
      o.filterFirstInt8 = target->wantsKMajorInt8Weights();
      pm.addNestedPass<func::FuncOp>(createKilnOnnxConvertLayout(o));
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
  } else if (stage == "lower") {
    KilnConvertOnnxToLinalgOptions lower;
    lower.fusedAttention = target->hasFusedAttention();
    lower.kMajorInt8Weights = target->wantsKMajorInt8Weights();
    pm.addNestedPass<func::FuncOp>(createKilnConvertOnnxToLinalg(lower));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  } else if (stage == "kernels") {
    pm.addNestedPass<func::FuncOp>(createKilnFormKernels());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (optLevel >= 1) {
      // No CSE after fusion: merged kernels keep one init per computation
      // (a shared init would make empty-tensor elimination write two
      // results into one destination).
      pm.addNestedPass<func::FuncOp>(createKilnFuseKernels());
      pm.addNestedPass<func::FuncOp>(createKilnViewWindows());
      KilnHalfDivisionOptions division;
      division.f32 =
          options.f32ConstantDivision.value_or(options.precision == "int8");
      // On the host CPU the corrected product of a QuantizeLinear's
      // division made BERT-base's QDQ model 1.9x slower than the vector
      // division (bench/int8.py, 2026-12-06: 92 against 48 ms a run).
      division.rounded = target->isDevice();
      pm.addNestedPass<func::FuncOp>(createKilnHalfDivision(division));
      pm.addPass(createCanonicalizerPass());
    }
  } else if (stage == "host") {
    pm.addPass(createKilnOutlineKernels());
    if (optLevel >= 1)
      pm.addPass(createKilnHoistWeightKernels());
    if (!options.maxMemory.empty()) {
      // Checked by CompileOptions::verify.
      KilnRematOptions remat;
      std::string error;
      (void)parseMaxMemory(options.maxMemory, remat.budgetBytes,
                           remat.budgetFraction, error);
      remat.weights = options.maxMemoryWeights;
      // A device target uploads each weight into an allocation of its own,
      // rounded up to the runtime's KILN_DEVICE_ALIGNMENT (256 bytes).
      if (target->isDevice())
        remat.weightAlignment = 256;
      pm.addPass(createKilnRemat(remat));
    }
    pm.addPass(createKilnPlanMemory());
    pm.addPass(createCanonicalizerPass());
  } else if (stage == "bufferize") {
    pm.addPass(std::make_unique<DecomposeConcatPass>());
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
    bufferization::OneShotBufferizePassOptions bopts;
    bopts.bufferizeFunctionBoundaries = false;
    pm.addPass(bufferization::createOneShotBufferizePass(bopts));
    // On a device, buffers inside kernels become run-scoped scratch
    // (kiln-map-kernels-to-gpu): nothing to free.
    if (!target->isDevice()) {
      bufferization::BufferDeallocationPipelineOptions dopts;
      bufferization::buildBufferDeallocationPipeline(pm, dopts);
    }
    pm.addPass(createCanonicalizerPass());
  } else if (stage == "codegen") {
    if (options.optLevel >= 1)
      pm.addPass(createKilnDedupKernels());
    target->buildCodegenPipeline(pm);
  } else if (stage == "llvm") {
    pm.addPass(createKilnFlattenGlobals());
    pm.addPass(arith::createArithExpandOpsPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(createConvertMathToLibmPass());
    pm.addPass(createKilnConvertHostToLLVM());
    pm.addPass(createReconcileUnrealizedCastsPass());
  } else {
    return failure();
  }
  return success();
}

void mlir::kiln::registerAllKilnPasses() {
  registerKilnOnnxPasses();
  registerKilnPasses();
  registerKilnConversionPasses();
  registerKilnTargetPasses();
  PassRegistration<DecomposeConcatPass>();
  for (StringRef stage : ArrayRef(kStages).drop_front()) {
    std::string name = ("kiln-" + stage + "-pipeline").str();
    registerPassPipeline(
        name, ("Kiln's '" + stage + "' stage, as kilnc builds it").str(),
        [stage](OpPassManager &pm, StringRef text,
                function_ref<LogicalResult(const Twine &)> errorHandler) {
          StagePipelineOptions parsed;
          if (failed(parsed.parseFromString(text)))
            return failure();
          CompileOptions options = parsed.toCompileOptions();
          std::string error;
          if (failed(parsed.verifyGPUChoices(error)) ||
              failed(options.verify(error)))
            return errorHandler(error);
          std::unique_ptr<Target> target = createTarget(options, error);
          if (!target)
            return errorHandler(error);
          return buildStagePipeline(pm, stage, options, *target);
        },
        [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
          optHandler(StagePipelineOptions());
        });
  }
}

bool mlir::kiln::parseMaxMemory(StringRef spec, int64_t &bytes,
                                double &fraction, std::string &error) {
  bytes = 0;
  fraction = 0;
  StringRef s = spec.trim();
  auto bad = [&] {
    error = "--max-memory expects bytes with an optional K, M or G suffix "
            "(e.g. 512M) or a fraction of the unconstrained peak (e.g. "
            "0.6x), got '" +
            spec.str() + "'";
    return false;
  };
  if (s.consume_back("x") || s.consume_back("X")) {
    if (s.getAsDouble(fraction) || !(fraction > 0))
      return bad();
    return true;
  }
  int64_t scale = 1;
  if (s.consume_back("K") || s.consume_back("k"))
    scale = int64_t(1) << 10;
  else if (s.consume_back("M") || s.consume_back("m"))
    scale = int64_t(1) << 20;
  else if (s.consume_back("G") || s.consume_back("g"))
    scale = int64_t(1) << 30;
  long long v = 0;
  if (s.getAsInteger(10, v) || v <= 0 || v > INT64_MAX / scale)
    return bad();
  bytes = v * scale;
  return true;
}

LogicalResult CompileOptions::verify(std::string &error) const {
  std::string targetError;
  if (!parseTarget(target, targetError)) {
    error = targetError;
    return failure();
  }
  if (optLevel < 0 || optLevel > 3) {
    error = "-O must be 0, 1, 2 or 3";
    return failure();
  }
  if (!llvm::is_contained({"fp32", "tf32", "fp16", "bf16", "int8"},
                          precision)) {
    error = "unknown precision '" + precision +
            "' (expected fp32, tf32, fp16, bf16 or int8)";
    return failure();
  }
  if (precision != "int8" && (!calibrationMethod.empty() ||
                              !int8Exclude.empty() || int8KeepFp32 != 0)) {
    error = "--calibration-method, --int8-exclude and --int8-keep-fp32 need "
            "--precision=int8";
    return failure();
  }
  if (!llvm::is_contained({"auto", "fp32", "fp16", "bf16"}, int8Float)) {
    error = "unknown --int8-float '" + int8Float +
            "' (expected auto, fp32, fp16 or bf16)";
    return failure();
  }
  if (precision != "int8" && int8Float != "auto") {
    error = "--int8-float needs --precision=int8";
    return failure();
  }
  if (!calibrationMethod.empty()) {
    int8::Method method;
    if (!int8::parseMethod(calibrationMethod, method, error))
      return failure();
  }
  if (!llvm::is_contained({"target", "nchw", "nhwc"}, layout)) {
    error = "unknown layout '" + layout + "' (expected target, nchw or nhwc)";
    return failure();
  }
  int64_t budgetBytes = 0;
  double budgetFraction = 0;
  if (!maxMemory.empty() &&
      !parseMaxMemory(maxMemory, budgetBytes, budgetFraction, error))
    return failure();
  if (maxMemoryWeights && maxMemory.empty()) {
    error = "--max-memory-weights needs --max-memory";
    return failure();
  }
  if (precision == "fp32" &&
      (!keepFp32.empty() || !calibrationRanges.empty())) {
    error = "--keep-fp32, --calibrate and --calibration-ranges need "
            "--precision=tf32, fp16, bf16 or int8";
    return failure();
  }
  return success();
}

std::unique_ptr<Target> mlir::kiln::createTarget(const CompileOptions &options,
                                                 std::string &error) {
  return parseTarget(options.target, error, options.gpu);
}

LogicalResult mlir::kiln::lowerToLLVMDialect(ModuleOp module,
                                             const CompileOptions &options) {
  std::string error;
  if (failed(options.verify(error)))
    return emitError(module.getLoc()) << error;
  std::unique_ptr<Target> target = createTarget(options, error);
  if (!target)
    return emitError(module.getLoc()) << error;
  if (!target->checkToolchain(error))
    return emitError(module.getLoc()) << error;
  for (StringRef stage : ArrayRef(kStages).drop_front()) {
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    if (failed(buildStagePipeline(pm, stage, options, *target)))
      return failure();
    TimingScope stageTiming;
    if (options.timing) {
      stageTiming = options.timing->nest(stage);
      pm.enableTiming(stageTiming);
    }
    if (options.printPipeline == stage && options.printPipelineTo) {
      pm.printAsTextualPipeline(*options.printPipelineTo, /*pretty=*/true);
      *options.printPipelineTo << "\n";
    }
    if (failed(pm.run(module)))
      return failure();
    if (options.dumpAfter == stage && options.dump)
      options.dump(stage, module);
    if (stage == "host" && options.afterHost)
      options.afterHost(module);
    if (stage == "codegen" && options.afterCodegen)
      options.afterCodegen(module);
  }
  return success();
}
