#!/usr/bin/env python3
"""Generates Kiln's `onnx` dialect op definitions from the ONNX operator schemas.

Writes (both checked in):
  include/kiln/Dialect/Onnx/IR/OnnxOps.td      ODS, one op per ai.onnx operator
  include/kiln/Dialect/Onnx/IR/OnnxSchema.inc  X-macro table for the importer

Regenerate (from the repository root, with the project's virtual environment):
  .venv/bin/python utils/gen_onnx_ops.py

Rules (see docs of the dialect):
  * domain "" (ai.onnx) only, deprecated operators skipped, latest version of each.
  * operands/results in ONNX formal order; an optional one accepts `none`
    (produced by `onnx.NoValue`), the last may be variadic.
  * attributes keep their ONNX names; GRAPH attributes become regions that end
    in `onnx.Yield`.
  * an operand/result/region whose C++ getter would collide with another name
    of the op or with an Operation/ODS method is renamed with a `_in`/`_out`/
    `_region` suffix; renames are listed in OnnxOps.td's header.
"""

import argparse
import os
import re
import sys

import numpy as np
import onnx
import onnx.defs
from onnx.defs import OpSchema

# Ops with a hand-written verifier (`let hasVerifier = 1;`, in OnnxOps.cpp).
VERIFIER_OPS = [
    "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat",
    "Conv", "Div", "Flatten", "Gather", "Gemm", "GlobalAveragePool",
    "MatMul", "MaxPool", "Mul", "Pow", "ReduceMean", "ReduceSum", "Reshape",
    "Shape", "Slice", "Softmax", "Squeeze", "Sub", "Transpose", "Unsqueeze",
]

# Ops implementing Onnx_InferShapesOpInterface (in InferShapes*.cpp).
INFER_SHAPES_OPS = [
    # Reductions, normalizations, losses (InferShapesReduction.cpp,
    # InferShapesNormalization.cpp).
    "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
    "LogSoftmax", "Hardmax", "CumSum", "TopK", "LayerNormalization",
    "RMSNormalization", "InstanceNormalization", "GroupNormalization",
    "MeanVarianceNormalization", "LpNormalization", "LRN",
    "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
    # Data movement, resample, quantize, ConvTranspose (InferShapesDataMovement.cpp).
    "Split", "Pad", "CenterCropPad", "DepthToSpace", "SpaceToDepth",
    "ReverseSequence", "GatherElements", "GatherND", "ScatterElements",
    "ScatterND", "Compress", "NonZero", "Resize", "GridSample", "AffineGrid",
    "ConvTranspose", "QuantizeLinear", "DequantizeLinear",
    "DynamicQuantizeLinear", "MatMulInteger", "QLinearMatMul",
    # Detection family (InferShapesDetection.cpp).
    "NonMaxSuppression", "Unique",
    # Recurrent family (InferShapesRecurrent.cpp).
    "LSTM", "GRU", "RNN",
    # Elementwise, Logic, Cast, Generate, ... (InferShapes<Family>.cpp of the
    # op's family in include/kiln/Dialect/Onnx/IR/OnnxFamilies.def).
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
    "Xor", "Not", "Where", "Max", "Min", "Sum", "Mean", "Mod", "Round",
    "Floor", "Ceil", "Sign", "Reciprocal", "Sin", "Cos", "Tan", "Asin",
    "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf", "Gelu",
    "Elu", "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu", "PRelu",
    "Mish", "HardSwish", "Swish", "IsNaN", "IsInf", "BitShift", "BitwiseAnd",
    "BitwiseOr", "BitwiseXor", "BitwiseNot", "CastLike", "Dropout", "Size",
    "ConstantOfShape", "Expand", "Tile", "Range", "EyeLike", "Trilu", "OneHot",
    "MatMul", "Gemm", "Einsum", "Conv", "BatchNormalization", "Relu", "LeakyRelu",
    "Sigmoid", "Tanh", "Clip", "HardSigmoid", "Exp", "Log", "Sqrt", "Neg",
    "Abs", "Add", "Sub", "Mul", "Div", "Pow", "MaxPool", "AveragePool",
    "LpPool", "GlobalAveragePool", "GlobalMaxPool", "Reshape", "Flatten", "Transpose", "Concat",
    "Squeeze", "Unsqueeze", "Slice", "Gather", "Softmax", "ReduceMean",
    "ReduceSum", "Cast", "Identity", "Shape",
    # Attention family (InferShapesAttention.cpp).
    "Attention", "RotaryEmbedding",
]

# Ops with side effects (random number generation): no `Pure`.
NON_PURE_OPS = [
    "Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike",
    "RandomUniform", "RandomUniformLike",
]

# Region order where alphabetical order of the GRAPH attributes would surprise
# (regions are positional in the IR: If is `({then}, {else})` like scf.if).
REGION_ORDER = {
    "If": ["then_branch", "else_branch"],
}

ELEMENT_TYPES = {
    "float": "F32", "double": "F64", "float16": "F16", "bfloat16": "BF16",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "UI8", "uint16": "UI16", "uint32": "UI32", "uint64": "UI64",
    "bool": "I1", "complex64": "Complex<F32>", "complex128": "Complex<F64>",
    "float8e4m3fn": "F8E4M3FN", "float8e5m2": "F8E5M2",
    "float8e4m3fnuz": "F8E4M3FNUZ", "float8e5m2fnuz": "F8E5M2FNUZ",
    "float8e8m0": "F8E8M0FNU", "int4": "I<4>", "uint4": "UI<4>",
    "int2": "I<2>", "uint2": "UI<2>", "float4e2m1": "F4E2M1FN",
}

# Getter names that would clash with methods of mlir::Operation/OpState or of
# ODS-generated code (compared in their camel-cased form).
RESERVED = {
    "Operands", "Results", "Type", "Name", "Operation", "Loc", "Context",
    "Attributes", "Properties", "Result", "Operand", "Region", "Regions",
    "Dialect", "Attr", "AttrDictionary", "OperationName", "Block",
    "ODSOperands", "ODSResults", "ODSOperandIndexAndLength",
    "ODSResultIndexAndLength", "AttributeNames", "InherentAttr", "Parent",
    "ParentOp", "Successors", "NumOperands", "NumResults",
    "AsOpaquePointer", "Mutable",
}

CXX_KEYWORDS = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
    "bool", "break", "case", "catch", "char", "class", "compl", "const",
    "constexpr", "const_cast", "continue", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export",
    "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int",
    "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "register", "reinterpret_cast", "return", "short", "signed", "sizeof",
    "static", "static_assert", "static_cast", "struct", "switch", "template",
    "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
    "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "xor", "xor_eq",
    # Names ODS uses for builder parameters.
    "odsBuilder", "odsState", "attributes", "properties", "resultTypes",
    "operands",
}

AT = OpSchema.AttrType


def camel(name):
    """Mirror of llvm::convertToCamelFromSnakeCase(name, /*capitalize=*/true)."""
    out = [name[0].upper() if name[0].islower() else name[0]]
    i = 1
    while i < len(name):
        if name[i] == "_" and i != len(name) - 1 and name[i + 1].islower():
            out.append(name[i + 1].upper())
            i += 2
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def latest_schemas():
    latest = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain != "" or s.deprecated:
            continue
        if s.name not in latest or s.since_version > latest[s.name].since_version:
            latest[s.name] = s
    # An operator whose latest version is deprecated is gone.
    for s in onnx.defs.get_all_schemas():
        if s.domain == "" and s.deprecated:
            latest.pop(s.name, None)
    return [latest[k] for k in sorted(latest)]


class Constraints:
    """Deduplicates type constraints into named TableGen defs."""

    def __init__(self):
        self.defs = {}  # key (tuple of ODS element types) -> def name
        self.order = []

    def get(self, elems, optional):
        if elems is None:
            return "AnyType"  # Also accepts `none`.
        key = tuple(elems) if elems is not None else ("*",)
        if key not in self.defs:
            name = "Onnx_T%d" % len(self.defs)
            self.defs[key] = name
            self.order.append(key)
        name = self.defs[key]
        return name + "OrNone" if optional else name

    def emit(self):
        lines = []
        for key in self.order:
            name = self.defs[key]
            if key == ("*",):
                body = "AnyType"
            else:
                body = "TensorOf<[%s]>" % ", ".join(key)
            lines.append("def %s : %s;" % (name, body))
            lines.append("def %sOrNone : AnyTypeOf<[%s, NoneType]>;" % (name, name))
        return "\n".join(lines)


def element_types(schema, type_str):
    """ODS element types for a formal parameter, or None when not all map."""
    allowed = None
    for tc in schema.type_constraints:
        if tc.type_param_str == type_str:
            allowed = list(tc.allowed_type_strs)
    if allowed is None:
        allowed = [type_str]
    elems = []
    for t in allowed:
        m = re.fullmatch(r"tensor\((\w+)\)", t)
        if not m or m.group(1) not in ELEMENT_TYPES:
            return None
        e = ELEMENT_TYPES[m.group(1)]
        if e not in elems:
            elems.append(e)
    order = list(ELEMENT_TYPES.values())
    return sorted(elems, key=order.index)


def fmt_float(v):
    s = np.format_float_positional(np.float32(v), trim="0")
    if s.endswith("."):
        s += "0"
    if "e" not in s and "." not in s:
        s += ".0"
    return s


def cxx_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def attr_def(a):
    """ODS attribute constraint for an ONNX attribute, or None for GRAPH."""
    t = a.type
    dv = a.default_value
    has_default = (not a.required) and dv is not None and dv.ListFields()
    if t == AT.GRAPH:
        return None
    if t == AT.INT:
        if has_default:
            return 'DefaultValuedAttr<I64Attr, "%d">' % dv.i
        base = "I64Attr"
    elif t == AT.FLOAT:
        if has_default:
            return 'DefaultValuedAttr<F32Attr, "%s">' % fmt_float(dv.f)
        base = "F32Attr"
    elif t == AT.STRING:
        if has_default:
            s = dv.s.decode("utf-8")
            return 'DefaultValuedStrAttr<StrAttr, %s>' % td_string(s)
        base = "StrAttr"
    elif t == AT.INTS:
        if has_default and len(dv.ints):
            return 'DefaultValuedOptionalAttr<I64ArrayAttr, "{%s}">' % ", ".join(
                str(i) for i in dv.ints)
        base = "I64ArrayAttr"
    elif t == AT.FLOATS:
        if has_default and len(dv.floats):
            return 'DefaultValuedOptionalAttr<F32ArrayAttr, "{%s}">' % ", ".join(
                fmt_float(f) + "f" for f in dv.floats)
        base = "F32ArrayAttr"
    elif t == AT.STRINGS:
        if has_default and len(dv.strings):
            vals = ", ".join(cxx_string(s.decode("utf-8")) for s in dv.strings)
            return "DefaultValuedOptionalAttr<StrArrayAttr, %s>" % td_string("{" + vals + "}")
        base = "StrArrayAttr"
    elif t == AT.TENSOR:
        base = "ElementsAttr"
    elif t in (AT.TENSORS, AT.GRAPHS):
        base = "ArrayAttr"
    elif t == AT.TYPE_PROTO:
        base = "TypeAttr"
    elif t in (AT.SPARSE_TENSOR, AT.SPARSE_TENSORS, AT.TYPE_PROTOS):
        base = "AnyAttr"
    else:
        raise ValueError("unhandled attribute type %s" % t)
    return base if a.required else "OptionalAttr<%s>" % base


def td_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sanitize_doc(doc):
    doc = doc.replace("[{", "[ {").replace("}]", "} ]")
    return doc


def summary_of(schema):
    text = " ".join(schema.doc.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    s = m.group(1) if m else text
    if not s:
        s = "ONNX %s operation." % schema.name
    if len(s) > 160:
        s = s[:157].rstrip() + "..."
    return s.replace("\\", "\\\\").replace('"', "'")


def region_names(schema):
    names = sorted(a.name for a in schema.attributes.values() if a.type == AT.GRAPH)
    order = REGION_ORDER.get(schema.name)
    if order:
        assert sorted(order) == names, (schema.name, names)
        return list(order)
    return names


def is_optional(p):
    return p.option == OpSchema.FormalParameterOption.Optional


def is_variadic(p):
    return p.option == OpSchema.FormalParameterOption.Variadic


def plan_names(schema):
    """ODS names for inputs, outputs and regions; returns (ins, outs, regions, renames)."""
    attrs = [a for a in schema.attributes.values() if a.type != AT.GRAPH]
    regions = region_names(schema)
    taken = {}
    renames = []
    for a in attrs:
        assert a.name not in CXX_KEYWORDS, (schema.name, a.name)
        g = camel(a.name)
        if g in RESERVED:
            # Attribute names never change: the getter hides the inherited one.
            renames.append("%s attribute '%s' kept: get%s() hides the inherited "
                           "method (use getOperation()->get%s())" % (
                               schema.name, a.name, g, g))
        taken[g] = a.name

    def place(name, suffix, kind):
        new = name
        while camel(new) in taken or camel(new) in RESERVED or new in CXX_KEYWORDS:
            new = new + suffix
        if new != name:
            renames.append("%s %s '%s' -> '%s'" % (schema.name, kind, name, new))
        taken[camel(new)] = new
        return new

    ins = [place(p.name, "_in", "input") for p in schema.inputs]
    outs = [place(p.name, "_out", "output") for p in schema.outputs]
    regs = [place(r, "_region", "region") for r in regions]
    return ins, outs, regs, renames


def gen_op(schema, cons, all_renames):
    name = schema.name
    ins, outs, regs, renames = plan_names(schema)
    all_renames.extend(renames)

    traits = []
    if regs:
        traits.append("RecursiveMemoryEffects")
    elif name not in NON_PURE_OPS:
        traits.append("Pure")
    if name in INFER_SHAPES_OPS:
        traits.append("DeclareOpInterfaceMethods<Onnx_InferShapesOpInterface>")

    args = []
    for p, n in zip(schema.inputs, ins):
        c = cons.get(element_types(schema, p.type_str), is_optional(p))
        if is_variadic(p):
            c = "Variadic<%s>" % c
        args.append("%s:$%s" % (c, n))
    for a in sorted(schema.attributes.values(), key=lambda a: a.name):
        d = attr_def(a)
        if d is not None:
            args.append("%s:$%s" % (d, a.name))
    results = []
    for p, n in zip(schema.outputs, outs):
        c = cons.get(element_types(schema, p.type_str), is_optional(p))
        if is_variadic(p):
            c = "Variadic<%s>" % c
        results.append("%s:$%s" % (c, n))

    desc = sanitize_doc(schema.doc.strip("\n"))
    out = []
    out.append("//===" + "-" * 70 + "===//")
    out.append("// %s (ai.onnx, since_version %d)" % (name, schema.since_version))
    out.append("//===" + "-" * 70 + "===//")
    out.append("")
    out.append('def Onnx_%sOp : Onnx_Op<"%s",\n    [%s]> {' % (
        name, name, ",\n     ".join(traits)))
    out.append('  let summary = "%s";' % summary_of(schema))
    out.append("  let description = [{")
    out.append(desc)
    out.append("")
    out.append("ONNX operator `%s` of the ai.onnx domain, since_version %d." % (
        name, schema.since_version))
    if renames:
        out.append("Renamed in this dialect: %s." % "; ".join(
            r.split(" ", 1)[1] for r in renames))
    out.append("  }];")
    out.append("  let arguments = (ins%s);" % (
        "" if not args else "\n    " + ",\n    ".join(args)))
    out.append("  let results = (outs%s);" % (
        "" if not results else "\n    " + ",\n    ".join(results)))
    if regs:
        out.append("  let regions = (region %s);" % ", ".join(
            "SizedRegion<1>:$%s" % r for r in regs))
    if name in VERIFIER_OPS:
        out.append("  let hasVerifier = 1;")
    if name in INFER_SHAPES_OPS:
        out.append("  let extraClassDeclaration = [{")
        out.append("    /// Result types inferred from the operands (ONNX semantics); emits an")
        out.append("    /// error at the op and fails on inconsistent shapes.")
        out.append("    ::mlir::FailureOr<::llvm::SmallVector<::mlir::Type>> inferResultTypes();")
        out.append("  }];")
    out.append("}")
    out.append("")
    return "\n".join(out)


def gen_schema_inc(schemas):
    lines = [
        "// Generated by utils/gen_onnx_ops.py from onnx %s. DO NOT EDIT." % onnx.__version__,
        "// Regenerate: .venv/bin/python utils/gen_onnx_ops.py",
        "//",
        "// X-macro table of the ai.onnx operators of Kiln's `onnx` dialect. Define",
        "// the macros you need before including; the others expand to nothing.",
        "//",
        "//   KILN_ONNX_OP(name, sinceVersion, numInputs, lastInputVariadic,",
        "//                numOutputs, lastOutputVariadic, numRegions)",
        "//     numInputs/numOutputs count formal parameters (a variadic one counts",
        "//     once).",
        "//   KILN_ONNX_INPUT(op, index, name, optional, variadic)",
        "//   KILN_ONNX_OUTPUT(op, index, name, optional, variadic)",
        "//     one line per formal parameter, ONNX names and order.",
        "//   KILN_ONNX_REGION(op, index, attrName)",
        "//     GRAPH attributes, in the order of the op's regions.",
        "",
        "#ifndef KILN_ONNX_OP",
        "#define KILN_ONNX_OP(name, sinceVersion, numInputs, lastInputVariadic, "
        "numOutputs, lastOutputVariadic, numRegions)",
        "#endif",
        "#ifndef KILN_ONNX_INPUT",
        "#define KILN_ONNX_INPUT(op, index, name, optional, variadic)",
        "#endif",
        "#ifndef KILN_ONNX_OUTPUT",
        "#define KILN_ONNX_OUTPUT(op, index, name, optional, variadic)",
        "#endif",
        "#ifndef KILN_ONNX_REGION",
        "#define KILN_ONNX_REGION(op, index, attrName)",
        "#endif",
        "",
    ]
    b = lambda v: "true" if v else "false"
    for s in schemas:
        regions = region_names(s)
        lines.append(
            'KILN_ONNX_OP("%s", /*sinceVersion=*/%d, /*numInputs=*/%d, '
            "/*lastInputVariadic=*/%s, /*numOutputs=*/%d, "
            "/*lastOutputVariadic=*/%s, /*numRegions=*/%d)" % (
                s.name, s.since_version, len(s.inputs),
                b(s.inputs and is_variadic(s.inputs[-1])), len(s.outputs),
                b(s.outputs and is_variadic(s.outputs[-1])), len(regions)))
        for i, p in enumerate(s.inputs):
            lines.append('KILN_ONNX_INPUT("%s", %d, "%s", %s, %s)' % (
                s.name, i, p.name, b(is_optional(p)), b(is_variadic(p))))
        for i, p in enumerate(s.outputs):
            lines.append('KILN_ONNX_OUTPUT("%s", %d, "%s", %s, %s)' % (
                s.name, i, p.name, b(is_optional(p)), b(is_variadic(p))))
        for i, r in enumerate(regions):
            lines.append('KILN_ONNX_REGION("%s", %d, "%s")' % (s.name, i, r))
    lines += [
        "",
        "#undef KILN_ONNX_OP",
        "#undef KILN_ONNX_INPUT",
        "#undef KILN_ONNX_OUTPUT",
        "#undef KILN_ONNX_REGION",
        "",
    ]
    return "\n".join(lines)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=os.path.join(
        root, "include", "kiln", "Dialect", "Onnx", "IR"))
    args = ap.parse_args()

    schemas = latest_schemas()
    for n in VERIFIER_OPS + INFER_SHAPES_OPS + NON_PURE_OPS:
        if not any(s.name == n for s in schemas):
            sys.exit("unknown op in generator lists: %s" % n)

    cons = Constraints()
    renames = []
    ops = [gen_op(s, cons, renames) for s in schemas]

    header = [
        "//===- OnnxOps.td - ONNX operators (GENERATED) ----------*- tablegen -*-===//",
        "//",
        "// GENERATED by utils/gen_onnx_ops.py from onnx %s: DO NOT EDIT." % onnx.__version__,
        "// Regenerate from the repository root with:",
        "//   .venv/bin/python utils/gen_onnx_ops.py",
        "// Edit the op lists (verifiers, shape inference, side effects) at the top",
        "// of that script; hand-written parts are in OnnxBase.td and InferShapes.td.",
        "//",
        "// %d operators (ai.onnx, latest version of each, deprecated ones skipped)." % len(schemas),
        "//",
        "// Operands/results/regions renamed to avoid C++ name clashes (ONNX",
        "// attribute names are never renamed):",
    ]
    header += ["//   " + r for r in renames] or ["//   (none)"]
    header += [
        "//",
        "//===" + "-" * 70 + "===//",
        "",
        "#ifndef KILN_DIALECT_ONNX_IR_ONNXOPS_TD",
        "#define KILN_DIALECT_ONNX_IR_ONNXOPS_TD",
        "",
        'include "kiln/Dialect/Onnx/IR/OnnxBase.td"',
        'include "kiln/Dialect/Onnx/IR/InferShapes.td"',
        "",
        "// Type constraints shared by the operators below; `...OrNone` also",
        "// accepts the `none` of a missing optional operand or result.",
        cons.emit(),
        "",
    ]
    footer = ["#endif // KILN_DIALECT_ONNX_IR_ONNXOPS_TD", ""]
    with open(os.path.join(args.out_dir, "OnnxOps.td"), "w") as f:
        f.write("\n".join(header) + "\n" + "\n".join(ops) + "\n".join(footer))
    with open(os.path.join(args.out_dir, "OnnxSchema.inc"), "w") as f:
        f.write(gen_schema_inc(schemas))
    print("generated %d ops, %d renames" % (len(schemas), len(renames)))


if __name__ == "__main__":
    main()
