//===- Json.cpp - The little JSON kiln-run reads and writes ---------------===//
#include "Json.h"

#include "kiln/Runtime/RegularFile.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln::json {

const Value *Value::get(const std::string &key) const {
  if (kind != Object)
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

namespace {

/// Recursive descent over the text; depth-limited so a hostile file cannot
/// exhaust the stack.
class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parseDocument(Value &out, std::string &error) {
    skipSpace();
    if (!parseValue(out, 0)) {
      error = message;
      return false;
    }
    skipSpace();
    if (pos != text.size()) {
      fail("unexpected text after the value");
      error = message;
      return false;
    }
    return true;
  }

private:
  bool fail(const std::string &what) {
    if (message.empty()) {
      size_t line = 1;
      for (size_t i = 0; i < pos && i < text.size(); ++i)
        line += text[i] == '\n';
      message = "line " + std::to_string(line) + ": " + what;
    }
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' ||
                                 text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }
  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }
  bool hex4(unsigned &code) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      int v = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (v < 0)
        return fail("bad \\u escape");
      code = code * 16 + static_cast<unsigned>(v);
    }
    return true;
  }
  bool parseString(std::string &out) {
    ++pos; // the opening quote
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        break;
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code;
        if (!hex4(code))
          return false;
        if (code >= 0xD800 && code < 0xDC00 &&
            text.compare(pos, 2, "\\u") == 0) {
          pos += 2;
          unsigned low;
          if (!hex4(low))
            return false;
          if (low >= 0xDC00 && low < 0xE000)
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return fail(std::string("bad escape \\") + e);
      }
    }
    if (pos >= text.size())
      return fail("unterminated string");
    ++pos; // the closing quote
    return true;
  }
  bool parseValue(Value &out, int depth) {
    if (depth > 200)
      return fail("nested too deeply");
    if (pos >= text.size())
      return fail("expected a value");
    char c = text[pos];
    if (c == '{') {
      out.kind = Value::Object;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      for (;;) {
        skipSpace();
        if (pos >= text.size() || text[pos] != '"')
          return fail("expected a member name");
        std::string key;
        if (!parseString(key))
          return false;
        skipSpace();
        if (pos >= text.size() || text[pos] != ':')
          return fail("expected ':'");
        ++pos;
        skipSpace();
        if (!parseValue(out.object[key], depth + 1))
          return false;
        skipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < text.size() && text[pos] == '}') {
          ++pos;
          return true;
        }
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out.kind = Value::Array;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      for (;;) {
        skipSpace();
        out.array.emplace_back();
        if (!parseValue(out.array.back(), depth + 1))
          return false;
        skipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < text.size() && text[pos] == ']') {
          ++pos;
          return true;
        }
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out.kind = Value::String;
      return parseString(out.string);
    }
    if (literal("true") || literal("false")) {
      out.kind = Value::Bool;
      out.boolean = text[pos - 1] == 'e' && text[pos - 2] == 'u'; // "true"
      return true;
    }
    if (literal("null")) {
      out.kind = Value::Null;
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const char *begin = text.c_str() + pos;
      char *end = nullptr;
      out.kind = Value::Number;
      out.number = std::strtod(begin, &end);
      if (end == begin)
        return fail("bad number");
      pos += static_cast<size_t>(end - begin);
      return true;
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  const std::string &text;
  size_t pos = 0;
  std::string message;
};

} // namespace

bool parse(const std::string &text, Value &out, std::string &error) {
  out = Value();
  return Parser(text).parseDocument(out, error);
}

std::string quote(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string number(double value, int digits) {
  if (!std::isfinite(value))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return buf;
}

bool readFile(const std::string &path, std::string &text, std::string &error) {
  // A regular file only (a FIFO would block), read up to its size.
  uint64_t size = 0;
  const char *why = "";
  int fd = kiln_open_regular_file(path.c_str(), &size, &why);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + why;
    return false;
  }
  text.assign(static_cast<size_t>(size), '\0');
  int rc = size ? kiln_read_file_range(fd, 0, size, &text[0], &why) : 0;
  close(fd);
  if (rc != 0) {
    error = "cannot read '" + path + "': " + why;
    return false;
  }
  return true;
}

bool writeFile(const std::string &path, const std::string &text,
               std::string &error) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  size_t written = std::fwrite(text.data(), 1, text.size(), f);
  int err = errno;
  if (std::fclose(f) != 0 && written == text.size()) {
    err = errno;
    written = 0;
  }
  if (written != text.size()) {
    error = "cannot write '" + path + "': " + std::strerror(err);
    return false;
  }
  return true;
}

} // namespace kiln::json
