//===- Json.h - The little JSON kiln-run reads and writes ------*- C++ -*-===//
//
// kiln-run links nothing from LLVM (it runs on machines without it): a
// reader for kilnc --report files and writers' helpers for the trace and
// the times it exports.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_RUN_JSON_H
#define KILN_TOOLS_KILN_RUN_JSON_H

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::json {

/// A parsed JSON value.
struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  /// The member `key` of an object, or nullptr.
  const Value *get(const std::string &key) const;
};

/// Parses `text` (one JSON value, whitespace around it); false with
/// `error` ("line L: ...") on malformed text.
bool parse(const std::string &text, Value &out, std::string &error);

/// `text` as a JSON string literal (quotes, escapes; UTF-8 passes through).
std::string quote(const std::string &text);

/// A finite number with `digits` decimals ("null" for NaN or infinity).
std::string number(double value, int digits = 3);

/// Reads a whole file; false with `error` ("cannot open 'F': why").
bool readFile(const std::string &path, std::string &text, std::string &error);
/// Writes `text` to `path`; false with `error` ("cannot write 'F': why").
bool writeFile(const std::string &path, const std::string &text,
               std::string &error);

} // namespace kiln::json

#endif // KILN_TOOLS_KILN_RUN_JSON_H
