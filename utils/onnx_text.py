#!/usr/bin/env python3
"""Writes an ONNX model from ONNX's textual syntax (onnx.parser).

Usage: onnx_text.py INPUT.txt -o OUT.onnx
Lines of INPUT starting with '#', '//' or 'RUN'/'CHECK' comments are dropped
so lit test files can hold the model text and the checks together; the model
text is what lies between the lines '// MODEL-BEGIN' and '// MODEL-END' when
those markers are present.
"""
import argparse
import sys

import onnx
import onnx.parser


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    text = open(args.input).read()
    if "// MODEL-BEGIN" in text:
        text = text.split("// MODEL-BEGIN", 1)[1].split("// MODEL-END", 1)[0]
    lines = [l for l in text.splitlines() if not l.lstrip().startswith(("//", "#"))]
    model = onnx.parser.parse_model("\n".join(lines))
    onnx.save(model, args.output)


if __name__ == "__main__":
    sys.exit(main())
