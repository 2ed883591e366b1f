//===- PlanMemory.cpp - Arena offsets for intermediate buffers ------------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct PlanMemoryPass : public kiln::impl::KilnPlanMemoryBase<PlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || (alignment & (alignment - 1))) {
      module.emitError("kiln-plan-memory: alignment must be a power of two");
      return signalPassFailure();
    }
    int64_t size = 0;
    WalkResult r = module.walk([&](BufferOp buf) {
      MemRefType t = buf.getBuffer().getType();
      if (!t.hasStaticShape() || buf.getOffset())
        return WalkResult::advance();
      int64_t bits = t.getElementTypeBitWidth();
      int64_t bytes = t.getNumElements() * ((bits + 7) / 8);
      if (bytes < 0 || bytes > (int64_t(1) << 48)) {
        buf.emitError("buffer of ") << t << " is too large for the arena";
        return WalkResult::interrupt();
      }
      size = (size + alignment - 1) / alignment * alignment;
      buf.setOffsetAttr(IntegerAttr::get(IntegerType::get(&getContext(), 64), size));
      size += bytes;
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    size = (size + alignment - 1) / alignment * alignment;
    module->setAttr("kiln.arena_size",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), size));
  }
};
} // namespace
