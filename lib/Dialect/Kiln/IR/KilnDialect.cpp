//===- KilnDialect.cpp - The kiln dialect ---------------------------------===//

#include "kiln/Dialect/Kiln/IR/KilnDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::kiln;

#include "kiln/Dialect/Kiln/IR/KilnOpsDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Kiln/IR/KilnOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

// Format:
//   kiln.kernel ins(%a, %b : t1, t2) dims(%d : index) -> (r1, r2) {attrs} {
//   ^bb0(...): ... }
void KernelOp::print(OpAsmPrinter &p) {
  if (getNameAttr())
    p << " " << getNameAttr();
  p << " ins(";
  p << getInputs();
  if (!getInputs().empty())
    p << " : " << getInputs().getTypes();
  p << ")";
  if (!getDims().empty())
    p << " dims(" << getDims() << ")";
  p << " -> (" << getResultTypes() << ")";
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(), {"operandSegmentSizes", getNameAttrName()});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/true,
                /*printBlockTerminators=*/true);
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  std::string nameStr;
  if (succeeded(parser.parseOptionalString(&nameStr)))
    result.addAttribute("name", parser.getBuilder().getStringAttr(nameStr));
  SmallVector<OpAsmParser::UnresolvedOperand> inputs, dims;
  SmallVector<Type> inputTypes, resultTypes;
  if (parser.parseKeyword("ins") || parser.parseLParen() ||
      parser.parseOperandList(inputs))
    return failure();
  if (!inputs.empty() &&
      (parser.parseColon() || parser.parseTypeList(inputTypes)))
    return failure();
  if (parser.parseRParen())
    return failure();
  if (succeeded(parser.parseOptionalKeyword("dims"))) {
    if (parser.parseLParen() || parser.parseOperandList(dims) ||
        parser.parseRParen())
      return failure();
  }
  if (parser.parseArrow() || parser.parseLParen() ||
      parser.parseTypeList(resultTypes) || parser.parseRParen() ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  SMLoc loc = parser.getCurrentLocation();
  if (parser.resolveOperands(inputs, inputTypes, loc, result.operands) ||
      parser.resolveOperands(dims, parser.getBuilder().getIndexType(),
                             result.operands))
    return failure();
  result.addTypes(resultTypes);
  result.addAttribute("operandSegmentSizes",
                      parser.getBuilder().getDenseI32ArrayAttr(
                          {static_cast<int32_t>(inputs.size()),
                           static_cast<int32_t>(dims.size())}));
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, /*arguments=*/{},
                         /*enableNameShadowing=*/false))
    return failure();
  KernelOp::ensureTerminator(*body, parser.getBuilder(), result.location);
  (void)name;
  return success();
}

LogicalResult KernelOp::verify() {
  Block &block = getBodyBlock();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("expects ")
           << getInputs().size() << " block arguments, one per input, got "
           << block.getNumArguments();
  for (auto [arg, in] : llvm::zip(block.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("block argument type ")
             << arg.getType() << " differs from input type " << in.getType();
  int64_t numDynamic = 0;
  for (Type t : getResultTypes())
    numDynamic += cast<RankedTensorType>(t).getNumDynamicDims();
  if (numDynamic != static_cast<int64_t>(getDims().size()))
    return emitOpError("expects ")
           << numDynamic << " dynamic result sizes, got " << getDims().size();
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types do not match the result types");
  return success();
}

ValueRange KernelOp::getResultDims(unsigned i) {
  unsigned start = 0;
  for (unsigned r = 0; r < i; ++r)
    start += cast<RankedTensorType>(getResult(r).getType()).getNumDynamicDims();
  unsigned n =
      cast<RankedTensorType>(getResult(i).getType()).getNumDynamicDims();
  return getDims().slice(start, n);
}

//===----------------------------------------------------------------------===//
// Host ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyDynamicSizes(Operation *op, MemRefType type,
                                        ValueRange sizes) {
  if (type.getNumDynamicDims() != sizes.size())
    return op->emitOpError("expects ")
           << type.getNumDynamicDims() << " dynamic sizes for " << type
           << ", got " << sizes.size();
  if (!type.getLayout().isIdentity())
    return op->emitOpError("expects a row-major (identity layout) memref");
  return success();
}

LogicalResult OutputOp::verify() {
  return verifyDynamicSizes(*this, getBuffer().getType(), getDynamicSizes());
}

LogicalResult BufferOp::verify() {
  if (failed(
          verifyDynamicSizes(*this, getBuffer().getType(), getDynamicSizes())))
    return failure();
  if (getOffset() && !getBuffer().getType().hasStaticShape())
    return emitOpError("an arena offset needs a static shape");
  if (getOffset() && *getOffset() < 0)
    return emitOpError("arena offset must be non-negative");
  return success();
}

LogicalResult ReleaseOp::verify() {
  auto buffer = getBuffer().getDefiningOp<BufferOp>();
  if (!buffer)
    return emitOpError("releases a kiln.buffer result, not a view of one");
  if (buffer.getOffset())
    return emitOpError("cannot release an arena buffer (it has an offset)");
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *callee =
      symbolTable.lookupNearestSymbolFrom(*this, getKernelAttr());
  auto fn = dyn_cast_or_null<FunctionOpInterface>(callee);
  if (!fn)
    return emitOpError("kernel '") << getKernel() << "' is not a function";
  if (TypeRange(fn.getArgumentTypes()) != TypeRange(getArgs().getTypes()))
    return emitOpError("argument types do not match kernel '")
           << getKernel() << "'";
  return success();
}

LogicalResult
ParallelForOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *callee = symbolTable.lookupNearestSymbolFrom(*this, getBodyAttr());
  auto fn = dyn_cast_or_null<FunctionOpInterface>(callee);
  if (!fn)
    return emitOpError("body '") << getBody() << "' is not a function";
  ArrayRef<Type> types = fn.getArgumentTypes();
  if (types.size() < 2 || !types[0].isIndex() || !types[1].isIndex() ||
      TypeRange(types.drop_front(2)) != TypeRange(getArgs().getTypes()))
    return emitOpError("body '")
           << getBody() << "' must take (index, index) then the arguments";
  if (getTasks() < 1)
    return emitOpError("expects at least one task");
  return success();
}

LogicalResult CheckOp::verify() {
  // Every {i} must name a value: the runtime substitutes only those.
  StringRef message = getMessage();
  for (size_t at = message.find('{'); at != StringRef::npos;
       at = message.find('{', at + 1)) {
    size_t end = message.find('}', at);
    unsigned index = 0;
    if (end == StringRef::npos ||
        message.slice(at + 1, end).getAsInteger(10, index))
      continue;
    if (index >= getValues().size())
      return emitOpError("message refers to {")
             << index << "}, but the check has " << getValues().size()
             << " values";
  }
  if (getValues().size() > 8)
    return emitOpError("expects at most 8 values, got ") << getValues().size();
  return success();
}

Value CheckOp::getValueAsI64(OpBuilder &b, unsigned i) {
  Value v = getValues()[i];
  Type i64 = b.getI64Type();
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, getLoc(), i64, v);
  if (v.getType().getIntOrFloatBitWidth() < 64)
    return arith::ExtSIOp::create(b, getLoc(), i64, v);
  return v;
}

LogicalResult CheckOp::canonicalize(CheckOp op, PatternRewriter &rewriter) {
  // A condition known to hold: nothing to check.
  if (!matchPattern(op.getCondition(), m_One()))
    return failure();
  rewriter.eraseOp(op);
  return success();
}

LogicalResult CheckRecordOp::verify() {
  auto type = cast<MemRefType>(getRecord().getType());
  if (type.getRank() != 1 || type.getDimSize(0) != kSize ||
      !type.getElementType().isInteger(64) || !type.getLayout().isIdentity())
    return emitOpError("expects memref<") << kSize << "xi64>, got " << type;
  return success();
}

LogicalResult ReadOp::verify() {
  MemRefType type = getBuffer().getType();
  if (type.getRank() != static_cast<int64_t>(getIndices().size()))
    return emitOpError("expects ") << type.getRank() << " indices for " << type
                                   << ", got " << getIndices().size();
  return success();
}

/// What tile and im2col maps share: a swizzle the copy engine has and a
/// buffer whose innermost dim is contiguous.
static LogicalResult verifyCopyView(Operation *op, MemRefType type,
                                    int64_t swizzle) {
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return op->emitOpError("swizzle must be 0, 32, 64 or 128 bytes, got ")
           << swizzle;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return op->emitOpError("expects a buffer whose innermost dim is "
                           "contiguous, got ")
           << type;
  return success();
}

LogicalResult TileMapOp::verify() {
  MemRefType type = getBuffer().getType();
  ArrayRef<int64_t> box = getBox();
  if (type.getRank() < 1 || type.getRank() > 5)
    return emitOpError("expects a buffer of rank 1 to 5, got ") << type;
  if (static_cast<int64_t>(box.size()) != type.getRank())
    return emitOpError("expects ") << type.getRank() << " box sizes for "
                                   << type << ", got " << box.size();
  if (llvm::any_of(box, [](int64_t b) { return b < 1 || b > 256; }))
    return emitOpError("box sizes must be in [1, 256]");
  return verifyCopyView(*this, type, getSwizzle());
}

LogicalResult Im2colMapOp::verify() {
  MemRefType type = getBuffer().getType();
  int64_t rank = type.getRank(), spatial = rank - 2;
  if (rank < 3 || rank > 5)
    return emitOpError("expects a buffer of rank 3 to 5, got ") << type;
  if (getPixels() < 1 || getPixels() > 1024 || getChannels() < 1 ||
      getChannels() > 256)
    return emitOpError("expects 1 to 1024 pixels and 1 to 256 channels");
  for (ArrayRef<int64_t> list : {getLower(), getUpper(), getStrides()})
    if (static_cast<int64_t>(list.size()) != spatial)
      return emitOpError("expects ")
             << spatial << " window corners and strides for " << type;
  if (llvm::any_of(getStrides(), [](int64_t s) { return s < 1 || s > 8; }))
    return emitOpError("strides must be in [1, 8]");
  return verifyCopyView(*this, type, getSwizzle());
}

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto global = symbolTable.lookupNearestSymbolFrom<memref::GlobalOp>(
      *this, getGlobalAttr());
  if (!global)
    return emitOpError("'") << getGlobal() << "' is not a memref.global";
  if (global.getType() != getBuffer().getType())
    return emitOpError("type ")
           << getBuffer().getType() << " does not match the global's "
           << global.getType();
  return success();
}

#define GET_OP_CLASSES
#include "kiln/Dialect/Kiln/IR/KilnOps.cpp.inc"
