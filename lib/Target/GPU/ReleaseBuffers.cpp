//===- ReleaseBuffers.cpp - A kernel's scratch handed back early ----------===//
//
// releaseKernelBuffers (Lowering.h): kiln-map-kernels-to-gpu releases each
// run-scoped buffer a kernel allocates where its block ends, so the kernels
// after it reuse the memory within the run (kiln.release, kiln_rt_release).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Whether memory of `buffer` may outlive the block that defines it: a view
/// of it reaches a terminator (yielded or returned) or a call's result may
/// alias it.
bool escapesBlock(Value buffer) {
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == v)
          llvm::append_range(worklist, user->getResults());
        continue;
      }
      if (isa<CallOpInterface>(user) &&
          llvm::any_of(user->getResultTypes(), llvm::IsaPred<MemRefType>))
        return true;
    }
  }
  return false;
}

} // namespace

void mlir::kiln::gpumap::releaseKernelBuffers(func::FuncOp fn, Value ctx) {
  SmallVector<BufferOp> buffers;
  fn.walk([&](BufferOp op) {
    if (!op.getOffset())
      buffers.push_back(op);
  });
  int64_t bytes = 0;
  bool dynamic = false;
  for (BufferOp buffer : buffers) {
    MemRefType t = buffer.getBuffer().getType();
    if (!t.hasStaticShape()) {
      dynamic = true;
      continue;
    }
    // Index elements are 64-bit on the targets' device code.
    Type elem = t.getElementType();
    int64_t bits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 64;
    bytes += t.getNumElements() * ((bits + 7) / 8);
  }
  Builder attrs(fn.getContext());
  if (bytes > 0)
    fn->setAttr("kiln.scratch_bytes", attrs.getI64IntegerAttr(bytes));
  if (dynamic)
    fn->setAttr("kiln.scratch_dynamic", attrs.getUnitAttr());
  for (BufferOp buffer : buffers) {
    Block *block = buffer->getBlock();
    Operation *end = block->getTerminator();
    if (!end || escapesBlock(buffer.getBuffer()))
      continue;
    OpBuilder b(end);
    ReleaseOp::create(b, buffer.getLoc(), ctx, buffer.getBuffer());
  }
}
