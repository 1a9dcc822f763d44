"""Phase 4 tests: each optimization is checked on real compiler output, before and after.

"Before" is StableHLO (what JAX hands to XLA), "after" the optimized HLO. Counts are by opcode
over every computation (fusion moves ops into fused computations; it does not delete them).
Each demonstration runs at several shapes and dtypes (a float32 vector, a matrix, bfloat16):
values are checked against NumPy, the IR at each input.
Pass names are never written here: the true answer is read from a per-pass dump made in this run
(xla_inspect.passes reads it), or built into a timeline the test constructs.
"""

import re
import shutil
import zlib
from collections import Counter
from functools import cache
from pathlib import Path

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import metamorphic, versions
from kata_harness.predict import compiler_refused
from katas.phase4.programs import (
    BANK_INPUT,
    BANK_N,
    BF16,
    DUMPED,
    ELEMENTWISE_INPUTS,
    KERNEL_DTYPES,
    KERNELS,
    PINNED,
    REWRITE_DTYPES,
    REWRITES,
    STAGE_PROGRAMS,
    cse_args,
    pair,
    qk,
    repeated_affine,
    uniform,
)
from xla_inspect import passes
from xla_inspect.errors import HloParseError
from xla_inspect.jaxpr import primitive_census
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import dots, opcode_counts
from xla_inspect.stablehlo import StableHloError, stablehlo_op_census

ARITHMETIC = ("add", "subtract", "multiply", "divide")
# StableHLO ops that are plumbing or constants, not work on data.
SHLO_PLUMBING = {
    "func.func",
    "func.return",
    "func.call",
    "stablehlo.constant",
    "stablehlo.broadcast_in_dim",
    "stablehlo.convert",
}


def _counts(hlo_text: str) -> Counter:
    """Opcode counts over every instruction of every computation."""
    return opcode_counts(parse_hlo(hlo_text))


def _optimized_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def _compile(f, *args):
    """(StableHLO census, optimized HLO text, outputs as NumPy) of one kata program, never cached.

    The outputs come from the compiled executable: no eager op-by-op compiles."""
    lowered = jax.jit(f).lower(*args)
    compiled = lowered.compile()
    out = jax.tree.map(np.asarray, compiled(*args))
    return stablehlo_op_census(lowered.as_text()), _optimized_text(compiled), out


def _tolerance(x):
    return 1e-2 if x.dtype == BF16 else 1e-6


def _same_kind(what, out, x):
    """The output is one array of x's shape and dtype (asserted, so a wrong kind fails here)."""
    assert isinstance(out, np.ndarray), f"{what}: expected one array, got {type(out).__name__}"
    assert out.shape == x.shape and out.dtype == x.dtype, (
        f"{what}: got {out.dtype}{list(out.shape)}, expected {x.dtype}{list(x.shape)}"
    )


def _require_cpu(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact}")


def _culprit(dump, opcode, finder) -> str | None:
    """The pass that changed `opcode`, as xla_inspect.passes reads it off the dump."""
    step = finder(dump["steps"], opcode)
    return step.pass_name if step else None


@pytest.fixture(scope="session")
def dumps(tmp_path_factory):
    """Per-pass dumps of the test-owned programs, made once per session."""
    return _make_dumps(tmp_path_factory.mktemp("passes"))


@cache
def _make_dumps(base: Path) -> dict:
    """ "files" is the dump read file by file: xla_inspect.passes lists the per-pass files in
    sequence order, parse_hlo reads each one; nothing here parses a file name."""
    made = {}
    for key, (program, args, _, _) in DUMPED.items():
        directory = base / key
        directory.mkdir()
        lowered = jax.jit(program).lower(*args)
        compiled = lowered.compile(
            compiler_options={
                "xla_dump_to": str(directory),
                "xla_dump_hlo_as_text": True,
                "xla_dump_hlo_pass_re": ".*",
            }
        )
        files = [(f.pass_name, _counts(f.path.read_text())) for f in passes.pass_files(directory)]
        assert files, f"XLA wrote no per-pass files for {key} into {directory}"
        made[key] = {
            "dir": directory,
            "files": files,
            "steps": passes.pass_timeline(directory),
            "before": _counts(lowered.as_text(dialect="hlo")),
            "after": _counts(_optimized_text(compiled)),
        }
    return made


# --- task 1: stages ----------------------------------------------------------------------


def _stages(kata, f, *args) -> tuple:
    got = kata.stages(f, *args)
    assert isinstance(got, tuple) and len(got) == 2, f"expected (before, after), got {got!r:.80}"
    return got


def _shlo(text: str, what: str) -> Counter:
    try:
        return stablehlo_op_census(text)
    except StableHloError as error:
        pytest.fail(
            f"{what}: expected StableHLO (an MLIR module), got text that is not: {error}",
            pytrace=False,
        )


def _hlo(text: str, what: str) -> Counter:
    try:
        return _counts(text)
    except HloParseError as error:
        pytest.fail(f"{what}: expected HLO text, got text that is not: {error}", pytrace=False)


@pytest.mark.task("stages")
def test_stages_before_is_stablehlo_after_is_optimized(kata):
    """(x * y + 1) * sin(x * y + 1): written with two adds; CSE keeps one."""
    before, after = _stages(kata, repeated_affine, *pair())
    shlo = _shlo(before, "before")
    hlo = _hlo(after, "after")
    with check:
        assert shlo["stablehlo.add"] == 2, f"before: stablehlo.add x{shlo['stablehlo.add']}, want 2"
    with check:
        assert hlo["add"] == 1, f"after: add x{hlo['add']}, want 1 (CSE ran: is it optimized?)"
    with check:
        assert hlo["fusion"] >= 1, "after: no fusion, so this is not the optimized module"


@cache
def _stages_oracle(key: str) -> tuple[Counter, Counter]:
    """jax.stages' own before and after of a STAGE_PROGRAMS entry, as counts."""
    f, args = STAGE_PROGRAMS[key]
    lowered = jax.jit(f).lower(*args)
    return stablehlo_op_census(lowered.as_text()), _counts(_optimized_text(lowered.compile()))


@pytest.mark.task("stages")
def test_stages_of_several_programs(kata):
    for key, (f, args) in STAGE_PROGRAMS.items():
        before, after = _stages(kata, f, *args)
        shlo, hlo = _shlo(before, f"{key} before"), _hlo(after, f"{key} after")
        want_shlo, want_hlo = _stages_oracle(key)
        with check:
            assert shlo == want_shlo, f"{key} before: {dict(shlo)}, expected {dict(want_shlo)}"
        with check:
            assert hlo == want_hlo, f"{key} after: {dict(hlo)}, expected {dict(want_hlo)}"


@pytest.mark.task("stages")
def test_pinned_optimized_programs(kata, hlo_snapshot):
    for program, args in PINNED:
        _, after = _stages(kata, program, *args)
        hlo_snapshot(normalize_hlo(after))


# --- tasks 2-8: demonstrations -------------------------------------------------------------


@pytest.mark.task("algebraic_identity")
def test_algebraic_identity_disappears(kata):
    special = np.array(
        [
            [0.5, -0.0, np.inf, -np.inf, np.nan],
            [3e38, -3e38, 1e-30, -7.25, 1.0],
            [2.0, 0.1, -0.1, 65504.0, 1e-45],
        ],
        dtype=np.float32,
    )
    for what, x in {
        "f32[3,5] with inf, nan, -0, 3e38": special,
        "bf16[6]": uniform(6, 4, BF16),
    }.items():
        shlo, optimized, out = _compile(kata.algebraic_identity, x)
        _same_kind(what, out, x)
        hlo = _counts(optimized)
        before = sum(shlo[f"stablehlo.{op}"] for op in ARITHMETIC)
        after = {op: hlo[op] for op in ARITHMETIC if hlo[op]}
        with check:
            np.testing.assert_array_equal(out, x, err_msg=f"{what}: not x itself")
        with check:
            assert before >= 2, f"{what}: StableHLO has {before} arithmetic ops, want at least 2"
        with check:
            assert not after, f"{what}: optimized HLO still computes {after}: not an identity"


@pytest.mark.task("folded_scale")
def test_folded_scale_becomes_a_multiply(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        shlo, optimized, out = _compile(kata.folded_scale, x)
        _same_kind(what, out, x)
        hlo = _counts(optimized)
        want = (x.astype(np.float64) / np.sqrt(2.0)).astype(np.float32)
        with check:
            np.testing.assert_allclose(
                out.astype(np.float32), want, rtol=_tolerance(x), err_msg=what
            )
        with check:
            assert shlo["stablehlo.sqrt"] >= 1, f"{what}: no stablehlo.sqrt: Python folded it"
        with check:
            assert shlo["stablehlo.divide"] >= 1 and shlo["stablehlo.multiply"] == 0, (
                f"{what} before: divide x{shlo['stablehlo.divide']}, multiply "
                f"x{shlo['stablehlo.multiply']}; want a divide and no multiply"
            )
        with check:
            assert hlo["sqrt"] == 0 and hlo["divide"] == 0, (
                f"{what} optimized: sqrt x{hlo['sqrt']}, divide x{hlo['divide']}; want none"
            )
        with check:
            assert hlo["multiply"] == 1, f"{what} optimized: multiply x{hlo['multiply']}, want 1"


@pytest.mark.task("shared_subexpression")
def test_cse_removes_the_repeated_add(kata):
    for shape in (8, (3, 4)):
        a, b, c, d = cse_args(shape)
        jaxpr_adds = primitive_census(jax.make_jaxpr(kata.shared_subexpression)(a, b, c, d))["add"]
        _, optimized, out = _compile(kata.shared_subexpression, a, b, c, d)
        _same_kind(f"shape {shape}", out, a)
        hlo_adds = _counts(optimized)["add"]
        with check:
            np.testing.assert_allclose(out, (a + b) * c + (a + b) * d, rtol=1e-6)
        with check:
            assert jaxpr_adds == 3, f"{shape}: jaxpr add x{jaxpr_adds}, want 3 (a+b written twice)"
        with check:
            assert hlo_adds == 2, f"{shape}: optimized add x{hlo_adds}, want 2"


@pytest.mark.task("dead_branch")
def test_dead_exp_survives_lowering_then_dies(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        jaxpr = primitive_census(jax.make_jaxpr(kata.dead_branch)(x))
        shlo, optimized, out = _compile(kata.dead_branch, x)
        _same_kind(what, out, x)
        hlo = _counts(optimized)
        with check:
            np.testing.assert_allclose(
                out.astype(np.float32), x.astype(np.float32) + 1, rtol=_tolerance(x), err_msg=what
            )
        with check:
            assert shlo["stablehlo.exponential"] >= 1, (
                f"{what}: no stablehlo.exponential: JAX dropped the exp before XLA saw it"
            )
        with check:
            assert jaxpr["select_n"] + jaxpr["cond"] >= 1, (
                f"{what}: no select or cond in the jaxpr: the exp must be one side of a choice"
            )
        with check:
            assert hlo["exponential"] == 0, f"{what}: optimized exponential x{hlo['exponential']}"


@pytest.mark.task("elementwise_chain")
def test_chain_is_one_loop_fusion(kata):
    from xla_inspect import hlo_facts  # the API users assert with in their own CI

    _require_cpu("fusion decisions and kinds are the CPU backend's")
    for what, x in ELEMENTWISE_INPUTS.items():
        shlo, optimized, out = _compile(kata.elementwise_chain, x)
        _same_kind(what, out, x)
        work = sum(n for op, n in shlo.items() if op not in SHLO_PLUMBING)
        facts = hlo_facts(optimized)
        entry_ops = opcode_counts(facts.module, entry_only=True)
        del entry_ops["parameter"]
        found = facts.fusions()
        fused = sum((f.opcodes for f in found), Counter())
        for plumbing in ("parameter", "constant", "broadcast", "convert"):
            del fused[plumbing]
        with check:
            assert work >= 4, f"{what}: StableHLO has {work} ops doing work, want at least 4"
        with check:
            assert entry_ops == Counter(fusion=1), (
                f"{what}: ENTRY computes {dict(entry_ops)}, want one fusion"
            )
        with check:
            assert found == 1 and facts.fusions(kind="kLoop") == 1, (
                f"{what}: fusions {[f.kind for f in found]}, want one kind=kLoop fusion"
            )
        with check:
            assert sum(fused.values()) >= 4, f"{what}: the fusion holds {dict(fused)}, want 4+"


@pytest.mark.task("attention_scores")
def test_transpose_folds_into_the_dot(kata):
    for q_shape, k_shape in (((8, 16), (8, 16)), ((5, 3), (7, 3)), ((2, 6), (9, 6))):
        what = f"q{list(q_shape)} k{list(k_shape)}"
        q, k = qk(q_shape, k_shape)
        jaxpr_transposes = primitive_census(jax.make_jaxpr(kata.attention_scores)(q, k))[
            "transpose"
        ]
        _, optimized, out = _compile(kata.attention_scores, q, k)
        assert isinstance(out, np.ndarray) and out.shape == (q.shape[0], k.shape[0]), (
            f"{what}: got shape {getattr(out, 'shape', out)}, expected {(q.shape[0], k.shape[0])}"
        )
        module = parse_hlo(optimized)
        transposes = opcode_counts(module)["transpose"]
        contracting = [d.rhs_contracting_dims for d in dots(module)]
        with check:
            np.testing.assert_allclose(out, q @ k.T, rtol=1e-5, atol=1e-5, err_msg=what)
        with check:
            assert jaxpr_transposes >= 1, f"{what}: jaxpr has no transpose: nothing to fold"
        with check:
            assert transposes == 0, f"{what}: optimized transpose x{transposes}, want 0"
        if jax.default_backend() == "cpu":  # GPU and TPU lower dots to library calls
            with check:
                assert contracting == [(1,)], (
                    f"{what}: rhs_contracting_dims {contracting}: want one dot contracting "
                    "k's dim 1 in place"
                )


@pytest.mark.task("refused_rewrites")
def test_xla_keeps_float_rewrites_it_may_not_do(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        _, optimized, out = _compile(kata.refused_rewrites, x)
        assert isinstance(out, tuple) and len(out) == 2, f"{what}: expected two results"
        scaled, zero = out
        _same_kind(f"{what} x*6", scaled, x)
        _same_kind(f"{what} x-x", zero, x)
        hlo = _counts(optimized)
        with check:
            np.testing.assert_allclose(
                scaled.astype(np.float32),
                x.astype(np.float32) * 6,
                rtol=_tolerance(x),
                err_msg=what,
            )
        with check:
            np.testing.assert_array_equal(zero, np.zeros_like(x), err_msg=what)
        # before jax 0.12 only bf16 keeps both (a gate, listed in the run's header)
        gate = "f32-constant-multiplies-kept" if x.dtype == np.float32 else None
        if gate is None or versions.checked(gate):
            with check, versions.fact(gate):
                assert hlo["multiply"] == 2, (
                    f"{what}: optimized multiply x{hlo['multiply']}, want 2 (no reassociation)"
                )
        with check:
            assert hlo["subtract"] == 1, f"{what}: optimized subtract x{hlo['subtract']}, want 1"


# --- tasks 9-11: the per-pass dump -----------------------------------------------------------


def _timeline(kata, dump_dir) -> list:
    timeline = kata.pass_timeline(str(dump_dir))
    assert isinstance(timeline, list), f"expected a list, got {type(timeline).__name__}"
    for entry in timeline:
        assert isinstance(entry, tuple) and len(entry) == 2, f"not (name, counts): {entry!r:.60}"
    return timeline


# The per-pass pipelines of these programs differ where it matters (a dot, a fusion, CSE); the
# other dumps repeat them, so the timeline tests read three (each dump is ~20 files to parse).
TIMELINE_DUMPS = ("transpose", "fusion", "add")


@pytest.mark.task("pass_timeline")
def test_timeline_matches_the_dump(kata, dumps):
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        timeline = _timeline(kata, dump["dir"])
        names = [name for name, _ in timeline]
        with check:
            assert names == [name for name, _ in dump["files"]], f"{key}: pass names {names}"
        with check:
            assert [dict(c) for _, c in timeline] == [dict(c) for _, c in dump["files"]], (
                f"{key}: opcode counts differ from the files'"
            )


@pytest.mark.task("pass_timeline")
def test_timeline_runs_from_unoptimized_to_optimized(kata, dumps):
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        timeline = _timeline(kata, dump["dir"])
        with check:
            assert timeline and timeline[0][1] == dump["before"], (
                f"{key}: first entry is not the module XLA started from"
            )
        with check:
            assert timeline and timeline[-1][1] == dump["after"], (
                f"{key}: last entry is not the optimized module"
            )


@pytest.mark.task("pass_timeline")
def test_timeline_shows_each_change_where_the_dump_does(kata, dumps):
    """Every change xla_inspect's timeline reports (it skips files that changed nothing) is
    between the same two neighbours of the kata's timeline."""
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        timeline = _timeline(kata, dump["dir"])
        changes = [
            name
            for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False)
            if Counter(before) != Counter(after)
        ]
        expected = [step.pass_name for step in dump["steps"] if step.opcode_deltas]
        with check:
            assert changes == expected, f"{key}: opcode counts change after {changes}, {expected}"


def _variant_dump(source: Path, target: Path) -> list[str]:
    """A copy of the dump in `target` whose per-pass files hold a metamorphic variant of their
    module (every computation and instruction relabelled, computations reordered where XLA
    accepts another order), seeded by the file name; other files copied as they are. Returns the
    variant kinds written."""
    target.mkdir()
    pass_paths = {f.path.name for f in passes.pass_files(source)}
    kinds = []
    for path in sorted(source.iterdir()):
        if path.name not in pass_paths:
            shutil.copy(path, target / path.name)
            continue
        found = list(metamorphic.variants(path.read_text(), seed=zlib.crc32(path.name.encode())))
        assert found, f"{path.name}: no metamorphic variant XLA accepts"
        (target / path.name).write_text(found[-1].text)
        kinds.append(found[-1].kind)
    return kinds


@pytest.mark.task("pass_timeline")
def test_timeline_holds_under_renaming_and_reordering(kata, dumps, tmp_path):
    """The same dump with every file's module relabelled (%n17, %c3) and reordered: the pass
    names come from the file names and the counts from the opcodes, so neither changes."""
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        kinds = _variant_dump(dump["dir"], tmp_path / key)
        timeline = _timeline(kata, tmp_path / key)
        expected = [(name, dict(counts)) for name, counts in dump["files"]]
        got = [(name, dict(counts)) for name, counts in timeline]
        what = f"{key} (each file {sorted(set(kinds))}, seeded by its file name)"
        with check:
            assert [n for n, _ in got] == [n for n, _ in expected], f"{what}: pass names differ"
        for index, ((name, counts), (_, want)) in enumerate(zip(got, expected, strict=False)):
            if counts != want:
                with check:
                    assert counts == want, (
                        f"{what}: entry {index} ({name}): counts {counts}, expected {want}"
                    )
                break


# A constructed timeline, its opcode, and the answer by construction.
def _entry(name, **counts):
    return name, Counter(counts)


CONSTRUCTED = {
    "first pair, a removal": (
        [
            _entry("start", add=3, multiply=1),
            _entry("cse", add=2, multiply=1),
            _entry("algsimp", add=2),
        ],
        "add",
        "cse",
    ),
    "appears from nothing": (
        [
            _entry("start", sine=1),
            _entry("algsimp", sine=1, constant=2),
            _entry("dce", sine=1, constant=1),
            _entry("fusion", sine=1, constant=1, fusion=1),
            _entry("fusion-wrapper", fusion=2),
        ],
        "fusion",
        "fusion",
    ),
    "changes and changes back": (
        [
            _entry("start", copy=0, add=1),
            _entry("layout", add=1, copy=2),
            _entry("copy-insertion", add=1, copy=1),
            _entry("simplify", add=1),
        ],
        "copy",
        "layout",
    ),
    "others change, it never does": (
        [
            _entry("start", dot=1, transpose=1),
            _entry("transpose-folding", dot=1),
            _entry("fusion", dot=1, fusion=1),
        ],
        "dot",
        None,
    ),
    "absent everywhere": ([_entry("start", add=1), _entry("cse", add=1, fusion=1)], "while", None),
    "one entry": ([_entry("start", add=2)], "add", None),
    "empty": ([], "add", None),
    "a repeated pass name": (
        [
            _entry("pipeline-start", tanh=1, add=2),
            _entry("algsimp", tanh=1, add=1),
            _entry("pipeline-start", tanh=1, add=1),
            _entry("simplify", tanh=0, add=1),
        ],
        "tanh",
        "simplify",
    ),
}


def _random_cases(count=6):
    """Seeded random timelines: the answer is the index where the opcode's count is set to move."""
    rng = np.random.default_rng(11)
    pool = ["pipeline-start", "algsimp", "cse", "dce", "fusion", "layout-assignment", "simplify"]
    cases = {}
    for case in range(count):
        length = int(rng.integers(3, 10))
        change = int(rng.integers(1, length))
        names = [str(n) for n in rng.choice(pool, size=length)]
        level = int(rng.integers(0, 4))
        timeline = []
        for index, name in enumerate(names):
            others = Counter({op: int(rng.integers(0, 4)) for op in ("add", "multiply", "fusion")})
            if index == change:
                level += int(rng.choice([-1, 1])) if level else 1
            elif index > change:
                level = int(rng.integers(0, 4))
            timeline.append((name, others + Counter(tanh=level)))
        cases[f"random {case}"] = (timeline, "tanh", names[change])
    return cases


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_on_constructed_timelines(kata):
    for what, (timeline, opcode, expected) in {**CONSTRUCTED, **_random_cases()}.items():
        got = kata.pass_that_changed(timeline, opcode)
        with check:
            assert got == expected and type(got) is type(expected), (
                f"{what}: {opcode} first changes after {expected!r}, got {got!r}"
            )


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_names_the_culprit(kata, dumps):
    for key, dump in dumps.items():
        _, _, opcode, finder = DUMPED[key]
        truth = _culprit(dump, opcode, finder)
        assert truth in {name for name, _ in dump["files"]}, f"{key}: no pass changes {opcode}"
        got = kata.pass_that_changed(dump["files"], opcode)
        with check:
            assert got == truth, f"{key}: {opcode} changed by {truth!r} (per the dump), got {got!r}"


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_is_none_for_untouched_ops(kata, dumps):
    for key, opcode in (("transpose", "dot"), ("refused", "subtract"), ("fusion", "reduce")):
        deltas = [s.pass_name for s in dumps[key]["steps"] if s.opcode_deltas.get(opcode)]
        assert not deltas, f"{key}: the dump shows {deltas} changing {opcode}"
        got = kata.pass_that_changed(dumps[key]["files"], opcode)
        with check:
            assert got is None, f"{key}: no pass changes {opcode}, got {got!r}"


@pytest.mark.task("named_passes")
def test_named_passes_match_the_dump(kata, dumps):
    _require_cpu("the pass pipeline and pass names are the CPU compiler's")
    answers = kata.named_passes()
    assert isinstance(answers, dict), f"expected a dict, got {type(answers).__name__}"
    for key in ("transpose", "fusion", "add", "divide"):
        _, _, opcode, finder = DUMPED[key]
        truth = _culprit(dumps[key], opcode, finder)
        with check:
            assert answers.get(key) == truth, (
                f"{key}: the dump says {truth!r}, got {answers.get(key)!r}"
            )


# --- tasks 12-13: predict before compiling ---------------------------------------------------

ARITHMETIC_OPCODES = ("add", "subtract", "multiply", "divide", "negate")
REWRITE_DIMS = (2, 3, 4, 5, 7, 8, 16)  # every dimension >= 2, ranks 0 to 3 (the contract)
NAMES_N = re.compile(r"\bn\b")  # a program whose text names n depends on it


@cache
def _case_module(bank: str, name: str, shape: tuple[int, ...], dtype: str, n: int):
    """xla_inspect's parse of the optimized module of one program at x of this shape and dtype."""
    program = {"rewrites": REWRITES, "kernels": KERNELS}[bank][name]
    x = np.zeros(shape, jax.numpy.dtype(dtype))
    return parse_hlo(_optimized_text(jax.jit(program, static_argnums=1).lower(x, n).compile()))


def _rewrite_holds(name: str, dtype: str) -> bool:
    """Whether this JAX's XLA makes the rewrites the lesson states for the program at this dtype
    (kata_harness.versions says what older ones do instead)."""
    if name == "v + 1.0 applied n times to x":
        return versions.holds("float-constant-adds-kept")
    if "negative" in name and dtype == "bfloat16":
        return versions.holds("bf16-double-negation-removed")
    return True


def _case(shape: tuple[int, ...], dtype: str, n: int) -> str:
    return f"x {dtype}{list(shape)}, n = {n}"


def _check_surviving(kata, name: str, shape: tuple[int, ...], dtype: str, n: int, where: str):
    predicted = kata.surviving_ops(name, jax.ShapeDtypeStruct(shape, jax.numpy.dtype(dtype)), n)
    counts = opcode_counts(_case_module("rewrites", name, shape, dtype, n))
    left = sum(counts[op] for op in ARITHMETIC_OPCODES)
    assert predicted == left, (
        f"{name} at {_case(shape, dtype, n)}: you predicted {predicted} arithmetic "
        "instructions; the optimized HLO holds another count (which rewrite did you expect that "
        f"XLA did not make, or miss?){where}"
    )


@pytest.mark.task("surviving_ops")
def test_surviving_ops_of_the_listed_programs(kata):
    for name in REWRITES:
        if _rewrite_holds(name, "float32"):
            _check_surviving(kata, name, BANK_INPUT.shape, "float32", BANK_N, "")


@pytest.mark.task("surviving_ops")
def test_surviving_ops_on_fresh_cases(kata, fresh):
    """Every program at a float dtype and at int32, x of a drawn rank (0 to 3) and dims, an odd
    and an even n from 1 to 8; the count is read from the program compiled here."""
    for name in REWRITES:
        floats = [d for d in REWRITE_DTYPES if d != "int32" and _rewrite_holds(name, d)]
        dtypes = (fresh.choice(floats), "int32") if _rewrite_holds(name, "int32") else ()
        counts = [fresh.randrange(1, 9, 2), fresh.randrange(2, 9, 2)]
        fresh.shuffle(counts)
        for dtype, n in zip(dtypes, counts, strict=False):
            shape = tuple(fresh.choice(REWRITE_DIMS) for _ in range(fresh.randint(0, 3)))
            _check_surviving(kata, name, shape, dtype, n, f" ({fresh.where()})")


@pytest.mark.task("surviving_ops")
def test_surviving_ops_does_not_compile(kata):
    with compiler_refused("surviving_ops"):
        kata.surviving_ops("x * 1.0", jax.ShapeDtypeStruct((3, 4), np.float32), 1)


def _check_kernel(kata, name: str, shape: tuple[int, ...], dtype: str, n: int, where: str):
    predicted = kata.one_kernel(name, jax.ShapeDtypeStruct(shape, jax.numpy.dtype(dtype)), n)
    entry = opcode_counts(_case_module("kernels", name, shape, dtype, n), entry_only=True)
    work = {op: k for op, k in entry.items() if op not in ("parameter", "constant")}
    assert predicted == (work == {"fusion": 1}), (
        f"{name} at {_case(shape, dtype, n)}: you predicted {predicted}; the optimized ENTRY "
        "says otherwise (what else than one fusion can it run: a library call, a copy, a second "
        f"fusion, a loop?){where}"
    )


@pytest.mark.task("one_kernel")
def test_one_kernel_of_the_listed_programs(kata):
    _require_cpu("fusion decisions are the CPU backend's")
    for name in KERNELS:
        _check_kernel(kata, name, BANK_INPUT.shape, "float32", BANK_N, "")


@pytest.mark.task("one_kernel")
def test_one_kernel_on_fresh_cases(kata, fresh):
    """Every program at a drawn matrix shape (2 to 16 each way) and dtype; a program that names n
    at n = 0, n = 1 and a drawn n of 2 to 5. The verdict is read from the program compiled here."""
    _require_cpu("fusion decisions are the CPU backend's")
    for name in KERNELS:
        counts = (0, 1, fresh.randint(2, 5)) if NAMES_N.search(name) else (BANK_N,)
        for n in counts:
            shape = (fresh.randint(2, 16), fresh.randint(2, 16))
            _check_kernel(kata, name, shape, fresh.choice(KERNEL_DTYPES), n, f" ({fresh.where()})")


@pytest.mark.task("one_kernel")
def test_one_kernel_does_not_compile(kata):
    with compiler_refused("one_kernel"):
        kata.one_kernel("sort(x) * 2", jax.ShapeDtypeStruct((3, 4), np.float32), 1)
