"""Phase 15 tests of matmul_flops (a reading task): multiply-add flops read from the names of an
IREE flow listing's dispatches.

The listings are the recorded ones (katas/phase15/recorded/, programs.FLOWS), read as printed, with
their function renamed, with their executables reordered and with their dispatches renumbered
(indices of two digits, one a prefix of others), and, with the ``iree`` group, listings of
freshly drawn programs compiled now, as printed and renumbered (one of sizes whose work passes
2**31). Expected values come from the
dot_generals of the program's jaxpr, never from the listing's names.
"""

from __future__ import annotations

import math
import random
import re

import jax
import jax.numpy as jnp
import pytest
from pytest_check import check

from kata_harness import iree
from katas.phase15.draws import (
    bf16,
    f32,
    flow_forms,
    flow_listing,
    normal,
    recorded,
    renumbered_dispatches,
)
from katas.phase15.programs import (
    FLOWS,
    Flow,
    attention,
    mlp,
)

# ---- matmul_flops (read) -------------------------------------------------------------------


def _jaxpr_dot_flops(fn, args) -> int:
    """2 * output elements * contracted size for every dot_general of fn's jaxpr (sub-jaxprs
    included): the program's matmul work, known without IREE."""
    total = 0
    pending = [jax.make_jaxpr(fn)(*args).jaxpr]
    while pending:
        jaxpr = pending.pop()
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                (contract, _), _ = eqn.params["dimension_numbers"]
                lhs = getattr(eqn.invars[0].aval, "shape")  # noqa: B009  (AbstractValue in stubs)
                out = getattr(eqn.outvars[0].aval, "shape")  # noqa: B009
                dims = [*out, *(lhs[d] for d in contract)]
                if all(isinstance(d, int) for d in dims):  # a symbolic size: no known work
                    total += 2 * math.prod(dims)
            for value in eqn.params.values():
                for inner in value if isinstance(value, list | tuple) else [value]:
                    sub = getattr(inner, "jaxpr", inner)
                    if hasattr(sub, "eqns"):
                        pending.append(sub)
    return total


@pytest.mark.task("matmul_flops")
def test_matmul_flops_of_recorded_listings(kata):
    rng = random.Random(15)
    for name, program in sorted(FLOWS.items()):
        expected = _jaxpr_dot_flops(program.fn, program.args())
        for what, text in flow_forms(name, recorded(name), rng):
            got = kata.matmul_flops(text)
            assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: the program's dot_generals do {expected}, got {got}"
                )


def _fresh_contractions(rng: random.Random) -> list[tuple[str, Flow]]:
    m, n, k, b = (rng.randint(2, 96) for _ in range(4))
    q, kv, d = rng.randint(2, 40), rng.randint(2, 40), rng.randint(2, 64)
    dtype = rng.choice([f32, bf16])
    # sizes whose work passes 2**31 (and 2**32 on most draws): a count in 32-bit ints wraps, one
    # in float32 rounds; odd sizes, so that the count is not a round number (only shapes are
    # compiled, nothing is allocated)
    big = [2 * rng.randint(550, 2000) + 1 for _ in range(3)]
    return [
        (
            "mlp",
            Flow(
                "mlp", mlp, (((m, k), f32), ((k, n), f32), ((n,), f32), ((n, b), f32), ((b,), f32))
            ),
        ),
        (
            "attention",
            Flow(
                "attention",
                attention,
                (((b % 7 + 2, q, d), f32), ((b % 7 + 2, kv, d), f32), ((b % 7 + 2, kv, d), f32)),
            ),
        ),
        ("matvec", Flow("m @ v", lambda a, v: a @ v, (((m, k), dtype), ((k,), dtype)))),
        ("vecmat", Flow("v @ a", lambda v, a: v @ a, (((k,), f32), ((k, n), f32)))),
        (
            "mixed",
            Flow(
                "bf16 matmul into f32",
                lambda a, c: jnp.dot(a, c, preferred_element_type=f32),
                (((m, k), bf16), ((k, n), bf16)),
            ),
        ),
        (
            "three projections of one shape",  # IREE: one executable, dispatched three times
            Flow(
                "x @ wq, x @ wk, x @ wv",
                lambda x, wq, wk, wv: (x @ wq, x @ wk, x @ wv),
                (((big[0], big[1]), f32), *[((big[1], big[2]), f32)] * 3),
            ),
        ),
        (
            "two bodies of one shape",  # two executables whose names differ only in the index
            Flow(
                "tanh(x @ w1), y @ w2",
                lambda x, y, w1, w2: (jnp.tanh(x @ w1), y @ w2),
                (((m, k), f32), ((m, k), f32), ((k, n), f32), ((k, n), f32)),
            ),
        ),
        (
            "matmuls in both branches of a lax.cond",  # IREE: dispatches inside an scf.if
            Flow(
                "cond(p > 0, x @ w, 2 * (x @ w))",
                lambda p, x, w: jax.lax.cond(p[0] > 0, lambda: x @ w, lambda: 2 * (x @ w)),
                (((1,), f32), ((m, k), f32), ((k, n), f32)),
            ),
        ),
        (
            "a matmul in a while_loop body",  # IREE: a dispatch inside an scf.while
            Flow(
                "while i < 3: x = tanh(x @ w)",
                lambda x, w: jax.lax.while_loop(
                    lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.tanh(c[1] @ w)), (0, x)
                )[1],
                (((m, k), f32), ((k, k), f32)),
            ),
        ),
    ]


@pytest.mark.timeout(120)
@pytest.mark.task("matmul_flops")
def test_matmul_flops_of_fresh_programs(kata, fresh):
    iree.require()
    for name, program in _fresh_contractions(fresh):
        args = program.args()
        text = flow_listing(program.fn, *args)
        expected = _jaxpr_dot_flops(program.fn, args)
        shapes = [f"{a.dtype}{list(a.shape)}" for a in args]
        how, renumbered = renumbered_dispatches(text, fresh)
        for form, listing in [("as printed", text), (f"dispatches renumbered {how}", renumbered)]:
            got = kata.matmul_flops(listing)
            with check:
                assert got == expected, (
                    f"{name} {shapes}, {form} ({fresh.where()}): expected {expected}, got {got}"
                )


def _other_contraction_kinds(rng: random.Random):
    """(what, f, args, counted, kind): a contraction IREE names with a kind other than the four
    the contract counts (a batched matrix-vector product and a row-wise dot are `matvec_like`,
    the latter with a matvec's two dims; a vector dot is `dot`) next to a plain matmul;
    ``counted`` is the plain matmul alone, whose work is what counts."""
    m, n, k = rng.randint(2, 64), rng.randint(2, 64), rng.randint(2, 64)
    b, i, j = rng.randint(2, 8), rng.randint(2, 32), rng.randint(2, 48)
    x, w = normal(rng, (m, k)), normal(rng, (k, n))

    def matmul(x, w):
        return x @ w

    spelling = rng.choice(["bij,bj->bi", "bi,bij->bj"])
    a, v = normal(rng, (b, i, j)), normal(rng, (b, i if spelling == "bi,bij->bj" else j))
    operands = (v, a) if spelling == "bi,bij->bj" else (a, v)
    yield (
        f"einsum {spelling} {list(a.shape)} next to [{m},{k}] @ [{k},{n}]",
        lambda p, q, x, w, s=spelling: (jnp.einsum(s, p, q), matmul(x, w)),
        [*operands, x, w],
        (matmul, [x, w]),
        "matvec_like",
    )
    u, t = normal(rng, (j,)), normal(rng, (j,))
    yield (
        f"vector dot [{j}] . [{j}] next to [{m},{k}] @ [{k},{n}]",
        lambda u, t, x, w: (u @ t, matmul(x, w)),
        [u, t, x, w],
        (matmul, [x, w]),
        "dot",
    )
    rows = rng.randint(2, 64)
    r, s = normal(rng, (rows, j)), normal(rng, (rows, j))
    yield (  # two dims, as a matvec's: only the kind tells them apart
        f"row-wise dot einsum ij,ij->i [{rows},{j}] next to [{m},{k}] @ [{k},{n}]",
        lambda r, s, x, w: (jnp.einsum("ij,ij->i", r, s), matmul(x, w)),
        [r, s, x, w],
        (matmul, [x, w]),
        "matvec_like",
    )


@pytest.mark.timeout(120)
@pytest.mark.task("matmul_flops")
def test_matmul_flops_counts_only_the_four_kinds(kata, fresh):
    iree.require()
    for what, fn, args, (counted, counted_args), kind in _other_contraction_kinds(fresh):
        text = flow_listing(fn, *args)
        assert re.search(rf"_dispatch_\d+_{kind}_\d", text), f"{what}: IREE named no {kind}"
        expected = _jaxpr_dot_flops(counted, counted_args)
        got = kata.matmul_flops(text)
        with check:
            assert got == expected, (
                f"{what} ({fresh.where()}): IREE names the first `{kind}`, which counts 0; the "
                f"matmul does {expected}, got {got}"
            )


def _batch_polymorphic_contractions(rng: random.Random):
    """(what, f, args): matmuls on a symbolic batch (IREE names their dispatches with a `D`)
    next to matmuls of static sizes, in one program."""
    (batch,) = jax.export.symbolic_shape("batch")
    d, h, o = rng.randint(2, 96), rng.randint(2, 96), rng.randint(2, 48)

    def dense_and_static(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2, w1 @ w2

    yield (
        f"f32[batch,{d}] @ [{d},{h}] @ [{h},{o}], and [{d},{h}] @ [{h},{o}]",
        dense_and_static,
        [jax.ShapeDtypeStruct(s, f32) for s in [(batch, d), (d, h), (h, o)]],
    )
    # (x @ v for a vector v on a symbolic batch: IREE 3.13.0 refuses its `tensor<?x1xf32>`
    # reshape, so there is no dynamic matvec here.)


@pytest.mark.timeout(120)
@pytest.mark.task("matmul_flops")
def test_matmul_flops_with_a_symbolic_batch(kata, fresh):
    iree.require()
    for what, fn, args in _batch_polymorphic_contractions(fresh):
        text = flow_listing(fn, *args)
        expected = _jaxpr_dot_flops(fn, args)
        got = kata.matmul_flops(text)
        with check:
            assert got == expected, (
                f"{what} ({fresh.where()}): a dispatch with a dynamic size counts 0; the static "
                f"ones do {expected}, got {got}"
            )


@pytest.mark.task("matmul_flops")
def test_matmul_flops_counts_no_other_kind(kata):
    text = recorded("layernorm_softmax")
    assert kata.matmul_flops(text) == 0, "reductions and softmax do no matmul work"
