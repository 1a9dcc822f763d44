"""Phase 12 tests, fused_dense's values in the program XLA:GPU is given.

The layer is traced for CUDA exactly as the kernel count compiles it (arguments placed on the
gpu-h100 target), exported with jax.export, and that CUDA program is run on this host's CPU: a
function that gives CPU one program and CUDA another (jax.lax.platform_dependent) is checked on
the one the GPU would run. Expected values come from programs.handwritten_gelu_dense on the same
freshly drawn inputs.
"""

import dataclasses

import jax
import numpy as np
import pytest

from kata_harness.targets import require
from katas.phase12.programs import DENSE_CASES, handwritten_gelu_dense, sds


def _as_lowered_for_cuda(fn, case: str):
    """fn traced and lowered for CUDA (as the gpu-h100 compile sees it), runnable on this CPU."""
    placed = [require("gpu-h100").place(sds(s, d)) for s, d in DENSE_CASES[case]]
    try:
        exported = jax.export.export(jax.jit(fn), platforms=("cuda",))(*placed)
    except Exception as error:  # noqa: BLE001  (JAX refusing the program is the answer's fault)
        raise AssertionError(f"{case}: JAX cannot lower it for CUDA ({error!r:.300})") from error
    # The exported module is plain StableHLO: the same program runs on CPU.
    return dataclasses.replace(exported, platforms=("cpu",)).call


@pytest.mark.task("fused_dense")
@pytest.mark.parametrize("case", sorted(DENSE_CASES))
def test_fused_dense_values_of_the_cuda_program(kata, fresh, case):
    run = _as_lowered_for_cuda(kata.fused_dense, case)
    seed = fresh.randrange(1 << 32)
    rng = np.random.default_rng(seed)
    args = tuple(rng.normal(size=s).astype(d) for s, d in DENSE_CASES[case])
    got = np.asarray(run(*args), np.float32)
    want = np.asarray(jax.jit(handwritten_gelu_dense)(*args), np.float32)
    assert got.shape == want.shape, f"{case}: shape {got.shape}, expected {want.shape}"
    loose = args[0].dtype != np.float32
    np.testing.assert_allclose(
        got,
        want,
        rtol=5e-2 if loose else 1e-5,
        atol=5e-2 if loose else 1e-5,
        err_msg=f"{case} ({fresh.where()}): the program lowered for CUDA computes other values",
    )
