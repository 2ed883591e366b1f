//===- DedupKernels.cpp - One function per distinct kernel ----------------===//
//
// Repeated layers give identical kernels that differ only in the buffers
// passed to them; each distinct one is generated and compiled once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNDEDUPKERNELS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// The attributes of `fn` other than its name (and the aliases this pass
/// adds).
DictionaryAttr otherAttrs(func::FuncOp fn) {
  NamedAttrList attrs(fn->getAttrDictionary());
  attrs.erase(SymbolTable::getSymbolAttrName());
  attrs.erase("kiln.kernel_aliases");
  return attrs.getDictionary(fn.getContext());
}

/// Whether `a` and `b` compute the same thing on the same arguments.
bool isSameKernel(func::FuncOp a, func::FuncOp b) {
  return a.getFunctionType() == b.getFunctionType() &&
         otherAttrs(a) == otherAttrs(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

/// A cheap key that identical kernels share: type and op count.
std::pair<Type, int64_t> bucketKey(func::FuncOp fn) {
  int64_t ops = 0;
  fn.getBody().walk([&](Operation *) { ++ops; });
  return {fn.getFunctionType(), ops};
}

struct DedupKernelsPass
    : public kiln::impl::KilnDedupKernelsBase<DedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Kept kernels by key, in module order.
    llvm::DenseMap<std::pair<Type, int64_t>, SmallVector<func::FuncOp>> kept;
    llvm::StringMap<func::FuncOp> replacement;
    SmallVector<func::FuncOp> erased;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn->hasAttr("kiln.kernel") || fn.isExternal())
        continue;
      SmallVector<func::FuncOp> &bucket = kept[bucketKey(fn)];
      auto same = llvm::find_if(
          bucket, [&](func::FuncOp k) { return isSameKernel(k, fn); });
      if (same == bucket.end()) {
        bucket.push_back(fn);
        continue;
      }
      replacement[fn.getSymName()] = *same;
      erased.push_back(fn);
    }
    if (erased.empty())
      return;
    // Launches call the kept kernel; a kernel something else still names
    // (nothing Kiln builds) stays.
    module.walk([&](LaunchOp launch) {
      auto it = replacement.find(launch.getKernel());
      if (it != replacement.end())
        launch.setKernelAttr(
            FlatSymbolRefAttr::get(it->second.getSymNameAttr()));
    });
    llvm::StringSet<> named;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        named.insert(use.getSymbolRef().getRootReference());
    llvm::DenseMap<Operation *, SmallVector<Attribute>> aliases;
    for (func::FuncOp fn : erased) {
      if (named.contains(fn.getSymName()))
        continue;
      func::FuncOp keep = replacement[fn.getSymName()];
      aliases[keep].push_back(fn.getSymNameAttr());
      fn.erase();
    }
    for (auto &[keep, names] : aliases)
      keep->setAttr("kiln.kernel_aliases",
                    ArrayAttr::get(&getContext(), names));
  }
};
} // namespace
