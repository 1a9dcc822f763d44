"""Phase 15 tests of iree_verdict (a predict task): what jax.export and IREE do with a jaxpr.

IREE's verdicts come from what each fresh draw's export holds (kata_harness.iree.export_verdict),
checked against IREE's own compile with the ``iree`` group and against the family's verdict
recorded in programs.VERDICTS.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import iree
from kata_harness.predict import compiler_refused
from katas.phase15.kept import PerDraw
from katas.phase15.placements import KEYED_PLACEMENTS, PLACEMENTS, placed
from katas.phase15.programs import (
    BANK,
    KEY_IMPLS,
    SEED_FORMS,
    VERDICTS,
    int_seed,
    key_result,
    typed_key,
)

# ---- iree_verdict (predict) ----------------------------------------------------------------

_PRECEDENCE = ("export", "sdy", "lapack", "runs")


@contextmanager
def _iree_refused():
    """IREE's compile entry points raise while the prediction runs (when IREE is installed)."""
    if iree.missing() is not None:
        yield
        return
    import iree.compiler as compiler  # pyright: ignore[reportMissingImports]  (the iree group)

    def refuse(*_: object, **__: object):
        raise AssertionError("iree_verdict is a prediction: it may not compile with IREE")

    saved = {name: getattr(compiler, name) for name in ("compile_str", "compile_file")}
    for name in saved:
        setattr(compiler, name, refuse)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(compiler, name, value)


_KEYED = ("typed_key", "key_result")  # kept out of loops: no zeros of a key type to start from


def _verdict_cases(rng: random.Random):
    """(what, function, args, the verdict programs.VERDICTS records for it): one draw of every
    family, each wrapped one way, then pairs of families in one function."""
    generator = np.random.default_rng(rng.getrandbits(32))
    names = sorted(BANK)
    for name in names:
        how = rng.choice(KEYED_PLACEMENTS if name in _KEYED else PLACEMENTS)
        fn, args = BANK[name](generator)
        yield f"{name} ({how})", placed(fn, how), args, VERDICTS[name]
    # A key made at the top level from an argument that is not a key, in every form, always:
    # the argument feeds random_seed or random_wrap in the outer jaxpr, yet no key is among the
    # arguments or results (the family's draw above is wrapped one way only).
    for form in sorted(SEED_FORMS):
        fn, args = int_seed(generator, form)
        seed = jax.typeof(args[0]).str_short()
        what = f"int_seed (plain): s: {seed}, x -> jax.random.normal({form}(s), x.shape) + x"
        yield what, fn, args, VERDICTS["int_seed"]
    # A typed key of every PRNG implementation (each its own key dtype), always: among the
    # arguments but not the first, and among the results but not the first.
    for impl in KEY_IMPLS:
        at = rng.randint(1, 2)
        fn, args = key_result(generator, impl, at)
        yield (
            f"key_result (plain): keys of {impl} are result {at} of 3",
            fn,
            args,
            VERDICTS["key_result"],
        )
        fn, args = typed_key(generator, impl, 1)
        yield (
            f"typed_key (plain): a key of {impl} is argument 1 of 2",
            fn,
            args,
            VERDICTS["typed_key"],
        )
    # A refusal (drawn) in every kind of called jaxpr, always: a cond's first branch and a
    # later one, a while's body and its condition, a scan, custom_jvp, custom_vjp, nested.
    refused = [n for n in names if VERDICTS[n] != "runs" and n not in _KEYED]
    for how in PLACEMENTS[3:]:
        name = rng.choice(refused)
        fn, args = BANK[name](generator)
        yield f"{name} ({how})", placed(fn, how), args, VERDICTS[name]
    # Pairs that decide between two refusals, always; then pairs drawn.
    pairs = [("solve", "typed_key"), ("sharding_constraint", "host_callback"), ("eigh", "scan")]
    pairs += [("key_result", "cholesky"), ("pivoted_qr", "sharding_constraint")]
    pairs += [tuple(rng.sample(names, 2)) for _ in range(2)]
    for first, second in pairs:
        f1, a1 = BANK[first](generator)
        f2, a2 = BANK[second](generator)
        split = len(a1)

        def both(*args, f1=f1, f2=f2, split=split):
            return f1(*args[:split]), f2(*args[split:])

        recorded = min(VERDICTS[first], VERDICTS[second], key=_PRECEDENCE.index)
        yield f"{first} with {second}", both, (*a1, *a2), recorded


@pytest.mark.timeout(180)
@pytest.mark.task("iree_verdict")
def test_iree_verdict(kata, fresh):
    verdicts = PerDraw("test_iree_verdict", fresh)
    for at, (what, fn, args, recorded) in enumerate(_verdict_cases(fresh)):
        # What this draw's export holds decides (kata_harness.iree.export_verdict); with the
        # group, IREE itself compiles it too and must agree. Both must match the family's
        # recorded verdict: a family whose draws trace to other operations is a harness bug.
        # (Exported and compiled once per draw: every version of the file draws these cases.)
        expected, seen = verdicts(at, lambda fn=fn, args=args: iree.verdicts(fn, args))
        if seen is not None:
            assert seen == expected, f"{what}: IREE says {seen}, iree.export_verdict otherwise"
        assert expected == recorded, f"{what}: this draw's export is not the family's verdict"
        jaxpr = jax.make_jaxpr(fn)(*args)
        with compiler_refused("iree_verdict"), _iree_refused():
            got = kata.iree_verdict(jaxpr)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): predicted {got!r}"
