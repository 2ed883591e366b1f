//===- TargetInfo.cpp - GPUTargetInfo's defaults and registry -------------===//

#include "kiln/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <mutex>

using namespace mlir;
using namespace mlir::kiln;

GPUTargetInfo::~GPUTargetInfo() = default;

Value GPUTargetInfo::buildShuffleXor(OpBuilder &b, Location loc, Value value,
                                     int32_t offset, int32_t width) const {
  return gpu::ShuffleOp::create(b, loc, value, offset, width,
                                gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

Attribute GPUTargetInfo::getSharedMemorySpace(MLIRContext *context) const {
  return gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
}

void GPUTargetInfo::buildBarrier(OpBuilder &b, Location loc) const {
  gpu::BarrierOp::create(b, loc);
}

SmallVector<Value> GPUTargetInfo::buildMMA(OpBuilder &, Location,
                                           const MMALayout &, ValueRange,
                                           ValueRange, ValueRange) const {
  llvm_unreachable("buildMMA on a target-info whose getMMA gave a layout "
                   "must be overridden");
}

void mlir::kiln::addKernelAttr(Operation *launch, NamedAttribute attr) {
  NamedAttrList attrs;
  if (auto d = launch->getAttrOfType<DictionaryAttr>(kKernelAttrsName))
    attrs.append(d.getValue());
  attrs.set(attr.getName(), attr.getValue());
  launch->setAttr(kKernelAttrsName, attrs.getDictionary(launch->getContext()));
}

namespace {
struct Entry {
  std::string kind, defaultChip;
  GPUTargetInfoFactory factory;
};
struct Registry {
  std::mutex mutex;
  SmallVector<Entry> entries;
};
Registry &getRegistry() {
  static Registry registry;
  return registry;
}
} // namespace

void mlir::kiln::registerGPUTargetInfo(StringRef kind, StringRef defaultChip,
                                       GPUTargetInfoFactory factory) {
  Registry &r = getRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (Entry &e : r.entries)
    if (e.kind == kind) {
      e = {kind.str(), defaultChip.str(), std::move(factory)};
      return;
    }
  r.entries.push_back({kind.str(), defaultChip.str(), std::move(factory)});
}

std::shared_ptr<const GPUTargetInfo>
mlir::kiln::lookupGPUTargetInfo(StringRef device, std::string &resolved,
                                std::string &error) {
  Registry &r = getRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [kind, chip] = device.trim().split(' ');
  chip = chip.trim();
  const Entry *entry = nullptr;
  for (const Entry &e : r.entries)
    if (kind.empty() || e.kind == kind) {
      entry = &e;
      break;
    }
  if (!entry) {
    SmallVector<StringRef> kinds;
    for (const Entry &e : r.entries)
      kinds.push_back(e.kind);
    error =
        ("no GPU target-info for device '" + device + "' (registered: " +
         (kinds.empty() ? std::string("none") : llvm::join(kinds, ", ")) + ")")
            .str();
    return nullptr;
  }
  if (chip.empty())
    chip = entry->defaultChip;
  std::shared_ptr<const GPUTargetInfo> info = entry->factory(chip);
  if (!info) {
    error = ("unknown chip '" + chip + "' for GPU device kind '" + entry->kind +
             "'")
                .str();
    return nullptr;
  }
  resolved = chip.empty() ? entry->kind : entry->kind + " " + chip.str();
  return info;
}

void mlir::kiln::noteGPUContraction(Operation *op, StringRef what) {
  auto fn = op->getParentOfType<func::FuncOp>();
  if (!fn)
    return;
  SmallVector<Attribute> list;
  if (auto old = fn->getAttrOfType<ArrayAttr>("kiln.gpu_contractions"))
    llvm::append_range(list, old.getValue());
  Builder b(op->getContext());
  list.push_back(b.getStringAttr(what));
  fn->setAttr("kiln.gpu_contractions", b.getArrayAttr(list));
}
