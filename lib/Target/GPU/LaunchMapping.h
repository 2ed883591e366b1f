//===- LaunchMapping.h - Kernel bodies onto launches -----------*- C++ -*-===//
//
// The part of kiln-map-kernels-to-gpu that places each op of a kernel
// function once its linalg ops are loop nests (LaunchMapping.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_GPU_LAUNCHMAPPING_H
#define KILN_LIB_TARGET_GPU_LAUNCHMAPPING_H

#include "Lowering.h"

namespace mlir::kiln::gpumap {

/// Maps the ops of one block (and, for host control flow, its regions' blocks)
/// of a kernel function or host program: parallel loop nests to launches,
/// other device work to grouped single-thread launches, host reads of
/// device data to kiln.read (`hostLoads`).
class GPUMapper {
public:
  GPUMapper(Value ctx, int64_t blockSize, bool hostLoads)
      : ctx(ctx), blockSize(blockSize), hostLoads(hostLoads) {}

  LogicalResult mapBlock(Block &block);

private:
  LogicalResult flush(SmallVectorImpl<Operation *> &group);
  LogicalResult mapParallel(scf::ParallelOp par);

  Value ctx;
  int64_t blockSize;
  bool hostLoads;
};

/// Run-time checks of device data (an index range: the min and max a kernel
/// computed; a divisor) would read it on the host every run, a sync that
/// also keeps the run out of a device graph. Such a check moves to the
/// device instead: the ops only it needs (the loads and the arithmetic on
/// them) and the check become a single-thread launch that, when the check
/// fails and nothing failed before it, writes the check's index and values
/// into the instance's check record (kiln.check_record); the runtime reads
/// the record after the run's synchronization and fails the run with the
/// check's message (`messages`, the module's kiln.device_checks). Guarded
/// kernels still run (the kernels clamp what they read). Checks of host
/// values (shapes, sizes) stay host checks. A check whose ops cannot move
/// (in another block, or with device work between them and the check) is
/// dropped with its reads, as before device checks existed.
void moveDeviceDataChecks(func::FuncOp host,
                          SmallVectorImpl<Attribute> &messages);

} // namespace mlir::kiln::gpumap

#endif // KILN_LIB_TARGET_GPU_LAUNCHMAPPING_H
