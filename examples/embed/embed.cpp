//===- embed.cpp - A host application that JIT-compiles a model -----------===//
//
// Compiles an ONNX model in-process (kiln-c/compiler.hpp, the compile cache
// in $KILN_CACHE_DIR or the user's cache folder), then runs it from several
// threads at once, each with its own instance, on seeded inputs, and prints
// each thread's first outputs and a checksum. Every input must have a
// static shape, or be fixed with NAME:DxD... arguments (as kilnc --shapes).
//
//   embed model.onnx [--threads N] [--target T] [x:1x3x224x224 ...]
//
//===----------------------------------------------------------------------===//

#include "kiln-c/compiler.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s model.onnx [--threads N] [--target T] "
                 "[NAME:DxD...]\n",
                 argv[0]);
    return 2;
  }
  int threads = 4;
  kiln::CompileOptions options;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--target") && i + 1 < argc)
      options.set("target", argv[++i]);
    else
      options.set("shapes", argv[i]);
  }
  try {
    kiln::Compiler compiler;
    kiln::Model model = compiler.compileFile(argv[1], options);
    auto [hits, misses] = compiler.cacheCounters();
    std::printf("compiled %s (%s; cache %s: %s)\n", argv[1],
                kiln_compiler_version(), compiler.cacheDir().c_str(),
                hits ? "hit" : "miss");
    (void)misses;

    // Seeded inputs of the signature's shapes (floats in [-1, 1]).
    std::vector<std::vector<float>> data;
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < model.numInputs(); ++i) {
      kiln_value_info_t info = model.input(i);
      if (info.dtype != KILN_DTYPE_F32)
        throw kiln::Error(KILN_STATUS_UNIMPLEMENTED,
                          std::string("input '") + info.name +
                              "' is not f32 (this example feeds floats)");
      std::vector<int64_t> shape(info.dims, info.dims + info.rank);
      size_t n = 1;
      for (int64_t d : shape) {
        if (d < 0)
          throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT,
                            std::string("input '") + info.name +
                                "' has a symbolic dim: fix it with " +
                                info.name + ":DxD...");
        n *= d;
      }
      std::mt19937 rng(1234 + i);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::vector<float> v(n);
      for (float &x : v)
        x = u(rng);
      data.push_back(std::move(v));
      shapes.push_back(std::move(shape));
    }

    std::vector<std::string> lines(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          kiln::Instance instance(model);
          std::vector<kiln_tensor_view_t> in;
          for (size_t i = 0; i < data.size(); ++i)
            in.push_back(kiln::view(data[i].data(), shapes[i]));
          std::vector<kiln::Tensor> out = instance.run(in);
          const kiln::Tensor &y = out.at(0);
          double sum = 0;
          const float *p = y.data<float>();
          for (size_t k = 0; k < y.size(); ++k)
            sum += p[k];
          char line[256];
          std::snprintf(line, sizeof(line),
                        "thread %d: output 0 has %zu values, first %.6f, "
                        "sum %.6f",
                        t, y.size(), y.size() ? p[0] : 0.0f, sum);
          lines[t] = line;
        } catch (const kiln::Error &e) {
          lines[t] = "thread " + std::to_string(t) + ": " + e.what();
        }
      });
    for (std::thread &t : pool)
      t.join();
    // The same model and inputs: every thread's line but its number agrees.
    bool same = true;
    for (int t = 0; t < threads; ++t) {
      std::printf("%s\n", lines[t].c_str());
      same &= lines[t].substr(lines[t].find(':')) ==
              lines[0].substr(lines[0].find(':'));
    }
    if (!same) {
      std::fprintf(stderr, "embed: the threads' outputs differ\n");
      return 1;
    }
    std::printf("outputs identical across %d threads\n", threads);
  } catch (const kiln::Error &e) {
    std::fprintf(stderr, "embed: %s\n", e.what());
    return 1;
  }
  return 0;
}
