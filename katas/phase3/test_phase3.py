"""Phase 3 tests: facts about StableHLO, unoptimized and optimized HLO, dumps and cost analysis.

The programs (in programs.py) belong to the tests; their compiled texts are cached once per
session so the parsing tasks cost no compile. The kata's own compiles (three_texts, dump_files,
flops) are not.

The IR-reading tasks (3-6) run on a bank of texts that differ in what a shortcut gets wrong:
parameters used out of order, scalar, unused and tuple-shaped parameters, non-default layouts,
tuple roots, fusions in while and conditional bodies, a fusion nested in a fused computation,
constants of several dtypes, and a hand-written module whose ENTRY is not the last computation.
Expected values come from XLA's own C++ parser (jaxlib), from `jax.stages` (`input_formats`,
`output_formats`, `cost_analysis`), from xla_inspect's queries, or from the program itself.
"""

import math
import os
import zlib
from collections import Counter
from functools import cache
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.layout import Format
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.predict import compiler_refused
from kata_harness.xla_facts import XlaFacts, xla_facts
from katas.phase3.programs import (
    HAND_WRITTEN,
    ROOT_CASES,
    ROOT_DTYPES,
    ROOT_PROGRAMS,
    TABLE,
    THREE_TEXT_PROGRAMS,
    attention,
    attention_args,
    bank_program,
    matmul,
    mlp,
    mlp_args,
    ones,
    scale_and_shift,
    shared_sum,
    value_and_total,
)
from xla_inspect.errors import HloParseError
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions, opcode_counts
from xla_inspect.stablehlo import StableHloError, stablehlo_op_census


@cache
def _compiled(name: str):
    """(lowered, compiled) of a test-owned program, compiled once per session."""
    jitted, args = bank_program(name)
    lowered = jitted.lower(*args)
    return lowered, lowered.compile()


@cache
def _texts(name: str) -> tuple[str, str]:
    """(unoptimized, optimized) HLO of a test-owned program."""
    lowered, compiled = _compiled(name)
    return lowered.as_text(dialect="hlo"), compiled.as_text()


def _text(key: str) -> str:
    """A text of the bank: "hand", "<program>" (optimized) or "<program>:unoptimized"."""
    if key == "hand":
        return HAND_WRITTEN
    name, _, stage = key.partition(":")
    return _texts(name)[0 if stage == "unoptimized" else 1]


def _cpu_only(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact} (running on {jax.default_backend()})")


def _default_layout(ndim: int) -> str:
    return "{" + ",".join(str(d) for d in reversed(range(ndim))) + "}"


def _fusion_kinds(module) -> Counter:
    return Counter(f.kind for f in fusions(module))


def _library_contents(module) -> dict[str, Counter]:
    """xla_inspect's view of every fusion's opcodes (nested calls included), parameters dropped."""
    contents: dict[str, Counter] = {}
    for fusion in fusions(module):
        counts = contents.setdefault(fusion.kind, Counter())
        counts.update({op: n for op, n in fusion.opcodes.items() if op != "parameter"})
    return contents


# --- XLA's own parser (jaxlib), the oracle for the IR-reading tasks ---------------------------


@cache
def _xla(key: str) -> XlaFacts:
    """XLA's reading of a bank text (kata_harness.xla_facts)."""
    return xla_facts(_text(key))


# --- metamorphic variants: the same module under other names, its computations in other orders ---


@cache
def _variants(key: str) -> tuple[metamorphic.HloVariant, ...]:
    """The bank text's variants XLA's parser accepts: every computation and instruction relabelled
    (%n17, %c3), the computations reordered, both; seeded by the key (the same every run)."""
    found = tuple(metamorphic.variants(_text(key), seed=zlib.crc32(key.encode())))
    assert found, f"{key}: no metamorphic variant XLA accepts"
    return found


def _forms(keys):
    """(what, text, variant) for each variant of each key: a reading answer is a function of the
    module, so it must not change (or change only by the renaming) from one form to another."""
    for key in keys:
        seed = zlib.crc32(key.encode())
        for variant in _variants(key):
            yield f"{key} ({variant.kind}, variant seed {seed})", variant.text, variant


# --- task 1: three_texts ---------------------------------------------------------------------


def _three(kata, f, *args) -> dict:
    texts = kata.three_texts(f, *args)
    assert isinstance(texts, dict), f"expected a dict, got {type(texts).__name__}"
    assert sorted(texts) == ["hlo", "optimized", "stablehlo"], f"keys {sorted(texts)}"
    return texts


def _stablehlo_census(text: str, what: str) -> Counter:
    try:
        return stablehlo_op_census(text)
    except StableHloError as error:
        pytest.fail(
            f"{what}: expected StableHLO (an MLIR module), got text that is not: {error}",
            pytrace=False,
        )


def _hlo_module(text: str, what: str):
    try:
        return parse_hlo(text)
    except HloParseError as error:
        pytest.fail(f"{what}: expected HLO text, got text that is not: {error}", pytrace=False)


@pytest.mark.task("three_texts")
def test_stablehlo_is_the_lowered_program(kata):
    census = _stablehlo_census(_three(kata, mlp, *mlp_args())["stablehlo"], "stablehlo")
    for op, count in (("stablehlo.dot_general", 2), ("stablehlo.maximum", 1), ("func.call", 1)):
        with check:
            assert census[op] == count, f"{op} x{census[op]}, expected {count}"


@pytest.mark.task("three_texts")
def test_unoptimized_hlo_is_not_fused(kata):
    module = _hlo_module(_three(kata, mlp, *mlp_args())["hlo"], "hlo")
    entry = opcode_counts(module, entry_only=True)
    with check:
        assert opcode_counts(module)["fusion"] == 0, "unoptimized HLO has no fusion yet"
    with check:
        assert entry["dot"] == 2, f"both matmuls are plain dots in ENTRY, got {entry['dot']}"
    with check:
        assert entry["call"] == 1, f"relu is still a call, got {entry['call']}"


@pytest.mark.task("three_texts")
def test_optimized_hlo_is_fused(kata):
    _cpu_only("XLA:CPU wraps f32 matmuls in kCustom (YNNPACK) fusions")
    module = _hlo_module(_three(kata, mlp, *mlp_args())["optimized"], "optimized")
    kinds = _fusion_kinds(module)
    with check:
        assert kinds == Counter(kLoop=2, kCustom=2), f"fusion kinds {dict(kinds)}"
    with check:
        assert opcode_counts(module)["call"] == 0, "the relu call is inlined before fusion"
    with check:
        assert opcode_counts(module)["dot"] == 2, "two matmuls, counted across all computations"
    with check:
        assert opcode_counts(module, entry_only=True)["dot"] == 0, "the dots moved into fusions"


@pytest.mark.task("three_texts")
def test_three_texts_are_the_stages_of_this_program(kata):
    for program, (f, args) in THREE_TEXT_PROGRAMS.items():
        texts = _three(kata, f, *args)
        census = _stablehlo_census(texts["stablehlo"], f"{program} stablehlo")
        hlo = _hlo_module(texts["hlo"], f"{program} hlo")
        optimized = _hlo_module(texts["optimized"], f"{program} optimized")
        want_census, want_hlo, want_optimized = _stages_oracle(program)
        with check:
            assert census == want_census, (
                f"{program}: stablehlo ops {dict(census)}, expected {dict(want_census)}"
            )
        for what, got, want in (("hlo", hlo, want_hlo), ("optimized", optimized, want_optimized)):
            with check:
                assert got.name == want.name, f"{program} {what}: module {got.name}, {want.name}"
            with check:
                assert opcode_counts(got) == opcode_counts(want), (
                    f"{program} {what}: opcodes {dict(opcode_counts(got))}, "
                    f"expected {dict(opcode_counts(want))}"
                )
            with check:
                assert got.entry.root.shape == want.entry.root.shape, (
                    f"{program} {what}: result {got.entry.root.shape}, "
                    f"expected {want.entry.root.shape}"
                )


@cache
def _stages_oracle(program: str):
    """jax.stages' own texts of a THREE_TEXT_PROGRAMS entry, read structurally."""
    f, args = THREE_TEXT_PROGRAMS[program]
    lowered = jax.jit(f).lower(*args)
    text = lowered.compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return (
        stablehlo_op_census(lowered.as_text()),
        parse_hlo(lowered.as_text(dialect="hlo")),
        parse_hlo(text),
    )


@pytest.mark.task("three_texts")
def test_optimized_mlp_snapshot(kata, hlo_snapshot):
    hlo_snapshot(normalize_hlo(_three(kata, mlp, *mlp_args())["optimized"]))


@pytest.mark.task("three_texts")
def test_optimized_attention_snapshot(kata, hlo_snapshot):
    hlo_snapshot(normalize_hlo(_three(kata, attention, *attention_args())["optimized"]))


# --- task 2: dump_files ----------------------------------------------------------------------


def _dumped(kata, f, args, directory: Path) -> tuple[Path, Path]:
    paths = kata.dump_files(f, args, str(directory))
    assert isinstance(paths, tuple) and len(paths) == 2, f"expected two paths, got {paths!r:.80}"
    before, after = (Path(p) for p in paths)
    for path in (before, after):
        assert path.is_file() and path.parent == directory, f"{path} is not a file in the dump"
    return before, after


def _modules(before: Path, after: Path):
    return (
        _hlo_module(before.read_text(), before.name),
        _hlo_module(after.read_text(), after.name),
    )


@pytest.mark.task("dump_files")
def test_dump_holds_before_and_after(kata, tmp_path):
    flags = os.environ.get("XLA_FLAGS")
    before, after = _dumped(kata, scale_and_shift, (ones(3),), tmp_path)
    assert os.environ.get("XLA_FLAGS") == flags, "dump through compiler_options, not XLA_FLAGS"
    unoptimized, optimized = _modules(before, after)
    with check:
        assert opcode_counts(unoptimized)["fusion"] == 0, f"{before.name}: expected no fusion"
    with check:
        assert opcode_counts(optimized)["fusion"] > 0, f"{after.name}: expected fusions"
    with check:
        assert normalize_hlo(after.read_text()) == normalize_hlo(_texts("scale_and_shift")[1]), (
            "the after-optimizations file is the text compiled.as_text() gives"
        )
    with check:
        assert opcode_counts(unoptimized) == opcode_counts(
            parse_hlo(_texts("scale_and_shift")[0])
        ), "the before-optimizations file is the module before any pass"


@pytest.mark.task("dump_files")
def test_dump_finds_this_compiles_files(kata, tmp_path):
    kata.dump_files(scale_and_shift, (ones(3),), str(tmp_path))
    before, after = _dumped(kata, value_and_total, (ones((2, 3)),), tmp_path)
    for module in _modules(before, after):
        with check:
            assert module.name == "jit_value_and_total", f"got module {module.name}"


@pytest.mark.task("dump_files")
def test_dump_of_the_same_function_again(kata, tmp_path):
    """Another process's dump with a higher module number is there, and this function was
    dumped before at another shape: only the files this compile wrote are the answer."""
    stale = "module_9999.jit_value_and_total"
    for suffix, text in (
        (".before_optimizations.txt", _texts("value_and_total")[0]),
        (".cpu_after_optimizations.txt", _texts("value_and_total")[1]),
    ):
        (tmp_path / f"{stale}{suffix}").write_text(text)
    kata.dump_files(value_and_total, (ones((2, 3)),), str(tmp_path))
    before, after = _dumped(kata, value_and_total, (ones((5, 1)),), tmp_path)
    for module in _modules(before, after):
        parameter = next(i for i in module.entry if i.opcode == "parameter")
        with check:
            assert parameter.shape_info.dims == (5, 1), (
                f"{module.name} takes {parameter.shape}: not this compile (f32[5,1])"
            )
    with check:
        assert before.name.split(".")[0] == after.name.split(".")[0], (
            f"{before.name} and {after.name} are not one compile's files"
        )


# --- task 3: entry_parameter_layouts ---------------------------------------------------------

LAYOUT_BANK = [
    "mlp",
    "mlp:unoptimized",
    "matmul",
    "looped",
    "mixed",
    "mixed:unoptimized",
    "branches",
    "hand",
]


def _layouts(kata, key: str) -> list:
    got = kata.entry_parameter_layouts(_text(key))
    assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
    return got


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_as_xla_reads_them(kata):
    for key in LAYOUT_BANK:
        got = _layouts(kata, key)
        expected = [layout for _, layout in _xla(key).params]
        with check:
            assert got == expected, f"{key}: got {got}, expected {expected} (parameter(N) order)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_of_optimized_mlp(kata):
    expected = [_default_layout(leaf.ndim) for leaf in jax.tree.leaves(mlp_args())]
    got = _layouts(kata, "mlp")
    assert got == expected, f"got {got}, expected {expected} (row-major: minor-to-major)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_by_number(kata):
    expected = [_default_layout(leaf.ndim) for leaf in jax.tree.leaves(mlp_args())]
    got = _layouts(kata, "mlp:unoptimized")
    assert got == expected, f"got {got}, expected {expected}: order by parameter(N)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_are_read_not_assumed(kata):
    """jax's own record of the layouts it asked for; an unused input has none (it was dropped)."""
    for name in ("matmul", "mixed"):
        _, compiled = _compiled(name)
        expected = [
            "{" + ",".join(str(d) for d in reversed(f.layout.major_to_minor)) + "}"
            for f in compiled.input_formats[0]
            if f.layout is not None
        ]
        got = _layouts(kata, name)
        with check:
            assert got == expected, f"{name}: got {got}, expected {expected}: read each layout"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_of_scalar_and_tuple_parameters(kata):
    got = _layouts(kata, "hand")
    expected = ["{}", "({0,1}, {})", "{0,1}", "{0}"]
    assert got == expected, f"got {got}, expected {expected} (scalar: {{}}; tuple: its elements')"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_hold_under_renaming_and_reordering(kata):
    """The layouts are facts of the module: relabelled names and reordered computations change
    nothing (XLA's parser reads each variant; its reading is the expected answer)."""
    for what, text, variant in _forms(LAYOUT_BANK):
        expected = variant.rename([layout for _, layout in xla_facts(text).params])
        got = kata.entry_parameter_layouts(text)
        with check:
            assert got == expected, (
                f"{what}: got {got}, expected {expected}: read parameter(N) and each layout, "
                "not the printed names or the order of the text"
            )


# --- task 4: entry_root ----------------------------------------------------------------------

ROOT_BANK = [
    "mlp",
    "mlp:unoptimized",
    "value_and_total",
    "looped",
    "mixed",
    "branches",
    "attention:unoptimized",
    "hand",
]
_DTYPES = {"float32": "f32", "int32": "s32", "bfloat16": "bf16", "float16": "f16"}


def _root(kata, key: str) -> tuple:
    got = kata.entry_root(_text(key))
    assert isinstance(got, tuple) and len(got) == 2, f"expected (opcode, shape), got {got!r:.80}"
    return got


@pytest.mark.task("entry_root")
def test_root_as_xla_reads_it(kata):
    for key in ROOT_BANK:
        got = _root(kata, key)
        expected = _xla(key).root
        with check:
            assert got == expected, f"{key}: got {got}, expected {expected}"


@pytest.mark.task("entry_root")
def test_root_shape_is_the_programs_result(kata):
    """The result's shapes from jax.stages (out_info, output_formats), not from the text."""
    for name in ("value_and_total", "mixed", "branches"):
        _, compiled = _compiled(name)
        parts = []
        for info, fmt in zip(
            jax.tree.leaves(compiled.out_info),
            jax.tree.leaves(compiled.output_formats, is_leaf=lambda x: isinstance(x, Format)),
            strict=True,
        ):
            order = ",".join(str(d) for d in reversed(fmt.layout.major_to_minor))
            layout = f"{{{order}}}" if info.shape else ""
            parts.append(f"{_DTYPES[str(info.dtype)]}[{','.join(map(str, info.shape))}]{layout}")
        expected = ("tuple", "(" + ", ".join(parts) + ")")
        got = _root(kata, name)
        with check:
            assert got == expected, f"{name}: got {got}, expected {expected}"


@pytest.mark.task("entry_root")
def test_root_of_unoptimized_mlp(kata):
    got = _root(kata, "mlp:unoptimized")
    assert got == ("add", "f32[8,4]{1,0}"), f"got {got}: the last bias add, with its layout"


@pytest.mark.task("entry_root")
def test_root_of_optimized_mlp(kata):
    _cpu_only("the MLP's last bias add is a kLoop fusion on XLA:CPU")
    got = _root(kata, "mlp")
    assert got == ("fusion", "f32[8,4]{1,0}"), f"got {got}: the fusion that holds the bias add"


@pytest.mark.task("entry_root")
def test_two_results_make_a_tuple_root(kata):
    shapes = [(2, 3), ()]
    expected = (
        "("
        + ", ".join(
            f"f32[{','.join(map(str, s))}]" + (_default_layout(len(s)) if s else "") for s in shapes
        )
        + ")"
    )
    got = _root(kata, "value_and_total")
    assert got == ("tuple", expected), f"got {got}, expected ('tuple', {expected!r})"


@pytest.mark.task("entry_root")
def test_root_holds_under_renaming_and_reordering(kata):
    """The ROOT of ENTRY, as XLA's parser reads each variant: names and order say nothing."""
    for what, text, variant in _forms(ROOT_BANK):
        expected = variant.rename(xla_facts(text).root)
        got = kata.entry_root(text)
        with check:
            assert got == expected, f"{what}: got {got}, expected {expected}"


# --- task 5: fusion_contents -----------------------------------------------------------------

FUSION_BANK = ["mlp", "attention", "looped", "mixed", "branches", "hand"]


def _contents(kata, key: str) -> dict:
    return _contents_of(kata, _text(key))


def _contents_of(kata, text: str) -> dict:
    got = kata.fusion_contents(text)
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    for kind, counts in got.items():
        assert isinstance(counts, Counter), f"{kind}: expected a Counter, got {counts!r:.60}"
    return got


@pytest.mark.task("fusion_contents")
def test_fusion_contents_match_the_library(kata):
    for key in FUSION_BANK:
        module = parse_hlo(_text(key))
        expected = {kind: dict(counts) for kind, counts in _library_contents(module).items()}
        got = {kind: dict(+counts) for kind, counts in _contents(kata, key).items()}
        with check:
            assert sorted(got) == sorted(expected), f"{key}: kinds {sorted(got)}"
        for kind, want in expected.items():
            with check:
                assert got.get(kind) == want, f"{key} {kind}: got {got.get(kind)}, expected {want}"


@pytest.mark.task("fusion_contents")
def test_mlp_fusion_contents(kata):
    _cpu_only("XLA:CPU has only kLoop and kCustom fusions")
    contents = _contents(kata, "mlp")
    with check:
        assert set(contents) == {"kLoop", "kCustom"}, f"kinds {sorted(contents)}"
    with check:
        assert dict(contents.get("kCustom", {})) == {"dot": 2}, "each matmul is its own kCustom"
    loop = contents.get("kLoop", Counter())
    for opcode, count in (("maximum", 1), ("add", 2), ("dot", 0), ("parameter", 0)):
        with check:
            assert loop[opcode] == count, f"kLoop {opcode} x{loop[opcode]}, expected {count}"


@pytest.mark.task("fusion_contents")
def test_attention_fusion_contents(kata):
    _cpu_only("XLA:CPU has only kLoop and kCustom fusions")
    contents = _contents(kata, "attention")
    loop = contents.get("kLoop", Counter())
    with check:
        assert set(contents) <= {"kLoop", "kCustom"}, f"kinds {sorted(contents)}"
    with check:
        assert contents.get("kCustom", Counter())["dot"] == 2, "q@k.T and p@v"
    for opcode in ("exponential", "reduce"):
        with check:
            assert loop[opcode] >= 1, f"softmax's {opcode} belongs in a kLoop fusion"
    with check:
        assert sum(c["transpose"] for c in contents.values()) == 0, "k.T became a dot dimension"


@pytest.mark.task("fusion_contents")
def test_fusions_inside_loop_and_branch_bodies(kata):
    _cpu_only("XLA:CPU keeps these fusions inside the while body and the branches")
    for key, opcodes in (("looped", ("sine", "tanh")), ("branches", ("sine", "cosine"))):
        module = parse_hlo(_text(key))
        assert opcode_counts(module, entry_only=True)[opcodes[0]] == 0, "test program changed"
        contents = _contents(kata, key)
        for opcode in opcodes:
            found = sum(c[opcode] for c in contents.values())
            with check:
                assert found == 1, (
                    f"{key}: {opcode} x{found}, expected 1: fusions live in every "
                    "computation, loop and branch bodies too"
                )


@pytest.mark.task("fusion_contents")
def test_nested_fusion_counts_for_both_kinds(kata):
    contents = _contents(kata, "hand")
    inner = {
        "exponential": 1,
        "constant": 1,
        "reduce": 1,
        "broadcast": 1,
        "multiply": 1,
        "add": 1,
    }  # the kInput fusion's computation plus its reducer's add
    outer = Counter(inner) + Counter(fusion=1, multiply=2, broadcast=2, constant=1)
    with check:
        assert dict(+contents.get("kInput", Counter())) == inner, (
            f"kInput: got {dict(contents.get('kInput', {}))}, expected {inner}"
        )
    with check:
        assert dict(+contents.get("kLoop", Counter())) == dict(outer), (
            f"kLoop: got {dict(contents.get('kLoop', {}))}, expected {dict(outer)}"
        )


@pytest.mark.task("fusion_contents")
def test_fusion_contents_hold_under_renaming_and_reordering(kata):
    """Counts stay what they are in the printed module when every computation and instruction is
    relabelled and the computations are printed in another order XLA accepts: a fusion finds its
    computation, and a reduce its reducer, by the name it calls, not by position or by spelling."""
    for key in FUSION_BANK:
        module = parse_hlo(_text(key))
        want = {kind: dict(counts) for kind, counts in _library_contents(module).items()}
        for what, text, variant in _forms([key]):
            expected = variant.rename(want)
            got = {kind: dict(+counts) for kind, counts in _contents_of(kata, text).items()}
            with check:
                assert got == expected, f"{what}: got {got}, expected {expected}"


# --- task 6: constants -----------------------------------------------------------------------

CONSTANT_BANK = ["scale_and_shift", "attention", "looped", "branches", "mixed", "hand"]


def _constants(kata, key: str) -> list:
    return _constants_of(kata, _text(key))


def _constants_of(kata, text: str) -> list:
    got = kata.constants(text)
    assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
    for item in got:
        assert isinstance(item, tuple) and len(item) == 2, f"expected (shape, literal): {item!r}"
    return got


@pytest.mark.task("constants")
def test_constants_as_xla_counts_them(kata):
    for key in CONSTANT_BANK:
        shapes = Counter(shape for shape, _ in _constants(kata, key))
        expected = _xla(key).constants
        with check:
            assert shapes == expected, (
                f"{key}: constants by shape {dict(shapes)}, expected "
                f"{dict(expected)} (every computation, each once)"
            )


@pytest.mark.task("constants")
def test_constants_inside_and_outside_fusions(kata):
    found = _constants(kata, "scale_and_shift")
    table = (f"f32[{TABLE.size}]{{0}}", "{" + ", ".join(f"{v:g}" for v in TABLE) + "}")
    with check:
        assert ("f32[]", "0.5") in found, f"the scalar 0.5 (in a fused computation): {found}"
    with check:
        assert table in found, f"the closed-over array {table}: {found}"


@pytest.mark.task("constants")
def test_attention_scale_is_folded(kata):
    literals = [literal for _, literal in _constants(kata, "attention")]
    scale = 1 / math.sqrt(16)
    with check:
        assert f"{scale:g}" in literals, f"dividing by sqrt(16) became a multiply: {literals}"
    with check:
        assert "-inf" in literals, f"the max-reduce starts from -inf: {literals}"


@pytest.mark.task("constants")
def test_constants_of_every_dtype_and_computation(kata):
    found = Counter(_constants(kata, "branches"))
    for constant in (
        ("s32[]", "7"),
        ("s32[]", "2"),
        ("f32[]", "1.5"),
        ("f32[]", "3"),
        ("f32[]", "-1"),
    ):
        with check:
            assert found[constant] == 1, f"{constant} (branch, int or bf16 code) x{found[constant]}"
    hand = Counter(_constants(kata, "hand"))
    expected = Counter(
        {
            ("f32[]", "0"): 1,
            ("f32[]", "0.5"): 1,
            ("f32[2]{0}", "{1, -2}"): 1,
            ("s32[]", "4"): 2,
            ("pred[]", "true"): 1,
            ("f16[]", "0.25"): 1,
            ("s32[2,2]{1,0}", "{ { 1, 2 }, { 3, 4 } }"): 1,
        }
    )
    with check:
        assert hand == expected, f"hand-written module: got {dict(hand)}, expected {dict(expected)}"


@pytest.mark.task("constants")
def test_constants_hold_under_renaming_and_reordering(kata):
    """XLA's count of constants by shape in each variant, and the same literals as the printed
    module gives: relabelling and reordering the computations move no constant."""
    for key in CONSTANT_BANK:
        printed = Counter(_constants(kata, key))
        for what, text, _ in _forms([key]):
            found = Counter(_constants_of(kata, text))
            expected = xla_facts(text).constants
            shapes = Counter(shape for shape, _ in found.elements())
            with check:
                assert shapes == expected, (
                    f"{what}: constants by shape {dict(shapes)}, expected {dict(expected)}"
                )
            with check:
                assert found == printed, (
                    f"{what}: {sorted(found.elements())} differ from the printed module's "
                    f"{sorted(printed.elements())}: the same constants under other names"
                )


# --- task 7: flops ---------------------------------------------------------------------------


def _flops(kata, f, *args) -> float:
    got = kata.flops(f, *args)
    assert isinstance(got, float | int), f"expected a number, got {type(got).__name__}"
    return got


@pytest.mark.task("flops")
def test_matmul_flops_are_2mnk(kata):
    # one function, several shapes (an answer that remembers the first compile fails), int too
    for (m, n, k), dtype in (
        ((2, 3, 4), np.float32),
        ((5, 1, 3), np.float32),
        ((3, 7, 2), np.int32),
    ):
        got = _flops(kata, matmul, ones((m, k), dtype), ones((k, n), dtype))
        with check:
            assert got == 2 * m * n * k, (
                f"({m}x{k})@({k}x{n}) {np.dtype(dtype).name}: {got} flops, expected 2*M*N*K"
            )


@pytest.mark.task("flops")
def test_mlp_flops(kata):
    params, x = mlp_args()
    (m, k), h, n = x.shape, params["w1"].shape[1], params["w2"].shape[1]
    matmuls = 2 * m * k * h + 2 * m * h * n
    elementwise = m * h * 2 + m * n  # bias add and relu's max on the hidden layer, bias add
    got = _flops(kata, mlp, params, x)
    assert got == matmuls + elementwise, f"{got} flops, expected {matmuls} + {elementwise}"


@pytest.mark.task("flops")
def test_transcendentals_are_not_flops(kata):
    """exp and tanh are counted apart, as transcendentals: exp(x) costs no flops, tanh(x)*2
    costs one flop per element (the multiply)."""
    x = ones((3, 5))
    got = _flops(kata, jnp.exp, x)
    with check:
        assert got == 0.0, f"exp: {got} flops, expected 0 (15 transcendentals are not flops)"
    got = _flops(kata, lambda v: jnp.tanh(v) * 2.0, x)
    with check:
        assert got == x.size, f"tanh(x)*2: {got} flops, expected {x.size} (the multiply)"


@pytest.mark.task("flops")
def test_flops_are_those_of_the_compiled_module(kata):
    unoptimized, optimized = (opcode_counts(parse_hlo(text)) for text in _texts("shared_sum"))
    size = 8
    before = size * (unoptimized["add"] + unoptimized["multiply"])
    after = size * (optimized["add"] + optimized["multiply"])
    assert after < before, f"test program changed: {after} flops after CSE, {before} before"
    got = _flops(kata, shared_sum, *(ones(size) for _ in range(4)))
    assert got == after, f"{got} flops, expected {after} (the compiled module; {before} before CSE)"
    assert got == _compiled("shared_sum")[1].cost_analysis()["flops"], "XLA's own count differs"


@pytest.mark.task("flops")
def test_transpose_costs_no_flops(kata):
    got = _flops(kata, lambda a: a.T, ones((2, 3)))
    assert got == 0.0, f"{got}: moving data is bytes, not flops"


# --- task 8: mlp_flops -----------------------------------------------------------------------

# (batch, in, hidden, out): square, tall, wide, odd, a wide hidden layer, the smallest allowed
MLP_SHAPES = ((8, 16, 32, 4), (2, 2, 2, 2), (3, 5, 7, 2), (64, 3, 2, 9), (5, 2, 40, 3))


@cache
def _mlp_cost(shape: tuple[int, int, int, int]) -> float:
    batch, n_in, hidden, out = shape
    params = {
        "w1": ones((n_in, hidden)),
        "b1": ones(hidden),
        "w2": ones((hidden, out)),
        "b2": ones(out),
    }
    cost = jax.jit(mlp).lower(params, ones((batch, n_in))).compile().cost_analysis()
    assert cost is not None and "flops" in cost, "this backend reports no flops"
    return cost["flops"]


@pytest.mark.task("mlp_flops")
def test_mlp_flops_predicted(kata):
    _cpu_only("the flops of XLA:CPU's cost model")
    for shape in MLP_SHAPES:
        with compiler_refused("mlp_flops"):
            predicted = kata.mlp_flops(*shape)
        measured = _mlp_cost(shape)
        with check:
            assert predicted == measured, (
                f"(batch, in, hidden, out) = {shape}: you predicted {predicted} flops, "
                f"cost_analysis says {measured:.0f}"
            )


# every size >= 2 (the contract); the sizes a fresh case draws from, up to 100 wide (cost analysis
# reports a float: at 100 the flops stay below 2**24, where every integer is exact)
MLP_SIZES = (2, 3, 4, 5, 7, 8, 11, 12, 16, 31, 64, 100)


@pytest.mark.task("mlp_flops")
def test_mlp_flops_predicted_on_fresh_shapes(kata, fresh):
    """Shapes drawn over the contract's domain (every size >= 2), the answer read from XLA's cost
    analysis of the MLP compiled at that shape: a rule, not the listed shapes, passes."""
    _cpu_only("the flops of XLA:CPU's cost model")
    for _ in range(3):
        shape = tuple(fresh.choice(MLP_SIZES) for _ in range(4))
        with compiler_refused("mlp_flops"):
            predicted = kata.mlp_flops(*shape)
        measured = _mlp_cost(shape)
        assert predicted == measured, (
            f"(batch, in, hidden, out) = {shape}: you predicted {predicted} flops, "
            f"cost_analysis says {measured:.0f} ({fresh.where()})"
        )


# --- task 9: predict_entry_root --------------------------------------------------------------

ROOT_DIMS = (2, 3, 4, 5, 6, 7, 8, 12, 16)  # every dimension >= 2 (the contract)


@cache
def _compiled_root(program: str, specs: tuple) -> tuple[str, str]:
    """XLA's reading of the ENTRY ROOT of the program's optimized module, for arguments
    ((shape, dtype), ...)."""
    fn, _ = ROOT_PROGRAMS[program]
    args = tuple(np.zeros(shape, jnp.dtype(dtype)) for shape, dtype in specs)
    text = jax.jit(fn).lower(*args).compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return xla_facts(text).root


# The dtype classes of the contract: each program is drawn at each of them on every run. A cast
# to bfloat16 is its own class at bfloat16 (the cast is then a no-op).
ROOT_CLASSES = (("float32",), ("bfloat16", "float16"), ("int32",))
CAST_CLASSES = (("float32",), ("bfloat16",), ("float16",), ("int32",))
RESHAPE = "x.reshape(2, -1, x.shape[-1])"


def _root_situations(fresh, program: str) -> list[tuple[int, tuple[str, ...], int | None]]:
    """(rank of x, dtype class, x's first dimension or None) for every structural situation of
    the program: each dtype class and each rank the contract allows, paired at random; the
    reshape at a matrix of two rows (a fusion), at a taller matrix and at rank 3 (copies)."""
    _, ranks = ROOT_PROGRAMS[program]
    classes = list(CAST_CLASSES if program.startswith("x.astype") else ROOT_CLASSES)
    fresh.shuffle(classes)
    if program == RESHAPE:
        shapes = [(2, 2), (2, 2 * fresh.choice(ROOT_DIMS[1:5])), (3, None)]
        return [(rank, classes[k], first) for k, (rank, first) in enumerate(shapes)]
    allowed = list(ranks[0])
    fresh.shuffle(allowed)
    count = max(len(allowed), len(classes))
    return [(allowed[k % len(allowed)], classes[k % len(classes)], None) for k in range(count)]


def _root_case(fresh, program: str, situation: tuple[int, tuple[str, ...], int | None]) -> tuple:
    """One argument list of ``program``'s domain in this situation."""
    rank, dtypes, first = situation
    _, ranks = ROOT_PROGRAMS[program]
    specs = []
    for allowed in ranks:
        size = rank if not specs else fresh.choice(allowed)
        shape = [fresh.choice(ROOT_DIMS) for _ in range(size)]
        dtype = fresh.choice(dtypes if not specs else ROOT_DTYPES)
        if program == RESHAPE and not specs:
            shape[0] = first if first is not None else 2 * fresh.choice(ROOT_DIMS[:5])
        specs.append((tuple(shape), dtype))
    return tuple(specs)


def _check_root(kata, program: str, specs: tuple, where: str) -> None:
    arguments = tuple(jax.ShapeDtypeStruct(shape, jnp.dtype(dtype)) for shape, dtype in specs)
    root = kata.predict_entry_root(program, arguments)
    expected = _compiled_root(program, specs)
    case = ", ".join(f"{dtype}{list(shape)}" for shape, dtype in specs)
    assert root == expected, (
        f"{program} with arguments {case}: you predicted {root}; the optimized module's ROOT "
        f"differs (in its {'shape or layout' if root[:1] == expected[:1] else 'opcode'}){where}"
    )


@pytest.mark.task("predict_entry_root")
def test_predict_entry_root_of_the_listed_cases(kata):
    _cpu_only("which ops XLA:CPU fuses and where it copies a result")
    for program, specs in ROOT_CASES:
        _check_root(kata, program, specs, "")


@pytest.mark.task("predict_entry_root")
def test_predict_entry_root_on_fresh_cases(kata, fresh):
    """Every program at every dtype class (float32, bfloat16 or float16, int32) and every rank
    of its domain on every run, the reshape at two rows and more, dimensions drawn; the expected
    ROOT is XLA's reading of the program compiled here."""
    _cpu_only("which ops XLA:CPU fuses and where it copies a result")
    for program in ROOT_PROGRAMS:
        for situation in _root_situations(fresh, program):
            case = _root_case(fresh, program, situation)
            _check_root(kata, program, case, f" ({fresh.where()})")


@pytest.mark.task("predict_entry_root")
def test_predict_entry_root_does_not_compile(kata):
    with compiler_refused("predict_entry_root"):
        kata.predict_entry_root("x * 2 + 1", (jax.ShapeDtypeStruct((8, 4), jnp.float32),))
