"""Phase 3 tests: facts about StableHLO, unoptimized and optimized HLO, dumps and cost analysis.

The programs here belong to the tests; their compiled texts are cached once per session so the
parsing tasks cost no compile. The kata's own compiles (three_texts, dump_files, flops) are not.
"""

import math
import os
from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental.layout import Format, Layout
from pytest_check import check

from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions, opcode_counts
from xla_inspect.stablehlo import stablehlo_op_census

TABLE = np.array([3.0, 1.0, 2.0], dtype=np.float32)


def mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def attention(q, k, v):
    return jax.nn.softmax(q @ k.T / math.sqrt(q.shape[-1]), axis=-1) @ v


def scale_and_shift(x):
    return x * 0.5 + TABLE


def value_and_total(x):
    return x + 1, x.sum()


def matmul(a, b):
    return a @ b


# major-to-minor order asked for each input of `matmul`: a column-major, b row-major
MATMUL_ORDERS = ((1, 0), (0, 1))


def looped(x):
    return lax.fori_loop(0, 3, lambda i, c: jnp.tanh(jnp.sin(c) * 2.0 + 1.0), x)


def shared_sum(a, b, c, d):
    return (a + b) * c + (a + b) * d


def _ones(shape):
    # NumPy, not jnp: after the per-test cache clear every jnp.ones would compile an eager op.
    return np.ones(shape, dtype=np.float32)


def _mlp_args():
    params = {"w1": _ones((16, 32)), "b1": _ones(32), "w2": _ones((32, 4)),
              "b2": _ones(4)}
    return params, _ones((8, 16))


def _attention_args():
    return _ones((8, 16)), _ones((8, 16)), _ones((8, 16))


@cache
def _texts(name: str) -> tuple[str, str]:
    """(unoptimized, optimized) HLO of a test-owned program, compiled once per session."""
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    formats = tuple(Format(Layout(order), device) for order in MATMUL_ORDERS)
    programs = {"mlp": (jax.jit(mlp), _mlp_args()),
                "attention": (jax.jit(attention), _attention_args()),
                "scale_and_shift": (jax.jit(scale_and_shift), (_ones(3),)),
                "value_and_total": (jax.jit(value_and_total), (_ones((2, 3)),)),
                "matmul": (jax.jit(matmul, in_shardings=formats), (_ones((8, 16)), _ones((16, 4)))),
                "looped": (jax.jit(looped), (_ones(8),)),
                "shared_sum": (jax.jit(shared_sum), tuple(_ones(8) for _ in range(4)))}
    jitted, args = programs[name]
    lowered = jitted.lower(*args)
    return lowered.as_text(dialect="hlo"), lowered.compile().as_text()


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


# --- task 1: three_texts ---------------------------------------------------------------------

@pytest.mark.task("three_texts")
def test_stablehlo_is_the_lowered_program(kata):
    census = stablehlo_op_census(kata.three_texts(mlp, *_mlp_args())["stablehlo"])
    for op, count in (("stablehlo.dot_general", 2), ("stablehlo.maximum", 1), ("func.call", 1)):
        with check:
            assert census[op] == count, f"{op} x{census[op]}, expected {count}"


@pytest.mark.task("three_texts")
def test_unoptimized_hlo_is_not_fused(kata):
    module = parse_hlo(kata.three_texts(mlp, *_mlp_args())["hlo"])
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
    module = parse_hlo(kata.three_texts(mlp, *_mlp_args())["optimized"])
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
def test_optimized_mlp_snapshot(kata, hlo_snapshot):
    hlo_snapshot(normalize_hlo(kata.three_texts(mlp, *_mlp_args())["optimized"]))


@pytest.mark.task("three_texts")
def test_optimized_attention_snapshot(kata, hlo_snapshot):
    hlo_snapshot(normalize_hlo(kata.three_texts(attention, *_attention_args())["optimized"]))


# --- task 2: dump_files ----------------------------------------------------------------------

@pytest.mark.task("dump_files")
def test_dump_holds_before_and_after(kata, tmp_path):
    flags = os.environ.get("XLA_FLAGS")
    before, after = kata.dump_files(scale_and_shift, (_ones(3),), str(tmp_path))
    with check:
        assert os.environ.get("XLA_FLAGS") == flags, "dump through compiler_options, not XLA_FLAGS"
    for path in (before, after):
        with check:
            assert path.is_file() and path.parent == tmp_path, f"{path} is not a file in the dump"
    if not (before.is_file() and after.is_file()):
        return
    unoptimized, optimized = parse_hlo(before.read_text()), parse_hlo(after.read_text())
    with check:
        assert opcode_counts(unoptimized)["fusion"] == 0, f"{before.name}: expected no fusion"
    with check:
        assert opcode_counts(optimized)["fusion"] > 0, f"{after.name}: expected fusions"
    with check:
        assert normalize_hlo(after.read_text()) == normalize_hlo(_texts("scale_and_shift")[1]), (
            "the after-optimizations file is the text compiled.as_text() gives")


@pytest.mark.task("dump_files")
def test_dump_finds_this_compiles_files(kata, tmp_path):
    kata.dump_files(scale_and_shift, (_ones(3),), str(tmp_path))
    before, after = kata.dump_files(value_and_total, (_ones((2, 3)),), str(tmp_path))
    for path in (before, after):
        name = parse_hlo(path.read_text()).name
        with check:
            assert name == "jit_value_and_total", f"{path.name} is module {name}"


# --- task 3: entry_parameter_layouts ---------------------------------------------------------

@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_of_optimized_mlp(kata):
    expected = [_default_layout(leaf.ndim) for leaf in jax.tree.leaves(_mlp_args())]
    got = kata.entry_parameter_layouts(_texts("mlp")[1])
    assert got == expected, f"got {got}, expected {expected} (row-major: minor-to-major)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_by_number(kata):
    expected = [_default_layout(leaf.ndim) for leaf in jax.tree.leaves(_mlp_args())]
    got = kata.entry_parameter_layouts(_texts("mlp")[0])
    assert got == expected, f"got {got}, expected {expected}: order by parameter(N)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_are_read_not_assumed(kata):
    expected = ["{" + ",".join(str(d) for d in reversed(order)) + "}" for order in MATMUL_ORDERS]
    got = kata.entry_parameter_layouts(_texts("matmul")[1])
    assert got == expected, f"got {got}, expected {expected}: `a` was asked to be column-major"


# --- task 4: entry_root ----------------------------------------------------------------------

@pytest.mark.task("entry_root")
def test_root_of_unoptimized_mlp(kata):
    got = kata.entry_root(_texts("mlp")[0])
    assert got == ("add", "f32[8,4]{1,0}"), f"got {got}: the last bias add, with its layout"


@pytest.mark.task("entry_root")
def test_root_of_optimized_mlp(kata):
    _cpu_only("the MLP's last bias add is a kLoop fusion on XLA:CPU")
    got = kata.entry_root(_texts("mlp")[1])
    assert got == ("fusion", "f32[8,4]{1,0}"), f"got {got}: the fusion that holds the bias add"


@pytest.mark.task("entry_root")
def test_two_results_make_a_tuple_root(kata):
    shapes = [(2, 3), ()]
    expected = "(" + ", ".join(
        f"f32[{','.join(map(str, s))}]" + (_default_layout(len(s)) if s else "") for s in shapes
    ) + ")"
    got = kata.entry_root(_texts("value_and_total")[1])
    assert got == ("tuple", expected), f"got {got}, expected ('tuple', {expected!r})"


# --- task 5: fusion_contents -----------------------------------------------------------------

@pytest.mark.task("fusion_contents")
def test_mlp_fusion_contents(kata):
    _cpu_only("XLA:CPU has only kLoop and kCustom fusions")
    contents = kata.fusion_contents(_texts("mlp")[1])
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
    module = parse_hlo(_texts("attention")[1])
    contents = kata.fusion_contents(_texts("attention")[1])
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
    for kind, expected in _library_contents(module).items():
        got = dict(contents.get(kind, Counter()))
        with check:
            assert got == dict(expected), f"{kind}: got {got}, expected {dict(expected)}"


@pytest.mark.task("fusion_contents")
def test_fusions_inside_a_loop_body(kata):
    _cpu_only("XLA:CPU keeps every fusion of this loop inside the while body")
    module = parse_hlo(_texts("looped")[1])
    entry_fusions = opcode_counts(module, entry_only=True)["fusion"]
    assert entry_fusions == 0, f"test program changed: {entry_fusions} fusions in ENTRY"
    contents = kata.fusion_contents(_texts("looped")[1])
    with check:
        assert sum(c["sine"] for c in contents.values()) == 1, (
            f"the loop body's sin is missing: {contents}; fusions live in every computation")
    for kind, expected in _library_contents(module).items():
        got = dict(contents.get(kind, Counter()))
        with check:
            assert got == dict(expected), f"{kind}: got {got}, expected {dict(expected)}"


# --- task 6: constants -----------------------------------------------------------------------

@pytest.mark.task("constants")
def test_constants_inside_and_outside_fusions(kata):
    found = kata.constants(_texts("scale_and_shift")[1])
    table = (f"f32[{TABLE.size}]{{0}}", "{" + ", ".join(f"{v:g}" for v in TABLE) + "}")
    with check:
        assert ("f32[]", "0.5") in found, f"the scalar 0.5 (in a fused computation): {found}"
    with check:
        assert table in found, f"the closed-over array {table}: {found}"


@pytest.mark.task("constants")
def test_attention_scale_is_folded(kata):
    literals = [literal for _, literal in kata.constants(_texts("attention")[1])]
    scale = 1 / math.sqrt(16)
    with check:
        assert f"{scale:g}" in literals, f"dividing by sqrt(16) became a multiply: {literals}"
    with check:
        assert "-inf" in literals, f"the max-reduce starts from -inf: {literals}"


# --- task 7: flops ---------------------------------------------------------------------------

@pytest.mark.task("flops")
def test_matmul_flops_are_2mnk(kata):
    for m, n, k in ((8, 16, 32), (2, 3, 4)):
        got = kata.flops(lambda a, b: a @ b, _ones((m, k)), _ones((k, n)))
        with check:
            assert got == 2 * m * n * k, f"({m}x{k})@({k}x{n}): {got} flops, expected 2*M*N*K"


@pytest.mark.task("flops")
def test_mlp_flops(kata):
    params, x = _mlp_args()
    (m, k), h, n = x.shape, params["w1"].shape[1], params["w2"].shape[1]
    matmuls = 2 * m * k * h + 2 * m * h * n
    elementwise = m * h * 2 + m * n  # bias add and relu's max on the hidden layer, bias add
    got = kata.flops(mlp, params, x)
    assert got == matmuls + elementwise, f"{got} flops, expected {matmuls} + {elementwise}"


@pytest.mark.task("flops")
def test_flops_are_those_of_the_compiled_module(kata):
    unoptimized, optimized = (opcode_counts(parse_hlo(text)) for text in _texts("shared_sum"))
    size = 8
    before = size * (unoptimized["add"] + unoptimized["multiply"])
    after = size * (optimized["add"] + optimized["multiply"])
    assert after < before, f"test program changed: {after} flops after CSE, {before} before"
    got = kata.flops(shared_sum, *(_ones(size) for _ in range(4)))
    assert got == after, f"{got} flops, expected {after} (the compiled module; {before} before CSE)"


@pytest.mark.task("flops")
def test_transpose_costs_no_flops(kata):
    got = kata.flops(lambda a: a.T, _ones((2, 3)))
    assert got == 0.0, f"{got}: moving data is bytes, not flops"
