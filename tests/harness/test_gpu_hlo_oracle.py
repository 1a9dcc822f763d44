"""kata_harness.oracles.gpu_hlo.gemm_kernels on recorded XLA:GPU modules: the GEMM kernels
(Triton GEMM fusions by label, cuBLAS calls by target) wherever they sit, and nothing else."""

import re

from kata_harness.oracles import gpu_hlo
from kata_harness.targets import recorded


def test_gemm_kernels_counts_cublas_calls_by_target():
    text = recorded("phase12", "mlp_cublas")
    targets = re.findall(r'custom_call_target="(__cublas\$[^"]*)"', text)
    assert targets, "the recording holds cuBLAS calls"
    kernels = gpu_hlo.gemm_kernels(text)
    assert sum(kernels.values()) == len(targets)
    assert set(kernels) == set(targets)


def test_gemm_kernels_counts_triton_gemm_fusions_by_label():
    text = recorded("phase12", "mlp_triton")
    kernels = gpu_hlo.gemm_kernels(text)
    assert kernels and all(k.startswith("kCustom(") and "gemm" in k for k in kernels)
    assert "__cublas$" not in "".join(kernels)


def test_gemm_kernels_of_a_module_without_gemms():
    assert not gpu_hlo.gemm_kernels(recorded("phase12", "conv_h100"))
