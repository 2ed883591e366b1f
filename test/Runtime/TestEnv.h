//===- TestEnv.h - Environment variables set for one test ------*- C++ -*-===//
//
// Env sets variables for one test and puts the old values back after it
// (the runtime's documented overrides, the fake driver's modes).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_RUNTIME_TESTENV_H
#define KILN_TEST_RUNTIME_TESTENV_H

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace kiln_test {

/// Sets environment variables for one test and restores them after it.
class Env {
public:
  void set(const char *name, const char *value) {
    save(name);
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~Env() {
    for (auto &[name, value] : saved_) {
      if (value.first)
        setenv(name.c_str(), value.second.c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

private:
  void save(const char *name) {
    for (auto &entry : saved_)
      if (entry.first == name)
        return;
    const char *old = getenv(name);
    saved_.push_back({name, {old != nullptr, old ? old : ""}});
  }
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

} // namespace kiln_test

#endif // KILN_TEST_RUNTIME_TESTENV_H
