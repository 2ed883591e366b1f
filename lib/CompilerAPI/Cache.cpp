//===- Cache.cpp - The compile cache's folder and keys --------------------===//
//
// The default folder is read here and only here ($KILN_CACHE_DIR, then the
// XDG cache home). A key is the SHA-256 of everything that decides the
// compiled library: the compiler's build (the GNU build-id of the loaded
// libkiln_compiler.so), the options as set, the model's bytes, and the
// bytes of every external-data file the model names. A file outside the
// model's folder is not read (the importer refuses such a model anyway).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <onnx/onnx_pb.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>

using namespace mlir;
using namespace mlir::kiln;

std::string capi::defaultCacheDir() {
  if (const char *v = std::getenv("KILN_CACHE_DIR"); v && *v)
    return v;
  if (const char *v = std::getenv("XDG_CACHE_HOME"); v && *v)
    return (llvm::Twine(v) + "/kiln").str();
  if (const char *v = std::getenv("HOME"); v && *v)
    return (llvm::Twine(v) + "/.cache/kiln").str();
  return "";
}

namespace {
/// The path and load address of the shared object holding this code.
struct Self {
  std::string path;
  uintptr_t base = 0;
};
Self findSelf() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&findSelf), &info) || !info.dli_fname)
    return {};
  return {info.dli_fname, reinterpret_cast<uintptr_t>(info.dli_fbase)};
}

/// The GNU build-id note of the loaded object at `base`, as hex.
std::string readBuildId(uintptr_t base) {
  struct Search {
    uintptr_t base;
    std::string id;
  } search{base, {}};
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) -> int {
        auto *s = static_cast<Search *>(data);
        // dladdr's base is where the object's first segment is mapped.
        bool ours = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && ph.p_offset == 0) {
            ours = info->dlpi_addr + ph.p_vaddr == s->base;
            break;
          }
        }
        if (!ours)
          return 0; // another object: keep looking
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE)
            continue;
          const char *p =
              reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
          const char *end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto *n = reinterpret_cast<const ElfW(Nhdr) *>(p);
            const char *name = p + sizeof(ElfW(Nhdr));
            const char *desc = name + ((n->n_namesz + 3) & ~3u);
            if (desc + n->n_descsz > end)
              break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              s->id = llvm::toHex(llvm::StringRef(desc, n->n_descsz),
                                  /*LowerCase=*/true);
              return 1;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
          }
        }
        return 1; // our object, without a note
      },
      &search);
  return search.id;
}
} // namespace

const std::string &capi::libraryDir() {
  static const std::string dir =
      llvm::sys::path::parent_path(findSelf().path).str();
  return dir;
}

const std::string &capi::buildId() {
  static const std::string id = [] {
    Self self = findSelf();
    std::string note = self.base ? readBuildId(self.base) : "";
    if (!note.empty())
      return note;
    // No note: the library's own bytes.
    auto file = llvm::MemoryBuffer::getFile(self.path);
    if (!file)
      return std::string("unknown");
    return llvm::toHex(
        llvm::SHA256::hash(llvm::arrayRefFromStringRef((*file)->getBuffer())),
        /*LowerCase=*/true);
  }();
  return id;
}

/// The external-data locations of every initializer and constant tensor of
/// `graph` and its subgraphs.
static void externalLocations(const ::onnx::GraphProto &graph,
                              std::vector<std::string> &out) {
  auto tensor = [&](const ::onnx::TensorProto &t) {
    if (t.data_location() != ::onnx::TensorProto::EXTERNAL)
      return;
    for (const auto &kv : t.external_data())
      if (kv.key() == "location")
        out.push_back(kv.value());
  };
  for (const auto &t : graph.initializer())
    tensor(t);
  for (const auto &node : graph.node())
    for (const auto &a : node.attribute()) {
      if (a.has_t())
        tensor(a.t());
      if (a.has_g())
        externalLocations(a.g(), out);
      for (const auto &g : a.graphs())
        externalLocations(g, out);
    }
}

std::string capi::cacheKey(llvm::StringRef bytes, llvm::StringRef baseDir,
                           const kiln_compile_options &options) {
  llvm::SHA256 hash;
  auto field = [&](llvm::StringRef s) {
    uint64_t n = s.size();
    hash.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(&n), 8));
    hash.update(llvm::arrayRefFromStringRef(s));
  };
  field("kiln-compile-cache-v1");
  field(buildId());
  for (const auto &[name, value] : options.settings) {
    field(name);
    field(value);
  }
  field(bytes);
  ::onnx::ModelProto model;
  std::vector<std::string> locations;
  if (!baseDir.empty() &&
      model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    externalLocations(model.graph(), locations);
  for (const std::string &location : locations) {
    field(location);
    llvm::StringRef rel(location);
    if (llvm::sys::path::is_absolute(rel) || rel.contains(".."))
      continue;
    llvm::SmallString<256> path(baseDir);
    llvm::sys::path::append(path, rel);
    if (auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                /*RequiresNullTerminator=*/
                                                false))
      field((*file)->getBuffer());
  }
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}
