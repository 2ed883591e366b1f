//===- Tensors.cpp - ONNX types, tensors and attributes ----------------------===//
//
// ONNX element and value types, TensorProto data (raw, typed fields, external
// data) as attributes or resource blobs, node attributes, and the weight
// arguments of kilnc --external-weights.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "kiln/Runtime/RegularFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

#include <set>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnx_import;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::convertElementType(int32_t t, Location loc) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return Type(builder.getF32Type());
  case onnx::TensorProto::DOUBLE:
    return Type(builder.getF64Type());
  case onnx::TensorProto::FLOAT16:
    return Type(builder.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(builder.getBF16Type());
  case onnx::TensorProto::INT8:
    return Type(builder.getIntegerType(8));
  case onnx::TensorProto::INT16:
    return Type(builder.getIntegerType(16));
  case onnx::TensorProto::INT32:
    return Type(builder.getIntegerType(32));
  case onnx::TensorProto::INT64:
    return Type(builder.getIntegerType(64));
  case onnx::TensorProto::UINT8:
    return Type(builder.getIntegerType(8, /*isSigned=*/false));
  case onnx::TensorProto::UINT16:
    return Type(builder.getIntegerType(16, false));
  case onnx::TensorProto::UINT32:
    return Type(builder.getIntegerType(32, false));
  case onnx::TensorProto::UINT64:
    return Type(builder.getIntegerType(64, false));
  case onnx::TensorProto::BOOL:
    return Type(builder.getI1Type());
  case onnx::TensorProto::COMPLEX64:
    return Type(ComplexType::get(builder.getF32Type()));
  case onnx::TensorProto::COMPLEX128:
    return Type(ComplexType::get(builder.getF64Type()));
  case 17: // FLOAT8E4M3FN
    return Type(builder.getType<Float8E4M3FNType>());
  case 18: // FLOAT8E4M3FNUZ
    return Type(builder.getType<Float8E4M3FNUZType>());
  case 19: // FLOAT8E5M2
    return Type(builder.getType<Float8E5M2Type>());
  case 20: // FLOAT8E5M2FNUZ
    return Type(builder.getType<Float8E5M2FNUZType>());
  default:
    return emitError(loc) << "unsupported ONNX element type " << t
                          << " (string and other non-numeric tensors are not "
                             "supported)",
           failure();
  }
}

/// The symbol of a dim without a value: its dim_param, unless that is empty
/// or a placeholder that names no dim ("?", "-1": Paddle2ONNX and others
/// write these for every unknown dim, which must not tie the dims together),
/// else `<input>:<axis>` for a graph input (empty for other values).
static std::string dimSymbol(const onnx::TensorShapeProto::Dimension &dim,
                             StringRef inputName, int64_t axis) {
  if (dim.has_dim_param() && !dim.dim_param().empty() &&
      dim.dim_param() != "?" && dim.dim_param() != "-1")
    return dim.dim_param();
  if (inputName.empty())
    return "";
  return inputName.str() + ":" + std::to_string(axis);
}

FailureOr<Type>
Importer::convertValueType(const onnx::TypeProto &type, Location loc,
                           SmallVectorImpl<std::string> *dimNames,
                           StringRef inputName) {
  if (!type.has_tensor_type())
    return emitError(loc) << "only tensor-typed graph values are supported "
                             "(sequence, map and optional values are not)",
           failure();
  const auto &tt = type.tensor_type();
  FailureOr<Type> elem = convertElementType(tt.elem_type(), loc);
  if (failed(elem))
    return failure();
  if (!tt.has_shape())
    return Type(UnrankedTensorType::get(*elem));
  SmallVector<int64_t> shape;
  for (const auto &[axis, dim] : llvm::enumerate(tt.shape().dim())) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      if (dimNames)
        dimNames->push_back("");
      continue;
    }
    // The dim's symbol: its dim_param, else (graph inputs) <input>:<axis>.
    std::string symbol = dimSymbol(dim, inputName, axis);
    auto bound = options.boundDims.find(symbol);
    if (!symbol.empty() && bound != options.boundDims.end()) {
      shape.push_back(bound->second);
      if (dimNames)
        dimNames->push_back("");
    } else {
      shape.push_back(ShapedType::kDynamic);
      if (dimNames)
        dimNames->push_back(symbol);
    }
  }
  return Type(RankedTensorType::get(shape, *elem));
}

LogicalResult Importer::bindInputShapes(const onnx::GraphProto &graph,
                                        Location loc) {
  std::map<std::string, std::vector<int64_t>> pending = options.inputShapes;
  std::string names;
  for (const auto &in : graph.input()) {
    names += (names.empty() ? "" : ", ") + in.name();
    auto it = pending.find(in.name());
    if (it == pending.end())
      continue;
    const std::vector<int64_t> &want = it->second;
    auto fail = [&]() {
      return emitError(loc)
             << "--shapes " << in.name() << ":"
             << llvm::join(
                    llvm::map_range(
                        want, [](int64_t v) { return std::to_string(v); }),
                    "x")
             << ": ";
    };
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape())
      return fail() << "input '" << in.name() << "' has no shape to fix",
             failure();
    const auto &dims = in.type().tensor_type().shape().dim();
    if (dims.size() != static_cast<int>(want.size()))
      return fail() << "input '" << in.name() << "' has rank " << dims.size()
                    << ", the shape gives " << want.size() << " dims",
             failure();
    for (int axis = 0; axis < dims.size(); ++axis) {
      const auto &dim = dims[axis];
      if (dim.has_dim_value() && dim.dim_value() >= 0) {
        if (dim.dim_value() != want[axis])
          return fail() << "dim " << axis << " of input '" << in.name()
                        << "' is " << dim.dim_value() << " in the model",
                 failure();
        continue;
      }
      std::string symbol = dimSymbol(dim, in.name(), axis);
      auto [bound, inserted] = options.boundDims.emplace(symbol, want[axis]);
      if (!inserted && bound->second != want[axis])
        return fail() << "dim " << axis << " of input '" << in.name()
                      << "' is '" << symbol << "', already fixed to "
                      << bound->second,
               failure();
    }
    pending.erase(it);
  }
  if (!pending.empty())
    return emitError(loc) << "--shapes names '" << pending.begin()->first
                          << "', which is not an input of the model (its "
                             "inputs: "
                          << names << ")",
           failure();
  // A --dim that names no symbolic dim of an input or output leaves the
  // model as it is: a typo, or a dim the model has fixed (scripts pass the
  // same --dim batch=1 to models with and without one), so a warning.
  std::set<std::string> symbols;
  for (const auto *values : {&graph.input(), &graph.output()})
    for (const auto &v : *values) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
        continue;
      for (const auto &[axis, dim] :
           llvm::enumerate(v.type().tensor_type().shape().dim()))
        if (!(dim.has_dim_value() && dim.dim_value() >= 0))
          symbols.insert(dimSymbol(dim, v.name(), axis));
    }
  symbols.erase("");
  for (const auto &[name, value] : options.boundDims)
    if (!symbols.count(name))
      emitWarning(loc) << "--dim " << name << "=" << value
                       << " names no dimension of the model's inputs or "
                          "outputs, and fixes nothing (its symbolic dims: "
                       << (symbols.empty() ? std::string("none")
                                           : llvm::join(symbols.begin(),
                                                        symbols.end(), ", "))
                       << ")";
  return success();
}

LogicalResult Importer::readExternalData(const onnx::TensorProto &tensor,
                                         int64_t expectedBytes,
                                         std::string &out, Location loc) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : tensor.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset" || kv.key() == "length") {
      char *end = nullptr;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end || v < 0)
        return emitError(loc)
               << "tensor '" << tensor.name() << "': bad external-data "
               << kv.key() << " '" << kv.value() << "'";
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': external data without a location";
  // The ONNX spec: a path relative to the model's folder, inside it.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': external data location '" << location
                          << "' must be a relative path inside the model's "
                             "folder";
  SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  // Inside it after symlinks too: a link to /etc or /dev/zero is refused.
  SmallString<256> realBase, realPath;
  if (std::error_code ec = llvm::sys::fs::real_path(baseDir, realBase))
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': cannot resolve the model's folder '" << baseDir
                          << "': " << ec.message();
  if (std::error_code ec = llvm::sys::fs::real_path(path, realPath))
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': cannot read external data file '" << path
                          << "': " << ec.message();
  if (!StringRef(realPath).starts_with((realBase + "/").str()))
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': external data location '" << location
                          << "' resolves to '" << realPath
                          << "', outside the model's folder '" << realBase
                          << "'";
  // A regular file, read only in [offset, offset + length) of the size it
  // had when opened.
  uint64_t size = 0;
  const char *why = nullptr;
  int fd = kiln_open_regular_file(realPath.c_str(), &size, &why);
  if (fd < 0)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': cannot read external data file '" << path
                          << "': " << why;
  llvm::scope_exit closeFd([&] { close(fd); });
  if (length < 0)
    length = offset <= static_cast<int64_t>(size) ? size - offset : 0;
  if (offset > static_cast<int64_t>(size) ||
      length > static_cast<int64_t>(size) - offset)
    return emitError(loc) << "tensor '" << tensor.name() << "': external data ["
                          << offset << ", " << offset + length
                          << ") is outside '" << path << "' (" << size
                          << " bytes)";
  if (length != expectedBytes)
    return emitError(loc) << "tensor '" << tensor.name() << "' needs "
                          << expectedBytes << " bytes of data, its external "
                          << "data [" << offset << ", " << offset + length
                          << ") in '" << path << "' has " << length;
  out.resize(length);
  if (kiln_read_file_range(fd, offset, length, out.data(), &why))
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': cannot read external data file '" << path
                          << "': " << why;
  return success();
}

/// Appends `values` to `bytes` as little-endian elements of `width` bytes.
template <typename T>
static void appendNarrowed(std::string &bytes, const T &values, int width) {
  for (auto v : values) {
    uint64_t u = static_cast<uint64_t>(v);
    for (int i = 0; i < width; ++i)
      bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
}

LogicalResult Importer::readTensor(const onnx::TensorProto &tensor,
                                   Location loc, RankedTensorType &type,
                                   std::string &bytes) {
  FailureOr<Type> elem = convertElementType(tensor.data_type(), loc);
  if (failed(elem))
    return failure();
  SmallVector<int64_t> shape;
  int64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitError(loc) << "tensor '" << tensor.name()
                            << "' has a negative dimension " << d,
             failure();
    shape.push_back(d);
    // Element counts past 2^48 cannot be real data; also keeps the byte
    // count below from overflowing.
    if (d != 0 && numElements > (int64_t(1) << 48) / d)
      return emitError(loc)
                 << "tensor '" << tensor.name() << "' has too many elements",
             failure();
    numElements *= d;
  }
  type = RankedTensorType::get(shape, *elem);
  int64_t width;
  if (auto complex = dyn_cast<ComplexType>(*elem))
    width = 2 * complex.getElementType().getIntOrFloatBitWidth() / 8;
  else
    width = std::max<int64_t>(1, elem->getIntOrFloatBitWidth() / 8);

  bytes.clear();
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (failed(readExternalData(tensor, numElements * width, bytes, loc)))
      return failure();
  } else if (tensor.has_raw_data()) {
    bytes = tensor.raw_data();
  } else {
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      bytes.assign(reinterpret_cast<const char *>(tensor.float_data().data()),
                   tensor.float_data_size() * sizeof(float));
      break;
    case onnx::TensorProto::DOUBLE:
      bytes.assign(reinterpret_cast<const char *>(tensor.double_data().data()),
                   tensor.double_data_size() * sizeof(double));
      break;
    case onnx::TensorProto::INT64:
      bytes.assign(reinterpret_cast<const char *>(tensor.int64_data().data()),
                   tensor.int64_data_size() * sizeof(int64_t));
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      appendNarrowed(bytes, tensor.uint64_data(), width);
      break;
    case onnx::TensorProto::COMPLEX64:
      bytes.assign(reinterpret_cast<const char *>(tensor.float_data().data()),
                   tensor.float_data_size() * sizeof(float));
      break;
    case onnx::TensorProto::STRING:
      return emitError(loc) << "string tensors are not supported", failure();
    default:
      // INT32, INT16, INT8, UINT8, UINT16, BOOL, FLOAT16, BFLOAT16, FLOAT8*:
      // one int32_data entry per element holding the bit pattern.
      appendNarrowed(bytes, tensor.int32_data(), width);
      break;
    }
  }
  if (static_cast<int64_t>(bytes.size()) != numElements * width)
    return emitError(loc) << "tensor '" << tensor.name() << "' of type " << type
                          << " needs " << numElements * width
                          << " bytes of data, found " << bytes.size();
  return success();
}

FailureOr<ElementsAttr> Importer::convertTensor(const onnx::TensorProto &tensor,
                                                Location loc) {
  RankedTensorType type;
  std::string bytes;
  if (failed(readTensor(tensor, loc, type, bytes)))
    return failure();
  Type elem = type.getElementType();
  int64_t numElements = type.getNumElements();
  if (elem.isInteger(1)) {
    SmallVector<bool> bools;
    for (char c : bytes)
      bools.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, bools));
  }
  if (numElements <= options.maxInlineElements) {
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(
            type, ArrayRef<char>(bytes.data(), bytes.size()), splat))
      return emitError(loc)
                 << "tensor '" << tensor.name() << "': invalid data buffer",
             failure();
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(bytes.data(), bytes.size())));
  }
  std::string blobName =
      tensor.name().empty() ? "onnx_tensor_" + std::to_string(resourceCounter++)
                            : tensor.name();
  for (char &c : blobName)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(bytes.data(), bytes.size()), alignof(uint64_t));
  return ElementsAttr(
      DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

FailureOr<NamedAttribute>
Importer::convertAttribute(const onnx::AttributeProto &attr, Location loc) {
  auto name = builder.getStringAttr(attr.name());
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return NamedAttribute(name, builder.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::FLOAT:
    return NamedAttribute(name, builder.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::STRING:
    return NamedAttribute(name, builder.getStringAttr(attr.s()));
  case onnx::AttributeProto::INTS: {
    SmallVector<int64_t> v(attr.ints().begin(), attr.ints().end());
    return NamedAttribute(name, builder.getI64ArrayAttr(v));
  }
  case onnx::AttributeProto::FLOATS: {
    SmallVector<float> v(attr.floats().begin(), attr.floats().end());
    return NamedAttribute(name, builder.getF32ArrayAttr(v));
  }
  case onnx::AttributeProto::STRINGS: {
    SmallVector<StringRef> v;
    for (const auto &s : attr.strings())
      v.push_back(s);
    return NamedAttribute(name, builder.getStrArrayAttr(v));
  }
  case onnx::AttributeProto::TENSOR: {
    FailureOr<ElementsAttr> t = convertTensor(attr.t(), loc);
    if (failed(t))
      return failure();
    return NamedAttribute(name, *t);
  }
  case onnx::AttributeProto::TYPE_PROTO: {
    FailureOr<Type> t = convertValueType(attr.tp(), loc, nullptr);
    if (failed(t))
      return failure();
    return NamedAttribute(name, TypeAttr::get(*t));
  }
  default:
    return emitError(loc) << "attribute '" << attr.name()
                          << "' has an unsupported type (" << attr.type()
                          << ")",
           failure();
  }
}

/// The ModelABI.h dtype name and element size of an ONNX element type that
/// may be an external weight; 0 for the others (complex, string, 4-bit).
static int64_t weightElementSize(int32_t t, std::string &dtype) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    dtype = "f32";
    return 4;
  case onnx::TensorProto::DOUBLE:
    dtype = "f64";
    return 8;
  case onnx::TensorProto::FLOAT16:
    dtype = "f16";
    return 2;
  case onnx::TensorProto::BFLOAT16:
    dtype = "bf16";
    return 2;
  case onnx::TensorProto::INT8:
    dtype = "i8";
    return 1;
  case onnx::TensorProto::INT16:
    dtype = "i16";
    return 2;
  case onnx::TensorProto::INT32:
    dtype = "i32";
    return 4;
  case onnx::TensorProto::INT64:
    dtype = "i64";
    return 8;
  case onnx::TensorProto::UINT8:
    dtype = "u8";
    return 1;
  case onnx::TensorProto::UINT16:
    dtype = "u16";
    return 2;
  case onnx::TensorProto::UINT32:
    dtype = "u32";
    return 4;
  case onnx::TensorProto::UINT64:
    dtype = "u64";
    return 8;
  case onnx::TensorProto::BOOL:
    dtype = "bool";
    return 1;
  case 17:
    dtype = "f8e4m3fn";
    return 1;
  case 18:
    dtype = "f8e4m3fnuz";
    return 1;
  case 19:
    dtype = "f8e5m2";
    return 1;
  case 20:
    dtype = "f8e5m2fnuz";
    return 1;
  default:
    return 0;
  }
}

LogicalResult
Importer::addWeightArguments(const onnx::GraphProto &graph,
                             SmallVectorImpl<Type> &argTypes,
                             SmallVectorImpl<DictionaryAttr> &argAttrs,
                             SmallVectorImpl<std::string> &argNames) {
  ExternalWeights &ext = *options.externalWeights;
  llvm::StringSet<> inputs;
  for (const std::string &n : argNames)
    inputs.insert(n);
  for (const auto &init : graph.initializer()) {
    std::string dtype;
    int64_t width = weightElementSize(init.data_type(), dtype);
    if (width == 0 || init.name().empty() || inputs.contains(init.name()) ||
        weightArgs.contains(init.name()))
      continue;
    // The size from the dims alone, so small tensors are not read twice.
    int64_t bytes = width;
    bool tooLarge = false;
    for (int64_t d : init.dims()) {
      if (d < 0 || (d != 0 && bytes > (int64_t(1) << 50) / d)) {
        tooLarge = true;
        break;
      }
      bytes *= d;
    }
    if (tooLarge || bytes < ext.minBytes)
      continue; // readTensor reports bad dims when the constant is imported
    Location loc = NameLoc::get(builder.getStringAttr(init.name()),
                                FileLineColLoc::get(ctx, sourceName, 0, 0));
    ExternalWeight w;
    RankedTensorType type;
    if (failed(readTensor(init, loc, type, w.data)))
      return failure();
    w.name = init.name();
    w.dtype = dtype;
    w.onnxType = init.data_type();
    w.dims.assign(type.getShape().begin(), type.getShape().end());
    w.bytes = static_cast<int64_t>(w.data.size());
    w.offset = ext.nextOffset();
    SmallVector<std::string> dimNames(type.getRank());
    argTypes.push_back(type);
    argNames.push_back(init.name());
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("kiln.name", builder.getStringAttr(init.name())),
         builder.getNamedAttr("kiln.dim_names",
                              dimNamesAttr(builder, dimNames)),
         builder.getNamedAttr("kiln.weight_offset",
                              builder.getI64IntegerAttr(w.offset))}));
    weightArgs.insert(init.name());
    ext.weights.push_back(std::move(w));
  }
  ext.finalize();
  return success();
}
