"""Phase 4 tests: each optimization is checked on real compiler output, before and after.

"Before" is StableHLO (what JAX hands to XLA), "after" the optimized HLO. Counts are by opcode
over every computation (fusion moves ops into fused computations; it does not delete them).
Pass names are never written here: the true answer is read from a per-pass dump made in this run.
"""

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from xla_inspect import passes
from xla_inspect.jaxpr import primitive_census
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import dots, fusions, opcode_counts
from xla_inspect.stablehlo import StableHloError, stablehlo_op_census

ARITHMETIC = ("add", "subtract", "multiply", "divide")
# StableHLO ops that are plumbing or constants, not work on data.
SHLO_PLUMBING = {"func.func", "func.return", "func.call", "stablehlo.constant",
                 "stablehlo.broadcast_in_dim"}
PASS_FILE = re.compile(r"module_\d+\..+?\.(?P<seq>\d{4})\.[^.]+\.after_(?P<name>.+?)"
                       r"(?:\.before_.+)?\.txt")


def _x(n=8, seed=0):
    return np.random.default_rng(seed).uniform(0.1, 1.0, size=n).astype(np.float32)


def _qk():
    rng = np.random.default_rng(1)
    return (rng.normal(size=(8, 16)).astype(np.float32),
            rng.normal(size=(8, 16)).astype(np.float32))


def _counts(hlo_text: str) -> Counter:
    """Opcode counts over every instruction of every computation."""
    return opcode_counts(parse_hlo(hlo_text))


def _compile(f, *args):
    """(StableHLO census, optimized HLO text) of one kata program; never cached."""
    lowered = jax.jit(f).lower(*args)
    return stablehlo_op_census(lowered.as_text()), lowered.compile().as_text()


def _require_cpu(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact}")


# --- test-owned programs: the canonical form of each optimization -------------------------

def _canon_identity(x):
    return (x * 1.0 + 0.0) / 1.0


def _canon_folded(x):
    return x / jnp.sqrt(2.0)


def _canon_cse(a, b, c, d):
    return (a + b) * c + (a + b) * d


def _canon_dead(x):
    return jnp.where(True, x + 1.0, jnp.exp(x))


def _canon_chain(x):
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0)


def _canon_attention(q, k):
    return q @ k.T


def _canon_refused(x):
    return x * 2.0 * 3.0, x - x


def _cse_args():
    return tuple(_x(seed=s) for s in range(4))


DUMPED = {  # program, args, the opcode the optimization removes or adds
    "transpose": (_canon_attention, _qk(), "transpose", passes.first_pass_removing),
    "fusion": (_canon_chain, (_x(),), "fusion", passes.first_pass_adding),
    "add": (_canon_cse, _cse_args(), "add", passes.first_pass_removing),
    "divide": (_canon_folded, (_x(),), "divide", passes.first_pass_removing),
    "refused": (_canon_refused, (_x(),), "fusion", passes.first_pass_adding),
}


def _true_timeline(dump_dir: Path) -> list[tuple[str, Counter]]:
    found = sorted((int(m["seq"]), m["name"], p) for p in dump_dir.iterdir()
                   if (m := PASS_FILE.fullmatch(p.name)))
    return [(name, _counts(p.read_text())) for _, name, p in found]


def _culprit(dump, opcode, finder) -> str | None:
    """The pass that changed `opcode`, as xla_inspect.passes reads it off the dump."""
    step = finder(dump["steps"], opcode)
    return step.pass_name if step else None


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """Per-pass dumps of the test-owned programs, made once per test module run."""
    made = {}
    for key, (program, args, _, _) in DUMPED.items():
        directory = tmp_path_factory.mktemp(f"passes_{key}")
        lowered = jax.jit(program).lower(*args)
        compiled = lowered.compile(compiler_options={
            "xla_dump_to": str(directory), "xla_dump_hlo_as_text": True,
            "xla_dump_hlo_pass_re": ".*"})
        timeline = _true_timeline(directory)
        assert timeline, f"XLA wrote no per-pass files for {key} into {directory}"
        made[key] = {"dir": directory, "timeline": timeline,
                     "steps": passes.pass_timeline(directory),
                     "before": _counts(lowered.as_text(dialect="hlo")),
                     "after": _counts(compiled.as_text())}
    return made


# --- task 1: stages ----------------------------------------------------------------------

@pytest.mark.task("stages")
def test_stages_before_is_stablehlo_after_is_optimized(kata):
    before, after = kata.stages(_canon_cse, *_cse_args())
    try:
        shlo = stablehlo_op_census(before)
    except StableHloError as error:
        pytest.fail(f"before: expected StableHLO (an MLIR module), got text that is not: {error}",
                    pytrace=False)
    hlo = _counts(after)
    with check:
        assert shlo["stablehlo.add"] == 3, f"before: stablehlo.add x{shlo['stablehlo.add']}, want 3"
    with check:
        assert hlo["add"] == 2, f"after: add x{hlo['add']}, want 2 (CSE ran: is it optimized?)"
    with check:
        assert hlo["fusion"] >= 1, "after: no fusion, so this is not the optimized module"


def _pin(kata, hlo_snapshot, program, *args):
    _, after = kata.stages(program, *args)
    hlo_snapshot(normalize_hlo(after))


@pytest.mark.task("stages")
def test_pinned_algebraic_identity(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_identity, _x())


@pytest.mark.task("stages")
def test_pinned_constant_folding(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_folded, _x())


@pytest.mark.task("stages")
def test_pinned_cse(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_cse, *_cse_args())


@pytest.mark.task("stages")
def test_pinned_dead_code(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_dead, _x())


@pytest.mark.task("stages")
def test_pinned_loop_fusion(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_chain, _x())


@pytest.mark.task("stages")
def test_pinned_transpose_folding(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_attention, *_qk())


@pytest.mark.task("stages")
def test_pinned_refused_rewrites(kata, hlo_snapshot):
    _pin(kata, hlo_snapshot, _canon_refused, _x())


# --- tasks 2-8: demonstrations -------------------------------------------------------------

@pytest.mark.task("algebraic_identity")
def test_algebraic_identity_disappears(kata):
    x = _x()
    out = np.asarray(kata.algebraic_identity(x))
    shlo, optimized = _compile(kata.algebraic_identity, x)
    hlo = _counts(optimized)
    before = sum(shlo[f"stablehlo.{op}"] for op in ARITHMETIC)
    after = {op: hlo[op] for op in ARITHMETIC if hlo[op]}
    with check:
        np.testing.assert_allclose(out, x, rtol=0, atol=0)
    with check:
        assert before >= 2, f"StableHLO has {before} arithmetic ops, want at least 2"
    with check:
        assert not after, f"optimized HLO still computes {after}: not an identity XLA removes"


@pytest.mark.task("folded_scale")
def test_folded_scale_becomes_a_multiply(kata):
    x = _x()
    out = np.asarray(kata.folded_scale(x))
    shlo, optimized = _compile(kata.folded_scale, x)
    hlo = _counts(optimized)
    with check:
        np.testing.assert_allclose(out, x / np.sqrt(np.float32(2)), rtol=1e-6)
    with check:
        assert shlo["stablehlo.sqrt"] >= 1, "no stablehlo.sqrt: Python folded it, not XLA"
    with check:
        assert shlo["stablehlo.divide"] >= 1 and shlo["stablehlo.multiply"] == 0, (
            f"before: divide x{shlo['stablehlo.divide']}, multiply x{shlo['stablehlo.multiply']};"
            " want a divide and no multiply (XLA must write the multiply, not you)")
    with check:
        assert hlo["sqrt"] == 0 and hlo["divide"] == 0, (
            f"optimized: sqrt x{hlo['sqrt']}, divide x{hlo['divide']}; want none")
    with check:
        assert hlo["multiply"] == 1, f"optimized: multiply x{hlo['multiply']}, want 1"


@pytest.mark.task("shared_subexpression")
def test_cse_removes_the_repeated_add(kata):
    a, b, c, d = _cse_args()
    out = np.asarray(kata.shared_subexpression(a, b, c, d))
    jaxpr_adds = primitive_census(jax.make_jaxpr(kata.shared_subexpression)(a, b, c, d))["add"]
    _, optimized = _compile(kata.shared_subexpression, a, b, c, d)
    hlo_adds = _counts(optimized)["add"]
    with check:
        np.testing.assert_allclose(out, (a + b) * c + (a + b) * d, rtol=1e-6)
    with check:
        assert jaxpr_adds == 3, f"jaxpr: add x{jaxpr_adds}, want 3 (a+b written twice)"
    with check:
        assert hlo_adds == 2, f"optimized: add x{hlo_adds}, want 2"


@pytest.mark.task("dead_branch")
def test_dead_exp_survives_lowering_then_dies(kata):
    x = _x()
    out = np.asarray(kata.dead_branch(x))
    shlo, optimized = _compile(kata.dead_branch, x)
    hlo = _counts(optimized)
    with check:
        np.testing.assert_allclose(out, x + 1, rtol=1e-6)
    with check:
        assert shlo["stablehlo.exponential"] >= 1, (
            "no stablehlo.exponential: JAX dropped the exp before XLA saw it")
    with check:
        assert hlo["exponential"] == 0, f"optimized: exponential x{hlo['exponential']}, want 0"


@pytest.mark.task("elementwise_chain")
def test_chain_is_one_loop_fusion(kata):
    _require_cpu("fusion decisions and kinds are the CPU backend's")
    x = _x()
    out = np.asarray(kata.elementwise_chain(x))
    shlo, optimized = _compile(kata.elementwise_chain, x)
    work = sum(n for op, n in shlo.items() if op not in SHLO_PLUMBING)
    module = parse_hlo(optimized)
    entry_ops = opcode_counts(module, entry_only=True)
    del entry_ops["parameter"]
    found = fusions(module)
    fused = sum((f.opcodes for f in found), Counter())
    for plumbing in ("parameter", "constant", "broadcast"):
        del fused[plumbing]
    with check:
        assert out.shape == x.shape, f"shape {out.shape}, want {x.shape}"
    with check:
        assert work >= 4, f"StableHLO has {work} ops doing work, want at least 4"
    with check:
        assert entry_ops == Counter(fusion=1), f"ENTRY computes {dict(entry_ops)}, want one fusion"
    with check:
        assert [f.kind for f in found] == ["kLoop"], "want one kind=kLoop fusion"
    with check:
        assert sum(fused.values()) >= 4, f"the fusion holds {dict(fused)}, want 4+ ops"


@pytest.mark.task("attention_scores")
def test_transpose_folds_into_the_dot(kata):
    q, k = _qk()
    out = np.asarray(kata.attention_scores(q, k))
    jaxpr_transposes = primitive_census(jax.make_jaxpr(kata.attention_scores)(q, k))["transpose"]
    _, optimized = _compile(kata.attention_scores, q, k)
    module = parse_hlo(optimized)
    transposes = opcode_counts(module)["transpose"]
    contracting = [d.rhs_contracting_dims for d in dots(module)]
    with check:
        np.testing.assert_allclose(out, q @ k.T, rtol=1e-5, atol=1e-5)
    with check:
        assert jaxpr_transposes >= 1, "jaxpr has no transpose: nothing for XLA to fold"
    with check:
        assert transposes == 0, f"optimized: transpose x{transposes}, want 0"
    if jax.default_backend() == "cpu":  # GPU and TPU lower dots to library calls
        with check:
            assert contracting == [(1,)], (
                f"rhs_contracting_dims {contracting}: want one dot contracting k's dim 1 in place")


@pytest.mark.task("refused_rewrites")
def test_xla_keeps_float_rewrites_it_may_not_do(kata):
    x = _x()
    scaled, zero = (np.asarray(v) for v in kata.refused_rewrites(x))
    _, optimized = _compile(kata.refused_rewrites, x)
    hlo = _counts(optimized)
    with check:
        np.testing.assert_allclose(scaled, x * 6, rtol=1e-6)
    with check:
        np.testing.assert_array_equal(zero, np.zeros_like(x))
    with check:
        assert hlo["multiply"] == 2, (
            f"optimized: multiply x{hlo['multiply']}, want 2 (no reassociation)")
    with check:
        assert hlo["subtract"] == 1, f"optimized: subtract x{hlo['subtract']}, want 1 (x-x kept)"


# --- tasks 9-11: the per-pass dump -----------------------------------------------------------

@pytest.mark.task("pass_timeline")
def test_timeline_matches_the_dump(kata, dumps):
    for key, dump in dumps.items():
        timeline = kata.pass_timeline(str(dump["dir"]))
        names = [name for name, _ in timeline]
        with check:
            assert names == [name for name, _ in dump["timeline"]], f"{key}: pass names {names}"
        with check:
            assert [dict(c) for _, c in timeline] == [dict(c) for _, c in dump["timeline"]], (
                f"{key}: opcode counts differ from the files'")


@pytest.mark.task("pass_timeline")
def test_timeline_runs_from_unoptimized_to_optimized(kata, dumps):
    for key, dump in dumps.items():
        timeline = kata.pass_timeline(str(dump["dir"]))
        with check:
            assert timeline and timeline[0][1] == dump["before"], (
                f"{key}: first entry is not the module XLA started from")
        with check:
            assert timeline and timeline[-1][1] == dump["after"], (
                f"{key}: last entry is not the optimized module")


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_names_the_culprit(kata, dumps):
    for key, dump in dumps.items():
        _, _, opcode, finder = DUMPED[key]
        truth = _culprit(dump, opcode, finder)
        dumped_names = {m["name"] for p in dump["dir"].iterdir()
                        if (m := PASS_FILE.fullmatch(p.name))}
        assert truth in dumped_names, f"{key}: the dump shows no pass changing {opcode}"
        got = kata.pass_that_changed(dump["timeline"], opcode)
        with check:
            assert got == truth, f"{key}: {opcode} changed by {truth!r} (per the dump), got {got!r}"


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_is_none_for_untouched_ops(kata, dumps):
    for key, opcode in (("transpose", "dot"), ("refused", "subtract"), ("add", "multiply")):
        deltas = [s.pass_name for s in dumps[key]["steps"] if s.opcode_deltas.get(opcode)]
        assert not deltas, f"{key}: the dump shows {deltas} changing {opcode}"
        got = kata.pass_that_changed(dumps[key]["timeline"], opcode)
        with check:
            assert got is None, f"{key}: no pass changes {opcode}, got {got!r}"


@pytest.mark.task("named_passes")
def test_named_passes_match_the_dump(kata, dumps):
    _require_cpu("the pass pipeline and pass names are the CPU compiler's")
    answers = kata.named_passes()
    for key in ("transpose", "fusion", "add", "divide"):
        _, _, opcode, finder = DUMPED[key]
        truth = _culprit(dumps[key], opcode, finder)
        with check:
            assert answers.get(key) == truth, (
                f"{key}: the dump says {truth!r}, got {answers.get(key)!r}")
