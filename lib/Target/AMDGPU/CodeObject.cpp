//===- CodeObject.cpp - What an AMDGPU code object says of its kernels ----===//
//
// The metadata note (ELF note "AMDGPU", type NT_AMDGPU_METADATA) of a code
// object v3+ is a msgpack map whose "amdhsa.kernels" array holds one map per
// kernel: ".name", ".vgpr_count", ".agpr_count", ".sgpr_count",
// ".group_segment_fixed_size" (LDS), ".private_segment_fixed_size"
// (scratch), ".wavefront_size", ".max_flat_workgroup_size", spill counts
// (LLVM's AMDGPUUsage, "Code Object V3 Metadata").
//
// Occupancy (waves per SIMD) is the least of: the chip's wave slots; its
// register file over the registers a wave allocates (granules of 8 on gfx9,
// where gfx90a and gfx942 allocate VGPRs and AGPRs from one file of 512;
// granules of 24 in gfx11's file of 1536 for wave32); gfx9's 800 SGPRs
// over a wave's (granules of 16); and the work-groups whose LDS fits one
// compute unit (gfx11: one work-group processor) spread over its 4 SIMDs.
//
//===----------------------------------------------------------------------===//

#include "CodeObject.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kiln;

bool mlir::kiln::readCodeObject(StringRef object,
                                SmallVectorImpl<KernelResources> &out,
                                std::string &error) {
  auto buffer =
      llvm::MemoryBuffer::getMemBuffer(object, "code object",
                                       /*RequiresNullTerminator=*/false);
  auto file = llvm::object::ObjectFile::createELFObjectFile(*buffer);
  if (!file) {
    error = "not an ELF code object: " + llvm::toString(file.takeError());
    return false;
  }
  auto *elf = dyn_cast<llvm::object::ELF64LEObjectFile>(file->get());
  if (!elf || elf->getArch() != llvm::Triple::amdgcn) {
    error = "not an AMDGPU code object";
    return false;
  }
  const auto &ef = elf->getELFFile();
  auto sections = ef.sections();
  if (!sections) {
    error = llvm::toString(sections.takeError());
    return false;
  }
  for (const auto &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : ef.notes(section, err)) {
      if (note.getName() != "AMDGPU" ||
          note.getType() != llvm::ELF::NT_AMDGPU_METADATA)
        continue;
      ArrayRef<uint8_t> desc = note.getDesc(section.sh_addralign);
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(
              StringRef(reinterpret_cast<const char *>(desc.data()),
                        desc.size()),
              /*Multi=*/false)) {
        error = "unreadable AMDGPU metadata note";
        return false;
      }
      auto &root = doc.getRoot().getMap();
      auto it = root.find(doc.getNode("amdhsa.kernels"));
      if (it == root.end())
        continue;
      for (llvm::msgpack::DocNode &k : it->second.getArray()) {
        auto &m = k.getMap();
        auto integer = [&](StringRef key) -> int64_t {
          auto f = m.find(doc.getNode(key));
          if (f == m.end())
            return 0;
          llvm::msgpack::DocNode &v = f->second;
          if (v.getKind() == llvm::msgpack::Type::UInt)
            return v.getUInt();
          if (v.getKind() == llvm::msgpack::Type::Int)
            return v.getInt();
          return 0;
        };
        KernelResources r;
        auto name = m.find(doc.getNode(".name"));
        if (name != m.end() &&
            name->second.getKind() == llvm::msgpack::Type::String)
          r.name = name->second.getString().str();
        r.vgprs = integer(".vgpr_count");
        r.agprs = integer(".agpr_count");
        r.sgprs = integer(".sgpr_count");
        r.vgprSpills = integer(".vgpr_spill_count");
        r.sgprSpills = integer(".sgpr_spill_count");
        r.ldsBytes = integer(".group_segment_fixed_size");
        r.scratchBytes = integer(".private_segment_fixed_size");
        r.waveSize = integer(".wavefront_size");
        r.workgroupSize = integer(".max_flat_workgroup_size");
        out.push_back(std::move(r));
      }
    }
    if (err) {
      error = llvm::toString(std::move(err));
      return false;
    }
  }
  if (out.empty()) {
    error = "no kernels in the AMDGPU metadata note";
    return false;
  }
  return true;
}

Occupancy mlir::kiln::computeOccupancy(const RocmChip &chip,
                                       const KernelResources &k) {
  auto alignTo = [](int64_t v, int64_t a) { return (v + a - 1) / a * a; };
  Occupancy o{chip.maxWavesPerSimd, "waves"};
  auto limit = [&](int64_t waves, const char *why) {
    if (waves < o.wavesPerSimd)
      o = {waves, why};
  };
  bool gfx9 = chip.waveSize == 64;
  int64_t granule = gfx9 ? 8 : 24;
  // gfx90a/gfx942: AGPRs follow the VGPRs (aligned to 4) in one file.
  int64_t regs = alignTo(
      gfx9 ? alignTo(std::max<int64_t>(k.vgprs, 1), 4) + k.agprs : k.vgprs,
      granule);
  limit(chip.vgprsPerSimd / std::max<int64_t>(regs, granule), "vgprs");
  if (gfx9 && k.sgprs > 0)
    limit(800 / alignTo(k.sgprs, 16), "sgprs");
  int64_t wavesPerGroup =
      std::max<int64_t>(1, (k.workgroupSize + chip.waveSize - 1) /
                               std::max<int64_t>(chip.waveSize, 1));
  if (k.ldsBytes > 0) {
    int64_t groups = chip.ldsBytes / k.ldsBytes;
    limit(groups * wavesPerGroup / 4, "lds");
  }
  // A work-group's waves share one compute unit's 4 SIMDs.
  if (o.wavesPerSimd * 4 < wavesPerGroup)
    o = {0, "workgroup"};
  return o;
}
