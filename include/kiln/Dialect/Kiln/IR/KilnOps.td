//===- KilnOps.td - The kiln dialect -----------------------*- tablegen -*-===//
//
// Only what upstream lacks: the kernel region (the unit of fusion and of
// launch) and the host-side program ops (inputs, outputs, buffers, launches)
// that memory planning works on.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNOPS_TD
#define KILN_DIALECT_KILN_IR_KILNOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Dialect/LLVMIR/LLVMOpBase.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::mlir::kiln";
  let summary = "Kiln's kernels and host program";
  let description = [{
    The `kiln` dialect holds what upstream MLIR lacks for an ahead-of-time
    graph compiler: `kiln.kernel`, a region on tensors that becomes one launch
    (the unit of fusion), and the ops of the host program that calls kernels
    through Kiln's runtime ABI (`include/kiln/Runtime/ModelABI.h`): model
    inputs and outputs, intermediate buffers carved from the per-instance
    arena, and kernel launches.
  }];
  // The host program's context is an !llvm.ptr (kiln.check may name one
  // from the lowering on).
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

// The runtime context the host program receives (an opaque pointer).
def Kiln_Context : Type<CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self)">,
                        "runtime context pointer">,
    BuildableType<"::mlir::LLVM::LLVMPointerType::get($_builder.getContext())">;

// A tile map: the 128 bytes the runtime encodes for bulk tensor copies.
def Kiln_TileMap : Type<CPred<"::llvm::isa<::mlir::VectorType>($_self) && "
    "::llvm::cast<::mlir::VectorType>($_self).getShape() == "
    "::llvm::ArrayRef<int64_t>{16} && "
    "::llvm::cast<::mlir::VectorType>($_self).getElementType().isInteger(64)">,
    "tile map (vector<16xi64>)">,
    BuildableType<"::mlir::VectorType::get({16}, $_builder.getI64Type())">;

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Tensor level
//===----------------------------------------------------------------------===//

def Kiln_KernelOp : Kiln_Op<"kernel", [
    IsolatedFromAbove, AttrSizedOperandSegments,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A region of tensor computation launched as one kernel";
  let description = [{
    `kiln.kernel` groups the tensor ops that become one kernel launch. The
    region is isolated from above: every value it reads is an operand
    (`ins`), passed to the block as an argument of the same type. `dims`
    gives the dynamic sizes of the results, in order, so that the host can
    allocate their buffers before the launch. Each result is written to a
    fresh buffer owned by the host program.

    Example:
    ```mlir
    %r = kiln.kernel ins(%x, %w : tensor<?x8xf32>, tensor<8x4xf32>)
                     dims(%n : index) -> tensor<?x4xf32> {
    ^bb0(%a: tensor<?x8xf32>, %b: tensor<8x4xf32>):
      ...
      kiln.yield %v : tensor<?x4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, Variadic<Index>:$dims,
                       OptionalAttr<StrAttr>:$name);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The dynamic sizes of result `i` (a slice of `dims`).
    ::mlir::ValueRange getResultDims(unsigned i);
  }];
}

def Kiln_YieldOp : Kiln_Op<"yield", [Pure, Terminator,
    HasParent<"KernelOp">, ReturnLike]> {
  let summary = "Yields the results of a kernel region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
}

def Kiln_AttentionOp : Kiln_Op<"attention", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
        ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "Scaled dot-product attention as one fused kernel";
  let description = [{
    `softmax(Q·Kᵀ·scale + mask)·V` written into `init`, for a target that
    has a fused kernel for it (`Target::hasFusedAttention`; on the GPU
    lib/Target/GPU/FlashAttention.cpp): the attention lowering emits it in
    place of its generics, so the scores never reach memory. Destination
    style (on tensors it returns the written `init`; on memrefs it has no
    results), so kernel formation gives it a kernel of its own and memory
    planning sees one output.

    Every operand is 4-D, [B, H, S, D] or, where `seq_major[i]` is set
    (query, key, value, output in that order), [B, S, H, D] (a 3-D
    [B, S, H·D] operand's view). Q has Hq heads and K/V Hkv, Hq a multiple of
    Hkv (query head h reads K/V head h / (Hq / Hkv)); Q and K share the head
    size, V and the output may have their own. The optional additive `mask`
    is [B or 1, Hq or 1, S or 1, M] with M = L, 1, or shorter than L (keys
    past M masked); `causal` masks key j > query i. Accumulation is f32.

    Q, K and V may be 8-bit integers instead (each on its own), quantized
    per tensor: operand i (query, key, value) holds q with the value
    `dequant_scales[i]` * (q - `dequant_zero_points[i]`), q read as unsigned
    where `dequant_unsigned[i]` is set (the three arrays are present exactly
    when an operand is an integer; a float operand's entries are 1, 0,
    false). An integer build's quantized Q/K/V then reach the kernel in a
    quarter of f32's bytes, half of f16's: the kernel takes (q - zp) as f16
    (exact: |q - zp| < 2^11) and folds the scales into the scores' scale
    and the output.

    ```mlir
    %y = kiln.attention ins(%q, %k, %v : tensor<2x4x128x64xf16>, ...)
           outs(%init : tensor<2x4x128x64xf16>) scale = 0.125
           seq_major = [false, false, false, false] -> tensor<2x4x128x64xf16>
    ```
  }];
  let arguments = (ins AnyShaped:$query, AnyShaped:$key, AnyShaped:$value,
                       Optional<AnyShaped>:$mask, AnyShaped:$init,
                       F64Attr:$scale, UnitAttr:$causal,
                       DenseBoolArrayAttr:$seq_major,
                       OptionalAttr<DenseF64ArrayAttr>:$dequant_scales,
                       OptionalAttr<DenseI64ArrayAttr>:$dequant_zero_points,
                       OptionalAttr<DenseBoolArrayAttr>:$dequant_unsigned);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value (`,` `mask` $mask^)? `:`
      type($query) `,` type($key) `,` type($value) (`,` type($mask)^)? `)`
    `outs` `(` $init `:` type($init) `)` `scale` `=` $scale
    (`causal` $causal^)? `seq_major` `=` $seq_major
    (`dequant` `(` `scales` `=` $dequant_scales^ `,` `zero_points` `=`
      $dequant_zero_points `,` `unsigned` `=` $dequant_unsigned `)`)?
    attr-dict (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
    /// Where canonical dim `d` of [B, H, S, D] is among the dims of
    /// operand `operand` (0 query, 1 key, 2 value, 3 init), by its
    /// seq_major flag.
    int64_t canonicalDim(unsigned operand, int64_t d);
    /// Whether operand `operand` (0 query, 1 key, 2 value) holds 8-bit
    /// integers to dequantize (`dequant_*`).
    bool isQuantized(unsigned operand);
  }];
}

//===----------------------------------------------------------------------===//
// Host program
//===----------------------------------------------------------------------===//

def Kiln_InputOp : Kiln_Op<"input", [Pure]> {
  let summary = "The buffer of a model input";
  let description = [{
    Returns the caller's buffer of model input `index` (row-major,
    contiguous); dynamic sizes are read from the runtime. `ctx` is the
    runtime context the host program received.

    ```mlir
    %x = kiln.input %ctx [0] : memref<?x784xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, I64Attr:$index);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = "$ctx `[` $index `]` attr-dict `:` type($buffer)";
}

// Outputs and buffers come from the runtime, which owns them: they are not
// allocations the bufferization deallocation passes should free, and two of
// them must never be merged, hence a write effect on the runtime's state.
def Kiln_OutputOp : Kiln_Op<"output", [MemoryEffects<[MemWrite]>]> {
  let summary = "Allocates a model output through the runtime";
  let description = [{
    Asks the runtime for the buffer of model output `index` with the given
    dynamic sizes; the runtime owns it and hands it to the caller after the
    run. Fails the run (the host program returns non-zero) when the runtime
    cannot allocate it.

    ```mlir
    %y = kiln.output %ctx [0] (%n) : memref<?x10xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, I64Attr:$index,
                       Variadic<Index>:$dynamic_sizes);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = [{
    $ctx `[` $index `]` (`(` $dynamic_sizes^ `)`)? attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Kiln_BufferOp : Kiln_Op<"buffer", [MemoryEffects<[MemWrite]>]> {
  let summary = "An intermediate buffer between kernels";
  let description = [{
    A buffer owned by the host program. With an `offset` (set by
    `kiln-plan-memory`) it is a view of the instance's static arena at that
    byte offset; without one (dynamic sizes) it is allocated from the
    runtime for the duration of the run.

    ```mlir
    %t = kiln.buffer %ctx {offset = 128} : memref<4x8xf32>
    %u = kiln.buffer %ctx (%n) : memref<?x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, Variadic<Index>:$dynamic_sizes,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = [{
    $ctx (`(` $dynamic_sizes^ `)`)? attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Kiln_ReleaseOp : Kiln_Op<"release", [MemoryEffects<[MemFree]>]> {
  let summary = "Ends the use of a run-scoped buffer before the run ends";
  let description = [{
    Hands a `kiln.buffer` without an offset back to the runtime: later
    `kiln.buffer`s of the same run may reuse its memory. On a device the
    launches that used it are queued before any that reuse it (one stream),
    so nothing waits. `kiln-map-kernels-to-gpu` releases a kernel's own
    buffers when the kernel's launcher returns, so a run holds the largest
    kernel's scratch rather than the sum over its kernels.

    ```mlir
    %t = kiln.buffer %ctx (%n) : memref<?x8xf32>
    kiln.release %ctx, %t : memref<?x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx,
                       Arg<AnyMemRef, "", [MemFree]>:$buffer);
  let assemblyFormat = [{
    $ctx `,` $buffer attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Kiln_LaunchOp : Kiln_Op<"launch", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Launches a kernel function";
  let description = [{
    Calls the outlined kernel `kernel` through the runtime's launch entry for
    the target's device kind. Arguments are the kernel's input buffers, index
    values, then its output buffers (destination-passing style).

    ```mlir
    kiln.launch %ctx @main_kernel_0(%x, %w, %y) : memref<?x8xf32>, memref<8x4xf32>, memref<?x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, FlatSymbolRefAttr:$kernel,
                       Variadic<AnyType>:$args);
  let assemblyFormat = [{
    $ctx $kernel `(` $args `)` attr-dict `:` type($args)
  }];
}

def Kiln_ParallelForOp : Kiln_Op<"parallel_for", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Runs a loop body over tasks on the runtime's thread pool";
  let description = [{
    In a CPU kernel: calls `body(%lo, %hi, args...)` for a static partition
    of the tasks `[0, tasks)` into contiguous ranges, one per thread of the
    process's thread pool (kiln_rt_parallel_for), and returns when all have
    run. `body` is a function whose first two arguments are `index` (the
    task range), then `args`. Tasks must be independent.

    ```mlir
    kiln.parallel_for @kernel_0_par0(%a, %b) tasks 64 : memref<128x64xf32>, memref<128x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$body, I64Attr:$tasks,
                       Variadic<AnyType>:$args);
  let assemblyFormat = [{
    $body `(` $args `)` `tasks` $tasks attr-dict `:` type($args)
  }];
}

// A check fails the run: the write effect keeps it, and keeps it before the
// launches and host reads it guards.
def Kiln_CheckOp : Kiln_Op<"check", [MemoryEffects<[MemWrite]>,
    AttrSizedOperandSegments]> {
  let summary = "Fails the run with a message when a run-time condition is false";
  let description = [{
    A precondition of an ONNX node that only the run can decide (a Reshape's
    element count, an index in range, a divisor that is not zero): when
    `condition` is false the run stops here and fails with
    INVALID_ARGUMENT and `message`, whose `{0}`, `{1}`, ... are replaced by
    `values` (printed as signed integers). Nothing after it runs, so the
    kernels it guards never see the bad value. The lowering to the onnx
    dialect's consumers creates it without `ctx`; `kiln-outline-kernels`
    gives it the host program's.

    ```mlir
    kiln.check %ok, "node 'r' (Reshape, opset 17): shape has {0} elements, the input {1}" (%n, %m : index, index)
    kiln.check %ok, "..." ctx(%ctx)
    ```
  }];
  let arguments = (ins Optional<Kiln_Context>:$ctx, I1:$condition,
                       StrAttr:$message,
                       Variadic<AnyTypeOf<[Index, AnySignlessInteger]>>:$values);
  let assemblyFormat = [{
    $condition `,` $message (`(` $values^ `:` type($values) `)`)?
    (`ctx` `(` $ctx^ `)`)? attr-dict
  }];
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
  let extraClassDeclaration = [{
    /// Value `i` as the signed i64 the runtime prints.
    Value getValueAsI64(OpBuilder &b, unsigned i);
  }];
}

def Kiln_CheckRecordOp : Kiln_Op<"check_record", [MemoryEffects<[MemWrite]>]> {
  let summary = "Where device code records a failed run-time check";
  let description = [{
    On a device target, the record that a run-time check of device data (an
    index range, a divisor) writes when it fails, so that the run needs no
    host read of that data: element 0 holds the failed check's index + 1 in
    the module's `kiln.device_checks` messages (0 while every check held),
    element 1 the number of values, elements 2 to 9 the values. Device code
    writes it only when element 0 is still 0 (the first failure of the run
    wins). The runtime gives one record per instance, in host memory the
    device writes to directly, and reads it after the run's synchronization
    (`kiln_rt_check_record`): no copy and no sync of its own.

    ```mlir
    %rec = kiln.check_record %ctx : memref<10xi64>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx);
  let results = (outs AnyMemRef:$record);
  let assemblyFormat = [{ $ctx attr-dict `:` type($record) }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Elements of the record: index + 1, count, then the values.
    static constexpr int64_t kSize = 10;
  }];
}

def Kiln_ReadOp : Kiln_Op<"read", [MemoryEffects<[MemRead]>,
    TypesMatchWith<"result type matches element type of 'buffer'", "buffer",
                   "result",
                   "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">]> {
  let summary = "Reads one element of a device buffer on the host";
  let description = [{
    On a device target, the host program's read of a kernel result (a
    data-dependent size, a loop condition): a device-to-host copy of one
    element, which waits for the kernels before it. `kiln-map-kernels-to-gpu`
    creates it from the `memref.load`s left in host code.

    ```mlir
    %n = kiln.read %ctx, %count[%c0] : memref<1xi64>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, AnyMemRef:$buffer,
                       Variadic<Index>:$indices);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $ctx `,` $buffer `[` $indices `]` attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Kiln_TileMapOp : Kiln_Op<"tile_map", [Pure]> {
  let summary = "The tile map of a device buffer, for bulk tensor copies";
  let description = [{
    On a device target with a bulk tensor copy engine, the
    descriptor of `buffer` that a kernel's copies read boxes of `box`
    elements from (innermost dim last, as the memref's shape; elements past
    the buffer's bounds read as zeros), with shared-memory rows swizzled by
    `swizzle` bytes (0, 32, 64 or 128). The runtime encodes it through the
    device driver (`kiln_rt_tile_map`); the result is 128 bytes that the
    kernel takes by value (the target makes it a constant kernel parameter).

    ```mlir
    %m = kiln.tile_map %ctx, %a box [128, 64] swizzle 128 : memref<4096x4096xf16>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, AnyMemRef:$buffer,
                       DenseI64ArrayAttr:$box, I64Attr:$swizzle);
  let results = (outs Kiln_TileMap:$map);
  let assemblyFormat = [{
    $ctx `,` $buffer `box` $box `swizzle` $swizzle attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def Kiln_Im2colMapOp : Kiln_Op<"im2col_map", [Pure]> {
  let summary = "The im2col map of a channels-last activation, for convolutions";
  let description = [{
    On a device target with a bulk tensor copy engine, the descriptor of a
    channels-last activation `buffer` ([batch, spatial..., channels], rank 3
    to 5) that a convolution's copies read the rows of its implicit matrix
    from: one copy gives `pixels` consecutive output pixels (batch-major, as
    the output's rows) of `channels` channels each, the copy's coordinates
    naming the first pixel's window corner and its filter offsets the tap.
    Along each spatial dim the copies walk the window
    [`lower`, size - 1 + `upper`] (shifted by the filter offset) in steps of
    `strides` (the convolution's); `lower`, `upper` and `strides` list the
    spatial dims in the memref's order. Elements outside the buffer read as
    zeros (a convolution's padding). The runtime encodes it
    (`kiln_rt_im2col_map`); the result is 128 bytes passed by value, like
    `kiln.tile_map`'s.

    ```mlir
    // A 3x3 convolution of stride 1 over an input padded by 1 (58 x 58).
    %m = kiln.im2col_map %ctx, %x pixels 128 channels 64 lower [0, 0]
        upper [-2, -2] strides [1, 1] swizzle 128 : memref<8x58x58x64xf16>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, AnyMemRef:$buffer, I64Attr:$pixels,
                       I64Attr:$channels, DenseI64ArrayAttr:$lower,
                       DenseI64ArrayAttr:$upper, DenseI64ArrayAttr:$strides,
                       I64Attr:$swizzle);
  let results = (outs Kiln_TileMap:$map);
  let assemblyFormat = [{
    $ctx `,` $buffer `pixels` $pixels `channels` $channels `lower` $lower
    `upper` $upper `strides` $strides `swizzle` $swizzle attr-dict `:`
    type($buffer)
  }];
  let hasVerifier = 1;
}

def Kiln_ExternalWeightOp : Kiln_Op<"external_weight", [Pure]> {
  let summary = "The buffer of an external weight (--external-weights)";
  let description = [{
    The buffer of external weight `index` (the model's `weight` signature
    records, numbered 0..N-1): a tensor kept in the weights file the runtime
    memory-maps at model load, not in the model. On the CPU it points into
    that mapping (read-only); on a device target it is the instance's device
    copy, uploaded on first use. New weights of the same shapes and types
    drop in without recompiling.

    ```mlir
    %w = kiln.external_weight %ctx [0] : memref<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, I64Attr:$index);
  let results = (outs AnyStaticShapeMemRef:$buffer);
  let assemblyFormat = "$ctx `[` $index `]` attr-dict `:` type($buffer)";
}

def Kiln_WeightOp : Kiln_Op<"weight", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The device copy of a constant (weight)";
  let description = [{
    On a device target, the buffer of constant `global` (a `memref.global`)
    in device memory: the runtime uploads it on first use and keeps it for
    the instance's lifetime. `index` numbers the model's weights 0..N-1.

    ```mlir
    %w = kiln.weight %ctx @__kiln_constant_0 [3] : memref<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins Kiln_Context:$ctx, FlatSymbolRefAttr:$global,
                       I64Attr:$index);
  let results = (outs AnyStaticShapeMemRef:$buffer);
  let assemblyFormat = [{
    $ctx $global `[` $index `]` attr-dict `:` type($buffer)
  }];
}

#endif // KILN_DIALECT_KILN_IR_KILNOPS_TD
