//===- ExposeIntermediates.cpp - Intermediate values as model outputs -----===//
//
// Appends the float results of the top-level onnx ops to the function's
// results (named by their node keys, NodeKeys.h), so the compiled model
// returns them too. kilnc --calibrate records their ranges from this build;
// kiln-accuracy compares them between an fp32 and a reduced-precision build.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "NodeKeys.h"

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

#include "llvm/ADT/StringSet.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNEXPOSEINTERMEDIATES
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

namespace {
struct ExposeIntermediatesPass
    : public kiln::impl::KilnExposeIntermediatesBase<ExposeIntermediatesPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::StringSet<> wanted;
    for (const std::string &n : nodes)
      wanted.insert(n);
    llvm::StringSet<> found;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      auto ret =
          dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
      if (!ret)
        continue;
      NodeKeys keys = computeNodeKeys(func);
      llvm::SmallPtrSet<Value, 16> returned;
      for (Value v : ret.getOperands())
        returned.insert(v);
      SmallVector<Value> extra;
      SmallVector<std::string> names;
      for (Operation &op : func.getBody().front()) {
        auto it = keys.nodes.find(&op);
        if (it == keys.nodes.end())
          continue;
        for (OpResult r : op.getResults()) {
          auto t = dyn_cast<RankedTensorType>(r.getType());
          if (!t || !isa<FloatType>(t.getElementType()) || returned.count(r))
            continue;
          const std::string &key = keys.values[r];
          if (!wanted.empty() && !wanted.contains(key) &&
              !wanted.contains(it->second))
            continue;
          found.insert(key);
          found.insert(it->second);
          extra.push_back(r);
          names.push_back(key);
        }
      }
      if (extra.empty())
        continue;
      unsigned first = func.getNumResults();
      SmallVector<Value> operands(ret.getOperands());
      llvm::append_range(operands, extra);
      ret->setOperands(operands);
      SmallVector<Type> types(func.getResultTypes());
      for (Value v : extra)
        types.push_back(v.getType());
      // Result attributes must be set after the type grows.
      SmallVector<DictionaryAttr> attrs;
      for (unsigned i = 0; i < first; ++i)
        attrs.push_back(func.getResultAttrDict(i));
      func.setFunctionType(
          FunctionType::get(&getContext(), func.getArgumentTypes(), types));
      Builder b(&getContext());
      for (auto [v, name] : llvm::zip(extra, names)) {
        auto rank = cast<RankedTensorType>(v.getType()).getRank();
        SmallVector<Attribute> dimNames(rank, b.getStringAttr(""));
        attrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("kiln.name", b.getStringAttr(name)),
             b.getNamedAttr("kiln.dim_names", b.getArrayAttr(dimNames)),
             b.getNamedAttr("kiln.exposed", b.getUnitAttr())}));
      }
      func.setAllResultAttrs(attrs);
    }
    for (const std::string &n : nodes)
      if (!found.contains(n))
        mlir::emitWarning(getOperation().getLoc())
            << "--expose-intermediates: no float value of node '" << n << "'";
  }
};
} // namespace
