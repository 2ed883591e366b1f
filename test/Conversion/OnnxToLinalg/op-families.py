# RUN: %python %s %kiln_src
# RUN: not %python %s %kiln_src --self-test-move Softmax:Reduction 2>&1 | FileCheck %s --check-prefix=MOVED
# RUN: not %python %s %kiln_src --self-test-attr 2>&1 | FileCheck %s --check-prefix=ATTR
"""Checks the op families of include/kiln/Dialect/Onnx/IR/OnnxFamilies.def
against the sources and tests:

- every op is listed once; every family F has its lowering file
  lib/Conversion/OnnxToLinalg/F.cpp, which adds exactly the patterns of F's
  ops (FamilyPatterns<OnnxFamily::F>); no other lowering file exists besides
  the driver (OnnxToLinalg.cpp) and the shared helpers (Helpers.cpp);
- the ops marked Infer have their inferResultTypes() in
  lib/Dialect/Onnx/IR/InferShapes<F>.cpp of their family, and only they;
- no lowering reads an op attribute by name (getAttr, getAttrOfType,
  hasAttr, ... or a helper called with an attribute name): they use the
  generated accessors;
- the lowering tests are test/Conversion/OnnxToLinalg/<f>[-<what>].mlir (but
  for the cross-family ones listed below) and
  the inference tests test/Dialect/Onnx/infer-shapes-<f>[-<what>].mlir, with
  <f> a family name (DataMovement: data-movement).

The --self-test-* options apply a change in memory and must make the check
fail (the RUN lines above expect that): an op moved to another family's
lowering file, and a lowering reading an attribute by name.
"""
import os
import re
import sys

# MOVED: error: op Softmax: lowered in Reduction.cpp, but OnnxFamilies.def puts it in Softmax
# ATTR: error: Elementwise.cpp:{{[0-9]+}}: reads an op attribute by name

# Lowering tests that are not about one family.
CROSS_FAMILY_TESTS = {
    "unsupported.mlir",        # the driver's error for an op without a lowering
    "half-accumulation.mlir",  # the f32 accumulator of contractions of several families
    "tf32-mark.mlir",          # the TF32 mark on contractions of several families
}
# Files of the lowering that are not a family.
LOWERING_NON_FAMILY = {"OnnxToLinalg.cpp", "Helpers.cpp"}
# Reads of attributes by name. The driver reads the module's opset
# (`onnx.opset`), which is not an op attribute.
ATTR_READ = re.compile(
    r"getAttrOfType\s*<|\bgetAttr\s*\(|\bhasAttr\s*\(|getInherentAttr\s*\(|"
    r"getDiscardableAttr\s*\(|getAttrDictionary\s*\(|->getAttrs\s*\(|"
    r"\b(?:getInt|getFloat|getStr|getInts|getBool)\s*\([^()]*\"")
# The opset, and the marker the DequantizeLinear lowering puts on its own
# generic for the attention lowering (kDequantizeAttr, Lowering.h): not ONNX
# attributes.
ALLOWED_ATTR_READ = re.compile(r'module->getAttrOfType<IntegerAttr>\("onnx\.opset"\)|'
                               r'getAttrOfType<DictionaryAttr>\(kDequantizeAttr\)')


def kebab(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def read(path):
    with open(path) as f:
        return f.read()


def main():
    src = sys.argv[1]
    self_test = sys.argv[2:]
    errors = []

    def err(msg):
        errors.append(msg)

    defs = read(os.path.join(src, "include/kiln/Dialect/Onnx/IR/OnnxFamilies.def"))
    families = re.findall(r"^KILN_ONNX_FAMILY\((\w+)\)", defs, re.M)
    ops = re.findall(r"^KILN_ONNX_OP\((\w+), (\w+), (Infer|NoInfer)\)", defs, re.M)
    if len(families) < 10 or len(ops) < 100:
        err(f"OnnxFamilies.def: only {len(families)} families and {len(ops)} ops parsed")
    family_of, infer = {}, {}
    for fam, op, inf in ops:
        if fam not in families:
            err(f"op {op}: unknown family {fam}")
        if op in family_of:
            err(f"op {op}: listed twice ({family_of[op]} and {fam})")
        family_of[op] = fam
        infer[op] = inf == "Infer"

    # Lowerings.
    ldir = os.path.join(src, "lib/Conversion/OnnxToLinalg")
    lowering = {f: read(os.path.join(ldir, f)) for f in sorted(os.listdir(ldir))
                if f.endswith(".cpp")}
    if self_test[:1] == ["--self-test-move"]:
        op, to = self_test[1].split(":")
        pat = re.compile(r"\s*t\.add<onnxops::%sOp>\([^;]*\);" % op)
        for f in lowering:
            m = pat.search(lowering[f])
            if m and f != to + ".cpp":
                lowering[f] = lowering[f].replace(m.group(0), "")
                lowering[to + ".cpp"] += m.group(0)
    if self_test[:1] == ["--self-test-attr"]:
        lowering["Elementwise.cpp"] += '\nint64_t x = getInt(op, "alpha", 0);\n'
    lowered_in = {}
    for f, text in lowering.items():
        fam = f[:-4]
        if f not in LOWERING_NON_FAMILY and fam not in families:
            err(f"{f}: a lowering file that is not a family of OnnxFamilies.def")
        adds = re.findall(r"\bt\.add<onnxops::(\w+)Op>", text)
        if adds and f"FamilyPatterns<OnnxFamily::{fam}>" not in text:
            err(f"{f}: adds patterns without FamilyPatterns<OnnxFamily::{fam}>")
        for op in adds:
            if op in lowered_in:
                err(f"op {op}: lowered twice ({lowered_in[op]} and {f})")
            lowered_in[op] = f
        for n, line in enumerate(text.split("\n"), 1):
            if ATTR_READ.search(line) and not ALLOWED_ATTR_READ.search(line):
                err(f"{f}:{n}: reads an op attribute by name: {line.strip()}")
    for fam in families:
        if f"{fam}.cpp" not in lowering:
            err(f"family {fam}: no lib/Conversion/OnnxToLinalg/{fam}.cpp")
        elif f"populate{fam}LoweringPatterns" not in lowering[f"{fam}.cpp"]:
            err(f"{fam}.cpp: no populate{fam}LoweringPatterns")
    for op, fam in family_of.items():
        where = lowered_in.get(op)
        if where is None:
            err(f"op {op}: no lowering pattern (family {fam})")
        elif where != f"{fam}.cpp":
            err(f"op {op}: lowered in {where}, but OnnxFamilies.def puts it in {fam}")
    for op, where in lowered_in.items():
        if op not in family_of:
            err(f"op {op}: lowered in {where} but not listed in OnnxFamilies.def")

    # Shape inference.
    idir = os.path.join(src, "lib/Dialect/Onnx/IR")
    inferred_in = {}
    for f in sorted(os.listdir(idir)):
        m = re.fullmatch(r"InferShapes(\w+)\.cpp", f)
        if not m:
            continue
        fam = m.group(1)
        if fam not in families:
            err(f"{f}: not a family of OnnxFamilies.def")
        text = read(os.path.join(idir, f))
        found = re.findall(r"\b(\w+)Op::inferResultTypes\b", text)
        found += re.findall(r"^KILN_\w+\((\w+)Op\b", text, re.M)
        for op in found:
            if op in inferred_in:
                err(f"op {op}: inferred twice ({inferred_in[op]} and {f})")
            inferred_in[op] = f
    for op, fam in family_of.items():
        where = inferred_in.get(op)
        if infer[op] and where is None:
            err(f"op {op}: marked Infer but no inferResultTypes in InferShapes{fam}.cpp")
        elif infer[op] and where != f"InferShapes{fam}.cpp":
            err(f"op {op}: inferred in {where}, but OnnxFamilies.def puts it in {fam}")
        elif not infer[op] and where:
            err(f"op {op}: marked NoInfer but inferred in {where}")
    for op, where in inferred_in.items():
        if op not in family_of:
            err(f"op {op}: inferred in {where} but not listed in OnnxFamilies.def")

    # Test file names.
    names = {kebab(f) for f in families}

    def check_tests(folder, prefix):
        for f in sorted(os.listdir(os.path.join(src, folder))):
            if not f.endswith(".mlir") or not f.startswith(prefix):
                continue
            if prefix == "" and f in CROSS_FAMILY_TESTS:
                continue
            stem = f[len(prefix):-len(".mlir")]
            if not any(stem == n or stem.startswith(n + "-") for n in names):
                err(f"{folder}/{f}: not named after a family")

    check_tests("test/Conversion/OnnxToLinalg", "")
    check_tests("test/Dialect/Onnx", "infer-shapes-")

    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"{len(families)} families, {len(ops)} ops: lowering, inference and "
          f"tests agree with OnnxFamilies.def")
    return 0


if __name__ == "__main__":
    sys.exit(main())
