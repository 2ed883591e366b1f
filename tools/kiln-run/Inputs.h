//===- Inputs.h - kiln-run's inputs: files, shapes, random data -*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_RUN_INPUTS_H
#define KILN_TOOLS_KILN_RUN_INPUTS_H

#include "Options.h"
#include "TensorProto.h"
#include "kiln-c/runtime.h"

#include <string>
#include <vector>

namespace kiln::run {

/// The model's inputs for a run: each read from its --input file, or seeded
/// random data of its run shape (--shapes, else the signature's static dims
/// and the symbols other inputs bind) and the signature's dtype.
struct Inputs {
  std::vector<kiln::HostTensor> tensors; // in signature order
  std::vector<bool> random;              // per input: generated
};

/// False with `error` set: more --input than inputs, an input given twice,
/// an unreadable file, --shapes naming no input or contradicting the model
/// or the input's file, or a symbolic dim nothing fixes.
bool prepareInputs(const Options &opts,
                   const std::vector<kiln_value_info_t> &info, Inputs &out,
                   std::string &error);

/// Fills `tensor` (dtype and dims set) with values from `seed`: floats
/// uniform in [-1, 1), integers in [0, 3], bools 0 or 1.
void fillRandom(kiln::HostTensor &tensor, uint64_t seed);

/// "[1, 3, 224, 224]".
std::string shapeString(const int64_t *dims, size_t rank);

} // namespace kiln::run

#endif // KILN_TOOLS_KILN_RUN_INPUTS_H
