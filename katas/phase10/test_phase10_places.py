"""Phase 10 tests, tasks 3 and 5 where the work is not all in ENTRY: fusions in the branches of a
lax.switch, in a conditional inside a while body, in a while inside a conditional branch and in
nested loops; and the flops the cost model gives those programs (a loop body counted as the cost
model counts it, not scaled by its trip count).

Fresh widths, batches, dtypes, branch counts and trip counts (the ``fresh`` fixture). Oracles
(kata_harness.oracles.training): XLA's own parser's count of fusion instructions, the compiled
program's ``cost_analysis()``, and the parsed module (where the fusions and loops are).
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import training as oracle
from katas.phase10.programs import (
    branch_with_a_loop,
    loop_with_a_branch,
    nested_loops,
    switch_program,
)

_DTYPES = {"float32": np.float32, "bfloat16": jnp.bfloat16}


@cache
def _compiled(program: tuple, batch: int, width: int, dtype: str, seed: int):
    """The program named by ``(kind, counts...)`` compiled for h [batch, width] of ``dtype``."""
    kind, *counts = program
    factory = {
        "switch": switch_program,
        "loop with a branch": loop_with_a_branch,
        "branch with a loop": branch_with_a_loop,
        "nested loops": nested_loops,
    }[kind]
    rng = np.random.default_rng(seed)
    w = (rng.normal(size=(width, width)) / width).astype(_DTYPES[dtype])
    h = rng.normal(size=(batch, width)).astype(_DTYPES[dtype])
    args = (w, h, np.int32(rng.integers(counts[0]))) if kind == "switch" else (w, h)
    return jax.jit(factory(*counts)).lower(*args).compile()


def _drawn(fresh, kinds: tuple[str, ...]):
    """(label, compiled program) for each kind, with fresh sizes, dtype and counts."""
    batch, width = fresh.randint(1, 7), fresh.randint(2, 9)
    dtype, seed = fresh.choice(sorted(_DTYPES)), fresh.getrandbits(16)
    trips = {
        "switch": (fresh.randint(2, 4),),
        "loop with a branch": (fresh.randint(2, 5),),
        "branch with a loop": (fresh.randint(2, 5),),
        "nested loops": (fresh.randint(2, 4), fresh.randint(2, 4)),
    }
    for kind in kinds:
        program = (kind, *trips[kind])
        label = f"{kind} {trips[kind]}, h {dtype}[{batch},{width}] ({fresh.where()})"
        yield kind, label, _compiled(program, batch, width, dtype, seed)


@pytest.mark.task("fusion_count")
def test_fusions_in_branches_and_loops(kata, fresh):
    kinds = ("switch", "loop with a branch", "branch with a loop", "nested loops")
    for kind, label, compiled in _drawn(fresh, kinds):
        if kind != "nested loops":  # the case tests the place only if a branch holds a fusion
            assert oracle.branch_fusions(compiled) > 0, f"{label}: no fusion in a branch"
        got = kata.fusion_count(compiled)
        want = oracle.xla_fusion_count(compiled)
        with check:
            assert got == want, (
                f"{label}: got {got}, XLA's parser finds {want} fusion instructions (conditional "
                "branches and loop bodies are computations too)"
            )


@pytest.mark.task("flops_per_step")
def test_flops_of_loops_follow_the_cost_model(kata, fresh):
    kinds = ("loop with a branch", "branch with a loop", "nested loops")
    for _, label, compiled in _drawn(fresh, kinds):
        cost = compiled.cost_analysis()
        assert isinstance(cost, dict) and cost.get("flops", 0.0) > 0, f"{label}: no flops"
        assert oracle.opcodes(compiled)["while"] > 0, f"{label}: XLA unrolled the loop"
        got = kata.flops_per_step(compiled)
        with check:
            assert got == pytest.approx(cost["flops"]), (
                f"{label}: got {got}, the cost model says {cost['flops']} flops (as it counts "
                "them: a loop's body is not scaled by its trip count)"
            )
