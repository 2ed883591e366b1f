//===- ExternalWeights.cpp - The weights file of --external-weights -------===//
//
// Layout (docs/runtime.md, "External weights"):
//   bytes [0, 64): header, little endian:
//       [0, 8)   magic "KILNWTS1"
//       [8, 16)  layout hash (FNV-1a 64 of every weight's name, dtype, dims,
//                offset and size): the model's signature records it, and the
//                runtime refuses a file written for another layout
//       [16, 24) file size in bytes
//       [24, 32) number of weights
//       [32, 36) CRC-32 (zlib's) of bytes [64, file size): kiln-run
//                --verify-weights / kiln_weights_verify check it
//       [36, 40) flags: bit 0, the CRC is present
//       [40, 64) zero
//   then each weight's bytes exactly as ONNX stores raw_data, at a 64-byte
//   aligned offset (zero padding between them). The file is valid ONNX
//   external data: a TensorProto may point at (location, offset, length).
// The manifest (JSON, next to it) lists the same and is what
// utils/models/fill_weights.py reads to write a file of the same layout.
//
//===----------------------------------------------------------------------===//

#include "kiln/Import/Onnx/Importer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir::kiln;

int64_t ExternalWeights::nextOffset() const {
  int64_t end = kHeaderBytes;
  if (!weights.empty())
    end = weights.back().offset + weights.back().bytes;
  return (end + kAlignment - 1) / kAlignment * kAlignment;
}

static void fnv(uint64_t &h, llvm::StringRef bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
}

void ExternalWeights::finalize() {
  fileBytes = kHeaderBytes;
  if (!weights.empty())
    fileBytes = weights.back().offset + weights.back().bytes;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const ExternalWeight &w : weights) {
    std::string rec = w.name;
    rec.push_back('\0');
    rec += w.dtype + " " + std::to_string(w.dims.size());
    for (int64_t d : w.dims)
      rec += " " + std::to_string(d);
    rec += " " + std::to_string(w.offset) + " " + std::to_string(w.bytes);
    rec.push_back('\n');
    fnv(h, rec);
  }
  layoutHash = h;
}

std::string ExternalWeights::layoutHashHex() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format_hex_no_prefix(layoutHash, 16);
  return s;
}

uint32_t ExternalWeights::checksum() const {
  static const uint8_t zeros[kAlignment] = {};
  uint32_t crc = 0;
  int64_t at = kHeaderBytes;
  for (const ExternalWeight &w : weights) {
    crc = llvm::crc32(crc, llvm::ArrayRef<uint8_t>(zeros, w.offset - at));
    crc = llvm::crc32(crc, llvm::arrayRefFromStringRef(w.data));
    at = w.offset + w.bytes;
  }
  return crc;
}

static void putU64(char *out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

bool mlir::kiln::writeExternalWeights(const ExternalWeights &weights,
                                      llvm::StringRef path,
                                      llvm::StringRef manifestPath,
                                      llvm::StringRef sourceModel,
                                      std::string &error) {
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error = "cannot write '" + path.str() + "': " + ec.message();
      return false;
    }
    char header[ExternalWeights::kHeaderBytes] = {};
    memcpy(header, "KILNWTS1", 8);
    putU64(header + 8, weights.layoutHash);
    putU64(header + 16, static_cast<uint64_t>(weights.fileBytes));
    putU64(header + 24, weights.weights.size());
    putU64(header + 32, uint64_t(1) << 32 | weights.checksum());
    os.write(header, sizeof(header));
    int64_t at = ExternalWeights::kHeaderBytes;
    for (const ExternalWeight &w : weights.weights) {
      os.write_zeros(static_cast<unsigned>(w.offset - at));
      os.write(w.data.data(), w.data.size());
      at = w.offset + w.bytes;
    }
    os.close();
    if (os.has_error()) {
      error = "cannot write '" + path.str() + "': " + os.error().message();
      os.clear_error();
      return false;
    }
  }

  llvm::json::Array list;
  for (const ExternalWeight &w : weights.weights) {
    llvm::json::Array dims;
    for (int64_t d : w.dims)
      dims.push_back(d);
    list.push_back(llvm::json::Object{{"name", w.name},
                                      {"dtype", w.dtype},
                                      {"onnx_type", w.onnxType},
                                      {"dims", std::move(dims)},
                                      {"offset", w.offset},
                                      {"bytes", w.bytes}});
  }
  llvm::json::Object manifest{
      {"format", "kiln-weights"},
      {"version", 1},
      {"file", weights.fileName},
      {"file_bytes", weights.fileBytes},
      {"layout_hash", weights.layoutHashHex()},
      {"checksum_crc32", llvm::formatv("{0:x-8}", weights.checksum()).str()},
      {"header_bytes", ExternalWeights::kHeaderBytes},
      {"alignment", ExternalWeights::kAlignment},
      {"min_bytes", weights.minBytes},
      {"model", llvm::sys::path::filename(sourceModel).str()},
      {"weights", std::move(list)}};
  std::error_code ec;
  llvm::raw_fd_ostream os(manifestPath, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    error = "cannot write '" + manifestPath.str() + "': " + ec.message();
    return false;
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  os.close();
  if (os.has_error()) {
    error =
        "cannot write '" + manifestPath.str() + "': " + os.error().message();
    os.clear_error();
    return false;
  }
  return true;
}
