//===- HoistWeightKernels.cpp - Weight-only kernels at load time ----------===//
//
// Launches that compute only from weights run once per instance in
// `kiln_model_init`; their outputs persist (after the planned arena).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNHOISTWEIGHTKERNELS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
constexpr int64_t kAlign = 64;

struct HoistWeightKernelsPass
    : public kiln::impl::KilnHoistWeightKernelsBase<HoistWeightKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp host;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("kiln.signature_io"))
        host = fn;
    if (!host || !host.getBody().hasOneBlock() ||
        module.lookupSymbol("kiln_model_init"))
      return;
    Block &block = host.getBody().front();
    Value ctx = host.getArgument(0);

    // Values every run computes the same: weights, constants, views of them
    // and the outputs of hoisted launches.
    llvm::DenseSet<Value> invariant;
    auto isInvariant = [&](Value v) { return invariant.contains(v); };
    // Only what is computed from external weights: kernels on embedded
    // constants alone are the graph optimizer's to fold.
    llvm::DenseSet<Value> external;
    auto isExternal = [&](Value v) { return external.contains(v); };
    SmallVector<LaunchOp> hoisted;
    llvm::DenseSet<Operation *> hoistedBuffers;
    for (Operation &op : block) {
      if (isa<ExternalWeightOp, memref::GetGlobalOp, arith::ConstantOp>(op) ||
          (isa<ViewLikeOpInterface>(op) && op.getNumResults() == 1 &&
           llvm::all_of(op.getOperands(), isInvariant) &&
           isMemoryEffectFree(&op))) {
        for (Value r : op.getResults()) {
          invariant.insert(r);
          if (isa<ExternalWeightOp>(op) ||
              llvm::any_of(op.getOperands(), isExternal))
            external.insert(r);
        }
        continue;
      }
      auto launch = dyn_cast<LaunchOp>(op);
      if (!launch)
        continue;
      auto fn = module.lookupSymbol<func::FuncOp>(launch.getKernel());
      auto outs = fn ? fn->getAttrOfType<IntegerAttr>("kiln.num_outputs")
                     : IntegerAttr();
      if (!outs)
        continue;
      unsigned numOuts = outs.getInt();
      ValueRange args = launch.getArgs();
      if (numOuts == 0 || numOuts > args.size())
        continue;
      bool ok = llvm::all_of(args.drop_back(numOuts), isInvariant) &&
                llvm::any_of(args.drop_back(numOuts), isExternal);
      for (Value o : args.take_back(numOuts)) {
        // A fresh static buffer that nothing but this launch writes: its
        // other users read it (launch inputs) or view it.
        auto buffer = o.getDefiningOp<BufferOp>();
        ok &= buffer && buffer.getDynamicSizes().empty();
        for (Operation *u : o.getUsers()) {
          if (u == launch.getOperation())
            continue;
          if (auto other = dyn_cast<LaunchOp>(u)) {
            auto ofn = module.lookupSymbol<func::FuncOp>(other.getKernel());
            auto on = ofn ? ofn->getAttrOfType<IntegerAttr>("kiln.num_outputs")
                          : IntegerAttr();
            ok &= on && !llvm::is_contained(
                            other.getArgs().take_back(on.getInt()), o);
            continue;
          }
          ok &= isMemoryEffectFree(u);
        }
      }
      if (!ok)
        continue;
      hoisted.push_back(launch);
      for (Value o : args.take_back(numOuts)) {
        invariant.insert(o);
        external.insert(o);
        hoistedBuffers.insert(o.getDefiningOp());
      }
    }
    if (hoisted.empty())
      return;

    // kiln_model_init(ctx) -> i32: the hoisted launches with what they read.
    OpBuilder b(module.getContext());
    b.setInsertionPoint(host);
    auto init = func::FuncOp::create(
        b, host.getLoc(), "kiln_model_init",
        b.getFunctionType({ctx.getType()}, {b.getI32Type()}));
    Block *entry = init.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    map.map(ctx, init.getArgument(0));
    int64_t offset = 0;
    auto i64 = b.getI64Type();
    // Persistent offsets, in order of the buffers in the host program.
    llvm::DenseMap<Operation *, int64_t> persistentOffset;
    for (Operation &op : block)
      if (hoistedBuffers.contains(&op)) {
        persistentOffset[&op] = offset;
        auto type = cast<MemRefType>(op.getResult(0).getType());
        int64_t bits = type.getElementTypeBitWidth();
        int64_t bytes = type.getNumElements() * ((bits + 7) / 8);
        offset += (bytes + kAlign - 1) / kAlign * kAlign;
      }
    auto markPersistent = [&](Operation *op, Operation *original) {
      op->setAttr("kiln.persistent",
                  IntegerAttr::get(i64, persistentOffset.lookup(original)));
    };
    // Clone, in order, every invariant op a hoisted launch needs and the
    // launches themselves.
    llvm::SmallPtrSet<Operation *, 16> needed;
    std::function<void(Value)> need = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || !needed.insert(def).second)
        return;
      for (Value o : def->getOperands())
        need(o);
    };
    for (LaunchOp l : hoisted)
      for (Value a : l.getArgs())
        need(a);
    llvm::DenseSet<Operation *> hoistedSet;
    for (LaunchOp l : hoisted)
      hoistedSet.insert(l);
    for (Operation &op : block) {
      if (!needed.contains(&op) && !hoistedSet.contains(&op))
        continue;
      Operation *clone = b.clone(op, map);
      if (hoistedBuffers.contains(&op))
        markPersistent(clone, &op);
    }
    func::ReturnOp::create(
        b, host.getLoc(),
        ValueRange{arith::ConstantIntOp::create(b, host.getLoc(), 0, 32)});
    // The host program reads the persistent buffers instead.
    for (Operation *op : hoistedBuffers)
      markPersistent(op, op);
    for (LaunchOp l : hoisted)
      l.erase();
    module->setAttr("kiln.persistent_size", IntegerAttr::get(i64, offset));
  }
};
} // namespace
