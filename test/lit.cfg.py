# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "Runtime", "Unit", "CompilerAPI", "python", "CMakeLists.txt", "model_util.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%kiln_bin", os.path.join(config.kiln_obj_root, "bin")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", os.path.join(config.kiln_obj_root, "bin"), append_path=True)
# The Python tests import the project's script package (python/kiln_tools).
llvm_config.with_environment("PYTHONPATH", os.path.join(config.kiln_src_root, "python"),
                             append_path=True)

# The model tests (test/models) export torchvision/torch.nn networks: they need
# torch (Debian's python3-torch, installed by utils/setup.sh).
import subprocess
if subprocess.run([config.python_executable, "-c", "import torch, torchvision"],
                  capture_output=True).returncode == 0:
    config.available_features.add("torch")

# Compiling for cuda assembles the cubin with the CUDA toolkit's ptxas
# (/usr/local/cuda, present on this machine's image; docs/gpu.md).
if os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("ptxas")
    # MLIR's NVVM target finds libdevice (which the math functions of
    # kernels assembled by ptxas need) through CUDA_HOME, as for kilnc.
    config.environment.setdefault(
        "CUDA_HOME", os.environ.get("CUDA_HOME", "/usr/local/cuda"))

# nvdisasm (pip's nvidia-cuda-nvdisasm, python/requirements.txt) shows the
# SASS that ptxas made of the PTX (Inputs/ptxas_notes.py --sass).
_nvdisasm = subprocess.run(
    [config.python_executable, "-c",
     "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin', 'nvdisasm'))"],
    capture_output=True, text=True).stdout.strip()
if _nvdisasm and os.access(_nvdisasm, os.X_OK):
    config.available_features.add("nvdisasm")
    config.environment["KILN_NVDISASM"] = _nvdisasm
