//===- OutlineKernels.cpp - Build the host program, outline kernels -------===//

#include "kiln/Dialect/Kiln/Transforms/NodeNames.h"
#include "kiln/Dialect/Kiln/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNOUTLINEKERNELS
#include "kiln/Dialect/Kiln/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;

static MemRefType bufferType(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return MemRefType::get(rt.getShape(), rt.getElementType());
}

/// ModelABI.h dtype name of an element type.
static FailureOr<std::string> dtypeName(Type t) {
  if (t.isF16())
    return std::string("f16");
  if (t.isBF16())
    return std::string("bf16");
  if (t.isF32())
    return std::string("f32");
  if (t.isF64())
    return std::string("f64");
  if (t.isInteger(1))
    return std::string("bool");
  if (isa<Float8E4M3FNType>(t))
    return std::string("f8e4m3fn");
  if (isa<Float8E4M3FNUZType>(t))
    return std::string("f8e4m3fnuz");
  if (isa<Float8E5M2Type>(t))
    return std::string("f8e5m2");
  if (isa<Float8E5M2FNUZType>(t))
    return std::string("f8e5m2fnuz");
  if (auto it = dyn_cast<IntegerType>(t)) {
    unsigned w = it.getWidth();
    if (w == 8 || w == 16 || w == 32 || w == 64)
      return (it.isUnsigned() ? "u" : "i") + std::to_string(w);
  }
  return failure();
}

static std::string escapeName(StringRef name) {
  std::string out;
  for (unsigned char c : name) {
    if (llvm::isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '/' ||
        c == '-')
      out.push_back(c);
    else {
      char buf[4];
      snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out.empty() ? std::string("%") : out;
}

/// One signature record (see ModelABI.h).
static FailureOr<std::string> signatureRecord(StringRef kind, Type type,
                                              DictionaryAttr attrs,
                                              unsigned index, Location loc) {
  auto rt = dyn_cast<RankedTensorType>(type);
  if (!rt)
    return emitError(loc) << "model " << kind << " " << index
                          << " has no static rank",
           failure();
  FailureOr<std::string> dt = dtypeName(rt.getElementType());
  if (failed(dt))
    return emitError(loc) << "model " << kind << " " << index
                          << " has unsupported element type "
                          << rt.getElementType(),
           failure();
  std::string name = kind.str() + "_" + std::to_string(index);
  ArrayAttr dimNames;
  if (attrs) {
    if (auto n = attrs.getAs<StringAttr>("kiln.name"))
      name = n.str();
    dimNames = attrs.getAs<ArrayAttr>("kiln.dim_names");
  }
  std::string rec = kind.str() + " " + escapeName(name) + " " + *dt + " " +
                    std::to_string(rt.getRank());
  for (int64_t i = 0; i < rt.getRank(); ++i) {
    if (!rt.isDynamicDim(i)) {
      rec += " " + std::to_string(rt.getDimSize(i));
      continue;
    }
    std::string sym;
    if (dimNames && i < static_cast<int64_t>(dimNames.size()))
      if (auto s = dyn_cast<StringAttr>(dimNames[i]))
        sym = s.str();
    rec += " ?" + (sym.empty() ? std::string() : escapeName(sym));
  }
  return rec + "\n";
}

namespace {
struct OutlineKernelsPass
    : public kiln::impl::KilnOutlineKernelsBase<OutlineKernelsPass> {
  using Base::Base;

  ModuleOp module;
  func::FuncOp model, host;
  Value ctx;
  OpBuilder b{(MLIRContext *)nullptr};
  IRMapping map;
  unsigned numGlobals = 0;
  DenseMap<Value, int64_t> outputIndex;

  void runOnOperation() override {
    module = getOperation();
    model = module.lookupSymbol<func::FuncOp>(entryName);
    if (!model) {
      module.emitError("no model function '") << entryName << "'";
      return signalPassFailure();
    }
    if (!model.getBody().hasOneBlock()) {
      model.emitError("the model function must have one block");
      return signalPassFailure();
    }
    b = OpBuilder(module.getContext());
    b.setInsertionPoint(model);
    MLIRContext *mctx = module.getContext();
    auto ptrType = LLVM::LLVMPointerType::get(mctx);
    host = func::FuncOp::create(b, model.getLoc(), "kiln_model_main",
                                b.getFunctionType({ptrType}, {b.getI32Type()}));
    Block *entry = host.addEntryBlock();
    ctx = entry->getArgument(0);

    // Signature text (the arena line is added when lowering to LLVM).
    // Arguments with `kiln.weight_offset` are external weights
    // (--external-weights): `weight` records, not inputs.
    std::string io;
    auto isWeight = [&](unsigned i) {
      return model.getArgAttrOfType<IntegerAttr>(i, "kiln.weight_offset") !=
             nullptr;
    };
    unsigned numInputs = 0;
    for (auto [i, t] : llvm::enumerate(model.getArgumentTypes())) {
      if (isWeight(i))
        continue;
      FailureOr<std::string> rec = signatureRecord(
          "input", t, model.getArgAttrDict(i), numInputs++, model.getLoc());
      if (failed(rec))
        return signalPassFailure();
      io += *rec;
    }
    for (auto [i, t] : llvm::enumerate(model.getResultTypes())) {
      FailureOr<std::string> rec = signatureRecord(
          "output", t, model.getResultAttrDict(i), i, model.getLoc());
      if (failed(rec))
        return signalPassFailure();
      io += *rec;
    }
    FailureOr<std::string> weights = weightRecords(isWeight);
    if (failed(weights))
      return signalPassFailure();
    io += *weights;
    host->setAttr("kiln.signature_io", b.getStringAttr(io));

    auto ret = cast<func::ReturnOp>(model.getBody().front().getTerminator());
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      outputIndex.try_emplace(v, i);

    b.setInsertionPointToStart(entry);
    int64_t nextInput = 0, nextWeight = 0;
    for (auto [i, arg] : llvm::enumerate(model.getArguments())) {
      if (isWeight(i))
        map.map(arg, ExternalWeightOp::create(
                         b, arg.getLoc(), bufferType(arg.getType()), ctx,
                         b.getI64IntegerAttr(nextWeight++)));
      else
        map.map(arg, InputOp::create(b, arg.getLoc(), bufferType(arg.getType()),
                                     ctx, b.getI64IntegerAttr(nextInput++)));
    }
    unsigned kernelId = 0;
    for (Operation &op : model.getBody().front().without_terminator())
      if (failed(convertOp(&op, kernelId)))
        return signalPassFailure();
    Value zero = arith::ConstantIntOp::create(b, ret.getLoc(), 0, 32);
    func::ReturnOp::create(b, ret.getLoc(), zero);
    model.erase();
  }

  /// `weights-file` and `weight` records of the external weights, in
  /// argument order (their kiln.external_weight indices).
  FailureOr<std::string>
  weightRecords(llvm::function_ref<bool(unsigned)> isWeight) {
    std::string text;
    unsigned index = 0;
    for (auto [i, t] : llvm::enumerate(model.getArgumentTypes())) {
      if (!isWeight(i))
        continue;
      auto rt = dyn_cast<RankedTensorType>(t);
      if (!rt || !rt.hasStaticShape())
        return model.emitError("external weight ")
                   << index << " has no static shape: " << t,
               failure();
      FailureOr<std::string> rec = signatureRecord(
          "weight", t, model.getArgAttrDict(i), index++, model.getLoc());
      if (failed(rec))
        return failure();
      int64_t width = (rt.getElementTypeBitWidth() + 7) / 8;
      int64_t offset =
          model.getArgAttrOfType<IntegerAttr>(i, "kiln.weight_offset").getInt();
      rec->pop_back(); // '\n'
      text += *rec + " " + std::to_string(offset) + " " +
              std::to_string(width * rt.getNumElements()) + "\n";
    }
    if (index == 0)
      return text;
    auto ext = module->getAttrOfType<DictionaryAttr>("kiln.external_weights");
    auto file = ext ? ext.getAs<StringAttr>("file") : StringAttr();
    auto hash = ext ? ext.getAs<StringAttr>("layout_hash") : StringAttr();
    auto bytes = ext ? ext.getAs<IntegerAttr>("file_bytes") : IntegerAttr();
    if (!file || !hash || !bytes)
      return model.emitError("external weights without a module attribute "
                             "'kiln.external_weights' = {file, layout_hash, "
                             "file_bytes}"),
             failure();
    return "weights-file " + escapeName(file.getValue()) + " " +
           hash.getValue().str() + " " + std::to_string(bytes.getInt()) + "\n" +
           text;
  }

  Value lookupBuffer(Value v, Operation *user) {
    Value m = map.lookupOrNull(v);
    if (!m)
      user->emitError("host program: no buffer for operand of type ")
          << v.getType();
    return m;
  }

  /// Row-major view of `src` with the given sizes.
  Value view(Location loc, Value src, RankedTensorType type,
             ArrayRef<OpFoldResult> sizes) {
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> strides(rank);
    OpFoldResult stride = b.getIndexAttr(1);
    for (int64_t i = rank - 1; i >= 0; --i) {
      strides[i] = stride;
      std::optional<int64_t> s = getConstantIntValue(stride);
      std::optional<int64_t> d = getConstantIntValue(sizes[i]);
      if (s && d)
        stride = b.getIndexAttr(*s * *d);
      else
        stride = arith::MulIOp::create(
                     b, loc, getValueOrCreateConstantIndexOp(b, loc, stride),
                     getValueOrCreateConstantIndexOp(b, loc, sizes[i]))
                     .getResult();
    }
    auto mt = bufferType(type);
    return memref::ReinterpretCastOp::create(b, loc, mt, src, b.getIndexAttr(0),
                                             sizes, strides);
  }

  LogicalResult convertOp(Operation *op, unsigned &kernelId) {
    Location loc = op->getLoc();
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (!isa<RankedTensorType>(c.getType())) {
        b.clone(*op, map);
        return success();
      }
      if (op->use_empty())
        return success();
      auto mt = bufferType(c.getType());
      std::string name = "__kiln_constant_" + std::to_string(numGlobals++);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(host);
        memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), mt,
                                 c.getValue(), /*constant=*/true,
                                 b.getI64IntegerAttr(64));
      }
      map.map(c.getResult(),
              memref::GetGlobalOp::create(b, loc, mt, name).getResult());
      return success();
    }
    if (auto k = dyn_cast<KernelOp>(op))
      return convertKernel(k, kernelId++);
    if (auto r = dyn_cast<tensor::ReshapeOp>(op)) {
      SmallVector<OpFoldResult> sizes;
      Value shape = r.getShape();
      if (auto fe = shape.getDefiningOp<tensor::FromElementsOp>()) {
        for (Value e : fe.getElements()) {
          Value m = map.lookupOrDefault(e);
          if (!m.getType().isIndex())
            m = arith::IndexCastOp::create(b, loc, b.getIndexType(), m);
          sizes.push_back(m);
        }
      } else if (auto cst = shape.getDefiningOp<arith::ConstantOp>()) {
        for (APInt v :
             cast<DenseElementsAttr>(cst.getValue()).getValues<APInt>())
          sizes.push_back(b.getIndexAttr(v.getSExtValue()));
      } else {
        return op->emitError("host program: reshape with a computed shape");
      }
      auto type = cast<RankedTensorType>(r.getResult().getType());
      for (int64_t i = 0; i < type.getRank(); ++i)
        if (!type.isDynamicDim(i))
          sizes[i] = b.getIndexAttr(type.getDimSize(i));
      Value src = lookupBuffer(r.getSource(), op);
      if (!src)
        return failure();
      map.map(r.getResult(), view(loc, src, type, sizes));
      return success();
    }
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
      auto reify = cast<ReifyRankedShapedTypeOpInterface>(op);
      // Sizes computed from the source tensor: express them on the buffer.
      ReifiedRankedShapedTypeDims shapes;
      OpBuilder::InsertionGuard g(b);
      if (failed(reify.reifyResultShapes(b, shapes)))
        return op->emitError("host program: cannot size reshape");
      SmallVector<OpFoldResult> sizes;
      for (OpFoldResult s : shapes[0]) {
        if (auto v = dyn_cast<Value>(s)) {
          Operation *def = v.getDefiningOp();
          Operation *c = def ? b.clone(*def, map) : nullptr;
          sizes.push_back(c ? OpFoldResult(c->getResult(0)) : s);
        } else {
          sizes.push_back(s);
        }
      }
      Value src = lookupBuffer(op->getOperand(0), op);
      if (!src)
        return failure();
      map.map(op->getResult(0),
              view(loc, src, cast<RankedTensorType>(op->getResult(0).getType()),
                   sizes));
      return success();
    }
    if (auto c = dyn_cast<tensor::CastOp>(op)) {
      Value src = lookupBuffer(c.getSource(), op);
      if (!src)
        return failure();
      map.map(c.getResult(),
              memref::CastOp::create(b, loc, bufferType(c.getType()), src));
      return success();
    }
    if (auto c = dyn_cast<tensor::BitcastOp>(op)) {
      // Unsigned <-> signless of one width: the same buffer (both lower to
      // the same LLVM memref descriptor; reconcile-unrealized-casts folds it).
      Value src = lookupBuffer(c.getSource(), op);
      if (!src)
        return failure();
      auto srcType = cast<MemRefType>(src.getType());
      auto type =
          MemRefType::get(srcType.getShape(), c.getType().getElementType(),
                          srcType.getLayout(), srcType.getMemorySpace());
      map.map(
          c.getResult(),
          UnrealizedConversionCastOp::create(b, loc, type, src).getResult(0));
      return success();
    }
    if (auto d = dyn_cast<tensor::DimOp>(op)) {
      Value src = lookupBuffer(d.getSource(), op);
      if (!src)
        return failure();
      map.map(d.getResult(),
              memref::DimOp::create(b, loc, src,
                                    map.lookupOrDefault(d.getIndex())));
      return success();
    }
    if (auto e = dyn_cast<tensor::ExtractOp>(op)) {
      Value src = lookupBuffer(e.getTensor(), op);
      if (!src)
        return failure();
      SmallVector<Value> idx;
      for (Value i : e.getIndices())
        idx.push_back(map.lookupOrDefault(i));
      map.map(e.getResult(), memref::LoadOp::create(b, loc, src, idx));
      return success();
    }
    if (auto fe = dyn_cast<tensor::FromElementsOp>(op)) {
      bool onlyShape = llvm::all_of(op->getUsers(), [](Operation *u) {
        return isa<tensor::ReshapeOp>(u);
      });
      if (onlyShape)
        return success();
      auto type = fe.getType();
      if (!type.hasStaticShape())
        return op->emitError("host program: dynamic from_elements");
      Value buf = BufferOp::create(b, loc, bufferType(type), ctx, ValueRange{},
                                   IntegerAttr());
      int64_t n = 0;
      SmallVector<int64_t> strides = computeStrides(type.getShape());
      for (Value e : fe.getElements()) {
        SmallVector<Value> idx;
        int64_t rem = n++;
        for (int64_t s : strides) {
          idx.push_back(arith::ConstantIndexOp::create(b, loc, rem / s));
          rem %= s;
        }
        memref::StoreOp::create(b, loc, map.lookupOrDefault(e), buf, idx);
      }
      map.map(fe.getResult(), buf);
      return success();
    }
    if (isa<tensor::EmptyOp>(op)) {
      if (!op->use_empty())
        return op->emitError("host program: uninitialized tensor is used");
      return success();
    }
    if (auto check = dyn_cast<CheckOp>(op)) {
      auto clone = cast<CheckOp>(b.clone(*op, map));
      clone.getCtxMutable().assign(ctx);
      return success();
    }
    if (llvm::none_of(op->getResultTypes(),
                      [](Type t) { return isa<ShapedType>(t); }) &&
        op->getNumRegions() == 0) {
      b.clone(*op, map);
      return success();
    }
    return op->emitError("host program: unexpected op ") << op->getName();
  }

  static SmallVector<int64_t> computeStrides(ArrayRef<int64_t> shape) {
    SmallVector<int64_t> s(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
      s[i] = s[i + 1] * shape[i + 1];
    return s;
  }

  LogicalResult convertKernel(KernelOp kernel, unsigned id) {
    Location loc = kernel.getLoc();
    // Buffers of the results.
    SmallVector<Value> outs;
    for (auto [i, r] : llvm::enumerate(kernel.getResults())) {
      SmallVector<Value> dims;
      for (Value d : kernel.getResultDims(i))
        dims.push_back(map.lookupOrDefault(d));
      MemRefType mt = bufferType(r.getType());
      Value buf;
      auto it = outputIndex.find(r);
      if (it != outputIndex.end()) {
        buf = OutputOp::create(b, loc, mt, ctx, b.getI64IntegerAttr(it->second),
                               dims);
      } else {
        buf = BufferOp::create(b, loc, mt, ctx, dims, IntegerAttr());
      }
      outs.push_back(buf);
      map.map(r, buf);
    }
    // Kernel function on memrefs, destination-passing style.
    SmallVector<Value> args;
    SmallVector<Type> argTypes;
    for (Value in : kernel.getInputs()) {
      Value m = map.lookupOrDefault(in);
      if (isa<TensorType>(in.getType()) && m == in)
        return kernel.emitError("host program: no buffer for kernel input");
      args.push_back(m);
      argTypes.push_back(m.getType());
    }
    for (Value o : outs) {
      args.push_back(o);
      argTypes.push_back(o.getType());
    }
    std::string name = entryName + "_" +
                       (kernel.getName() ? kernel.getName()->str()
                                         : "kernel_" + std::to_string(id));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(host);
      createKernelFunc(kernel, name, argTypes, outs.size());
    }
    auto launch = LaunchOp::create(
        b, loc, ctx, FlatSymbolRefAttr::get(b.getContext(), name), args);
    // The ONNX nodes this launch computes, escaped for the signature's
    // `launch` record (HostToLLVM): they stay with the launch when
    // kiln-dedup-kernels makes it run another kernel's code.
    NodeNameSet nodes;
    collectNodeNames(kernel, nodes);
    std::string list;
    for (const std::string &node : nodes)
      list += (list.empty() ? "" : ",") + escapeName(node);
    launch->setAttr(kLaunchNodesAttr, b.getStringAttr(list));
    return success();
  }

  void createKernelFunc(KernelOp kernel, StringRef name,
                        ArrayRef<Type> argTypes, unsigned numOuts) {
    Location loc = kernel.getLoc();
    auto fn =
        func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
    fn.setPrivate();
    fn->setAttr("kiln.kernel", b.getUnitAttr());
    fn->setAttr("kiln.num_outputs", b.getI64IntegerAttr(numOuts));
    fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    Block *entry = fn.addEntryBlock();
    OpBuilder kb = OpBuilder::atBlockBegin(entry);
    IRMapping kmap;
    Block &body = kernel.getBodyBlock();
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      Value fnArg = entry->getArgument(i);
      if (auto tt = dyn_cast<RankedTensorType>(arg.getType())) {
        auto t = bufferization::ToTensorOp::create(kb, loc, tt, fnArg);
        t.setRestrict(true);
        kmap.map(arg, t.getResult());
      } else {
        kmap.map(arg, fnArg);
      }
    }
    for (Operation &op : body.without_terminator())
      kb.clone(op, kmap);
    // A run-time check that a kernel took in (inside an ONNX Loop's or If's
    // body) cannot stop the run from the kernel: its kernel clamps what it
    // reads, and the check is not enforced (docs/reliability.md).
    fn.walk([](CheckOp check) { check.erase(); });
    auto yield = cast<YieldOp>(body.getTerminator());
    unsigned numIn = body.getNumArguments();
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      auto m = bufferization::MaterializeInDestinationOp::create(
          kb, loc, TypeRange{}, kmap.lookupOrDefault(v),
          entry->getArgument(numIn + i));
      m.setRestrict(true);
      m.setWritable(true);
    }
    func::ReturnOp::create(kb, loc);
  }
};
} // namespace
