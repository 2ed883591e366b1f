//===- Target.h - Kiln's code generation targets ----------------*- C++ -*-===//
//
// One interface per target (lib/Target/<T>): it adds the `codegen` stage
// (kernels on memrefs → loops or device code), says whether kernels run on a
// device, and names the runtime device kind written into the model's
// signature. Every target is one row of one table (lib/Target/Registry.cpp:
// kind, chips, factory, dialects, passes, GPU target-info); parseTarget, the
// dialect registration, the `kiln-<kind>-codegen-pipeline`s and the
// messages listing what is supported all come from it. Generic code never
// includes a vendor dialect; a new chip is a row of its target's chip table.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TARGET_TARGET_H
#define KILN_TARGET_TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace mlir::kiln {

class GPUTargetInfo;

/// Where convolutions and pools keep the channels of their activations
/// (kiln-onnx-convert-layout, docs/layout.md): ONNX's NC<spatial>, or
/// N<spatial>C with <kernel>CF weights.
enum class ConvLayout { NCHW, NHWC };

class Target {
public:
  virtual ~Target() = default;
  /// The spelling `--target=` takes, canonicalized ("cpu", "<kind>:<chip>").
  virtual std::string getSpec() const = 0;
  /// True when kernels run on a device with its own memory (buffers the
  /// host program hands to kernels are device memory).
  virtual bool isDevice() const = 0;
  /// Adds the passes of the `codegen` stage.
  virtual void buildCodegenPipeline(OpPassManager &pm) const = 0;
  /// Checks what codegen needs outside the compiler (a device toolkit);
  /// on failure says what is missing in `error`.
  virtual bool checkToolchain(std::string &error) const { return true; }
  /// The layout its kernels want convolutions and pools in (kilnc
  /// --layout=target, the default); the model's inputs and outputs keep
  /// ONNX's either way.
  virtual ConvLayout getConvLayout() const { return ConvLayout::NCHW; }
  /// Whether 8-bit products want their constant weights K-major, laid out
  /// so at compile time: with the NHWC layout, convolutions (ConvInteger,
  /// one group) F<kernel>C instead of <kernel>CF; MatMulInteger's constant
  /// B [N, K] instead of [K, N].
  virtual bool wantsKMajorInt8Weights() const { return false; }
  /// Whether its codegen has a fused kernel for `kiln.attention` (the
  /// attention lowering then emits that op where its conditions hold,
  /// instead of the generics that materialize the scores).
  virtual bool hasFusedAttention() const { return false; }
  /// After codegen: what the device code says of each device kernel (one
  /// object per kernel: "name" and the target's own fields, e.g. registers,
  /// shared memory, occupancy), for `kilnc --report`. Empty when the target
  /// has nothing to say; on an unreadable image, `error` says why.
  virtual llvm::json::Array describeDeviceKernels(ModuleOp module,
                                                  std::string &error) const {
    return {};
  }
};

/// Whether a contraction kernel that has a persistent variant (as many
/// blocks as the GPU runs at once, each looping over output tiles so that
/// one tile's loads overlap the previous one's epilogue) uses it
/// (--gpu-persistent): never, always, or where the target's rule says it
/// pays.
enum class PersistentKernels { Off, On, Auto };

/// "off", "on", "auto" as PersistentKernels; std::nullopt for anything else.
inline std::optional<PersistentKernels> parsePersistentKernels(StringRef s) {
  if (s == "off")
    return PersistentKernels::Off;
  if (s == "on")
    return PersistentKernels::On;
  if (s == "auto")
    return PersistentKernels::Auto;
  return std::nullopt;
}

inline StringRef stringifyPersistentKernels(PersistentKernels p) {
  switch (p) {
  case PersistentKernels::Off:
    return "off";
  case PersistentKernels::On:
    return "on";
  case PersistentKernels::Auto:
    return "auto";
  }
  return "off";
}

/// An output tile (rows x columns of a block's output) of a target's own
/// contraction kernels, and how many of its blocks share a multiprocessor
/// (2: each takes at most half the shared memory, so one block's stores
/// overlap the other's products), or whether two consumers of one block
/// take turns on whole tiles (ping-pong: one's products overlap the
/// other's epilogue), or whether two blocks form a cluster that loads the
/// larger of their operand tiles once for both (multicast).
struct ContractionTile {
  int64_t rows = 0, columns = 0, blocksPerSM = 1;
  bool pingPong = false;
  bool multicast = false;
  bool operator==(const ContractionTile &o) const {
    return rows == o.rows && columns == o.columns &&
           blocksPerSM == o.blocksPerSM && pingPong == o.pingPong &&
           multicast == o.multicast;
  }
};

/// The tiles that a target's own contraction kernels may choose from
/// (--gpu-tiles "BMxBN[/BLOCKS|/pingpong|/multicast][,...]"); empty: every tile of the
/// target's, by its cost model.
using ContractionTiles = SmallVector<ContractionTile>;

/// Parses a --gpu-tiles list ("" is the empty list); false with `error`
/// set when an entry is not two positive integers joined by 'x', with an
/// optional "/N" of 1 or 2 blocks per multiprocessor, "/pingpong" or
/// "/multicast".
inline bool parseContractionTiles(StringRef s, ContractionTiles &tiles,
                                  std::string &error) {
  tiles.clear();
  if (s.empty())
    return true;
  SmallVector<StringRef> entries;
  s.split(entries, ',');
  for (StringRef e : entries) {
    bool slash = e.contains('/');
    auto [shape, perSM] = e.trim().split('/');
    auto [m, n] = shape.split('x');
    int64_t bm = 0, bn = 0, blocks = 1;
    bool pingPong = slash && perSM == "pingpong";
    bool multicast = slash && perSM == "multicast";
    if (m.getAsInteger(10, bm) || n.getAsInteger(10, bn) || bm <= 0 ||
        bn <= 0 ||
        (slash && !pingPong && !multicast && perSM.getAsInteger(10, blocks)) ||
        blocks < 1 || blocks > 2) {
      error = ("gpu-tiles: '" + e.trim() +
               "' is not a tile (rows x columns, optionally / blocks per "
               "multiprocessor, 1 or 2, /pingpong or /multicast; e.g. "
               "192x128, 128x128/2, 128x128/pingpong or 192x128/multicast)")
                  .str();
      return false;
    }
    tiles.push_back({bm, bn, blocks, pingPong, multicast});
  }
  return true;
}

inline std::string stringifyContractionTile(const ContractionTile &t) {
  std::string s = std::to_string(t.rows) + "x" + std::to_string(t.columns);
  if (t.pingPong)
    s += "/pingpong";
  else if (t.multicast)
    s += "/multicast";
  else if (t.blocksPerSM != 1)
    s += "/" + std::to_string(t.blocksPerSM);
  return s;
}

inline std::string stringifyContractionTiles(const ContractionTiles &tiles) {
  std::string s;
  for (const ContractionTile &t : tiles)
    s += (s.empty() ? "" : ",") + stringifyContractionTile(t);
  return s;
}

/// The fused attention kernel's block (--gpu-attention-block
/// "WARPSxKEYS[/BLOCKS]"): its warps (each the matrix instruction's M query
/// rows), the keys of a step, and optionally the blocks a multiprocessor
/// must take (a register bound for the vendor compiler). Warps 0: the
/// kernel's own choice (lib/Target/GPU/FlashAttention.cpp).
struct AttentionBlock {
  int64_t warps = 0, keys = 0, blocksPerSM = 0;
  bool isDefault() const { return warps == 0; }
  bool operator==(const AttentionBlock &o) const {
    return warps == o.warps && keys == o.keys && blocksPerSM == o.blocksPerSM;
  }
};

/// Parses a --gpu-attention-block value ("" is the kernel's own choice);
/// false with `error` set unless it is a power-of-two warp count of at
/// most 16, 'x', a multiple of 16 keys of at most 256, and optionally "/"
/// and 1 to 32 blocks a multiprocessor.
inline bool parseAttentionBlock(StringRef s, AttentionBlock &block,
                                std::string &error) {
  block = {};
  s = s.trim();
  if (s.empty())
    return true;
  bool slash = s.contains('/');
  auto [shape, perSM] = s.split('/');
  auto [w, k] = shape.split('x');
  int64_t warps = 0, keys = 0, blocks = 0;
  if (w.getAsInteger(10, warps) || k.getAsInteger(10, keys) || warps < 1 ||
      warps > 16 || (warps & (warps - 1)) != 0 || keys < 16 || keys > 256 ||
      keys % 16 != 0 ||
      (slash &&
       (perSM.getAsInteger(10, blocks) || blocks < 1 || blocks > 32))) {
    error = ("gpu-attention-block: '" + s +
             "' is not a block of the fused attention (warps, a power of two "
             "up to 16, x keys a step, a multiple of 16 up to 256, "
             "optionally / blocks a multiprocessor, 1 to 32; e.g. 4x64 or "
             "8x32/3)")
                .str();
    return false;
  }
  block = {warps, keys, blocks};
  return true;
}

inline std::string stringifyAttentionBlock(const AttentionBlock &b) {
  if (b.isDefault())
    return "";
  std::string s = std::to_string(b.warps) + "x" + std::to_string(b.keys);
  if (b.blocksPerSM)
    s += "/" + std::to_string(b.blocksPerSM);
  return s;
}

/// What a target's own contraction kernels may choose
/// (GPUTargetInfo::lowerContraction).
struct ContractionChoices {
  PersistentKernels persistent = PersistentKernels::Auto;
  ContractionTiles tiles;
  /// Whether a problem of few tiles may split K over more blocks (a second
  /// launch adds the parts) where the target's rule says it pays.
  bool splitK = true;
};

/// The GPU codegen's choices: kiln-map-kernels-to-gpu's options, one field
/// each. The only carrier from kilnc's --gpu-* flags (through
/// CompileOptions::gpu and parseTarget) to the pass.
struct GPUCodegenOptions {
  /// Contractions as shared-memory tiled products (--gpu-tiled-contractions).
  bool tiledContractions = true;
  /// Row reductions one warp per output (--gpu-warp-reductions).
  bool warpReductions = true;
  /// Normalizations and softmax as one launch per chain (--gpu-row-fusion).
  bool rowFusion = true;
  /// Half contractions on the matrix instruction (--gpu-tensor-cores).
  bool tensorCores = true;
  /// Threads per block of a parallel loop nest (--gpu-block-size).
  int64_t blockSize = 256;
  /// Blocks that fill the GPU; fewer tiles split K (--gpu-fill-blocks; 0:
  /// the target-info's GPUTargetInfo::getFillBlocks).
  int64_t fillBlocks = 0;
  /// Reduction outputs unrolled per thread only while this many threads
  /// remain (--gpu-min-threads).
  int64_t minThreads = 32768;
  /// Tiled contractions on the matrix instruction stage their operands
  /// through a ring of shared buffers filled by asynchronous copies and read
  /// with the target's matrix fragment loads, where the target has both and
  /// the operands qualify (--gpu-async-copy; off until measured).
  bool asyncCopy = false;
  /// Persistent contraction kernels (--gpu-persistent; auto: where
  /// measured to pay, WarpgroupPersistent.cpp).
  PersistentKernels persistent = PersistentKernels::Auto;
  /// The tiles the target's own contraction kernels may choose from
  /// (--gpu-tiles; empty: all of them, by the target's cost model).
  ContractionTiles tiles;
  /// The target's own contraction kernels split K for few tiles
  /// (--gpu-split-k; auto: by the target's rule, off: never).
  bool splitK = true;
  /// Kernels wait for the previous kernel themselves and are launched
  /// while it runs, where the chip can (--gpu-dependent-launch; the
  /// target's codegen decides where, docs/gpu.md; off until a model
  /// measures a gain).
  bool dependentLaunch = false;
  /// The fused attention kernel's block (--gpu-attention-block; default:
  /// the kernel's own choice).
  AttentionBlock attentionBlock;
};

/// One row of the target table.
struct TargetEntry {
  /// The `--target=` kind ("cpu").
  StringRef kind;
  /// How messages name its chips ("unknown <chipFamily> chip ...").
  StringRef chipFamily;
  /// Its chips (empty: the kind takes no chip) and the one `<kind>` alone
  /// means.
  ArrayRef<StringRef> (*chips)();
  StringRef defaultChip;
  /// The target for a chip of `chips()` (ignored when there are none).
  std::unique_ptr<Target> (*create)(StringRef chip,
                                    const GPUCodegenOptions &gpu);
  /// Dialects, translations and attribute interfaces its codegen needs.
  void (*registerDialects)(DialectRegistry &registry);
  /// Its own passes (for kiln-opt); may be null.
  void (*registerPasses)();
  /// The target-info of a chip, for GPU kinds (null for others).
  std::shared_ptr<const GPUTargetInfo> (*createGPUTargetInfo)(StringRef chip);
  /// Registers the LLVM backends its codegen uses in LLVM's target
  /// registry (null: the host's alone); only initializeLLVMTargets calls it.
  void (*initializeLLVM)();
  /// The chips a shared library for `<kind>` alone embeds, one whole
  /// compile (and device image) per chip, in the order the runtime tries
  /// them at load; empty: one image, for defaultChip.
  ArrayRef<StringRef> defaultImages = {};
};

/// Every target, in the order messages list them.
ArrayRef<TargetEntry> getTargetTable();

/// Parses `--target=` (`cpu`, `<kind>`, `<kind>:<chip>`, ...). On failure
/// returns null and writes a message listing what is supported into `error`.
std::unique_ptr<Target> parseTarget(StringRef spec, std::string &error,
                                    const GPUCodegenOptions &gpu = {});

/// The targets a shared library for `spec` is compiled for, one image
/// each: `<kind>:<chip>` for each of the kind's defaultImages when `spec`
/// is a kind alone that has them, else `spec` itself.
SmallVector<std::string> getTargetImages(StringRef spec);

/// Registers every LLVM backend Kiln uses (the host's and each row's
/// initializeLLVM), once per process. LLVM's target registry is a list
/// without a lock: two threads registering at once can link it into a
/// cycle that lookupTarget never leaves, so every registration Kiln does
/// goes through here, and it comes before MLIR's own lazy ones (a second
/// registration of a backend is a no-op).
void initializeLLVMTargets();

/// Registers the dialects, translations and target attributes every
/// target's codegen needs (and initializeLLVMTargets).
void registerTargetDialects(DialectRegistry &registry);

/// Registers the targets' passes, the GPU target-infos (for
/// kiln-map-kernels-to-gpu's `device` option) and one
/// `kiln-<kind>-codegen-pipeline` per target (at its default chip).
void registerKilnTargetPasses();

} // namespace mlir::kiln

#endif // KILN_TARGET_TARGET_H
