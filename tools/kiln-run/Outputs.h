//===- Outputs.h - kiln-run's outputs: print, compare, write ---*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_RUN_OUTPUTS_H
#define KILN_TOOLS_KILN_RUN_OUTPUTS_H

#include "TensorProto.h"
#include "kiln-c/runtime.h"

#include <string>
#include <vector>

namespace kiln::run {

struct OutputRef {
  std::string name;
  kiln_tensor_t *tensor;
};

/// "output <i> ('<name>'): <dtype> <shape> = [<first `count` values>]".
void printOutput(size_t i, const OutputRef &out, size_t count);

/// Compares one output with its expected tensor (|a-b| <= atol + rtol*|b|,
/// NaN matches NaN) and prints one line; false on a mismatch.
bool compareOutput(size_t i, const OutputRef &out,
                   const kiln::HostTensor &expected, double rtol, double atol);

/// Writes every output to DIR/output_<i>.pb.
bool writeOutputs(const std::string &dir, const std::vector<OutputRef> &refs,
                  std::string &error);

/// Outputs of one run, released on scope exit.
struct Outputs {
  std::vector<kiln_tensor_t *> tensors;
  explicit Outputs(size_t n) : tensors(n, nullptr) {}
  ~Outputs() { clear(); }
  Outputs(const Outputs &) = delete;
  Outputs &operator=(const Outputs &) = delete;
  void clear() {
    for (kiln_tensor_t *&t : tensors) {
      kiln_tensor_release(t);
      t = nullptr;
    }
  }
};

} // namespace kiln::run

#endif // KILN_TOOLS_KILN_RUN_OUTPUTS_H
