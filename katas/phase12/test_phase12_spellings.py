"""Phase 12 tests, the spellings and places the first modules never showed: fusion kinds with a
'$' or named on a kLoop fusion, fused computations two fusions share, reduces three fusions
deep, tuple-shaped, in a loop's condition or wrapped by an async-start, library calls in loop
bodies, branches and fusions, cuBLAS targets beyond the two common ones and custom calls that
only look like library calls, and GEMMs that contract nothing or make a scalar.

The modules are recorded from deviceless gpu-h100 compiles (scan_cublas_h100,
branches_cublas_h100, reduce_places_h100, fp8_h100) or hand-written
(katas/phase12/handwritten.py), each read as printed, renamed and reordered, and the reduction
modules also with every ENTRY fusion's computation moved one nested fusion down
(kata_harness.metamorphic.nested). What each module holds is checked with XLA's parser first;
expected values come from it (kata_harness.oracles.gpu_hlo) or, for flops, from arithmetic on
shapes stated here and in programs.py.
"""

import math
import re
from collections import Counter

import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import gpu_hlo as oracle
from katas.phase12 import strata
from katas.phase12 import texts as module_texts
from katas.phase12.programs import BRANCH_SHAPES, FP8_SHAPES, SCAN_SHAPES


def _read(fn, text: str, what: str):
    """fn(text); a crash on a module XLA parses is a wrong answer (NotImplementedError passes)."""
    try:
        return fn(text)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (any exception: the module is valid)
        crash = f"{type(error).__name__}: {str(error)[:160]}"
    pytest.fail(f"{what}: raised {crash} on a module XLA printed and parses", pytrace=False)


def _differing(got: dict, expected: dict) -> list[str]:
    """The keys whose values differ (not the values: a failure must not hand out the answer)."""
    return sorted(str(k) for k in set(got) | set(expected) if got.get(k) != expected.get(k))


def _rows(name: str):
    return oracle.parsed(module_texts.text(name))[1]


# ---- fusion_kinds ------------------------------------------------------------------------------


@pytest.mark.task("fusion_kinds")
def test_fusion_kinds_other_spellings_and_shared_computations(kata):
    """A kind holding a '$' (__cudnn$fusion), a kind named on a kLoop fusion (printed kind and
    named kind both count), fused computations that two fusion instructions call (two fusions,
    two counts), a cuBLAS call's dynamic-slice fusion in a loop body (__custom_fusion), and
    recorded modules with a copy of a fusion-holding computation that nothing calls."""
    printed = [p for _, _, op, p in _rows("fusion_spellings") if op == "fusion"]
    assert any("$" in oracle.label(p) for p in printed), "no kind with a '$'"
    assert any(oracle.label(p).startswith("kLoop(") for p in printed), "no kLoop with a kind"
    called = Counter(module_texts.matched(r"calls=%([\w.-]+)", p) for p in printed)
    assert sorted(called.values())[-2:] == [2, 2], f"XLA reads the fusions calling {called}"
    forms = [
        (what, text, oracle.fusion_kinds(module_texts.text(name)))
        for name in ("fusion_spellings", "odd_gemms", "scan_cublas_h100")
        for what, text, _ in module_texts.forms(name)
    ]
    for name in ("scan_h100", "reduce_places_h100"):  # a copy nothing calls: still the module's
        copy = module_texts.uncalled(name)
        forms.append((f"{name} ({copy.kind})", copy.text, oracle.fusion_kinds(copy.text)))
    for what, text, expected in forms:
        got = _read(kata.fusion_kinds, text, what)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: XLA's parser counts other numbers of {_differing(got, expected)} "
                "(every fusion instruction; a kind its backend_config names, whatever "
                "characters it holds, in brackets after the printed kind)"
            )


# ---- reduction_kinds ---------------------------------------------------------------------------


REDUCE_MODULES = ("reduces_elsewhere", "reduce_places_h100", "fusion_spellings")


def _reduce_places() -> None:
    """The modules hold reduces in the places the test is about (XLA's parse)."""
    text = module_texts.text("reduces_elsewhere")
    rows = _rows("reduces_elsewhere")
    callers = oracle.fusion_callers(text)
    reduces = [c for c, _, op, _ in rows if op == "reduce"]
    depths = []
    for computation in reduces:
        depth = 0
        while computation in callers:
            computation, depth = callers[computation][0], depth + 1
        depths.append(depth)
    assert max(depths) >= 3, f"reduces are at most {max(depths)} fusions deep"
    fused = oracle.fused_computations(text)
    paths = Counter(
        (c, module_texts.matched(r"calls=%([\w.-]+)", p))
        for c, _, op, p in rows
        if op == "fusion" and c in fused
    )
    assert max(paths.values()) >= 2, "no kernel whose nested fusions share a computation"
    assert oracle.async_wrapped(text) & set(reduces), "no reduce wrapped by an async-start"
    conditions = set(re.findall(r"condition=%([\w.-]+)", text))
    assert conditions & set(reduces), "no reduce in a while condition"
    for name in ("reduces_elsewhere", "reduce_places_h100"):
        shapes = [p.split(" = ", 1)[1] for _, _, op, p in _rows(name) if op == "reduce"]
        assert any(s.startswith("(") for s in shapes), f"{name}: no variadic reduce"


def _reduce_forms():
    """(what, text, expected) for each module as printed, renamed and reordered, and each
    module with its reduces one fusion deeper (metamorphic.nested)."""
    for name in REDUCE_MODULES:
        expected = oracle.reduce_homes(module_texts.text(name))
        for what, text, _ in module_texts.forms(name):
            yield what, text, expected
    for name in ("nested_reductions", "reductions_h100", "reduce_places_h100"):
        deeper = metamorphic.nested(module_texts.text(name))
        assert deeper is not None, f"{name}: XLA refuses the module one fusion deeper"
        expected = oracle.reduce_homes(deeper.text)
        assert expected == oracle.reduce_homes(module_texts.text(name)), "nesting moved a reduce"
        yield f"{name} (each ENTRY fusion's body one fusion deeper)", deeper.text, expected
    moved = [
        (n, module_texts.shared_across_kinds(n)) for n in ("reductions_h100", "reduce_places_h100")
    ]
    moved.append(("reduce_places_h100", module_texts.uncalled("reduce_places_h100")))
    for name, variant in moved:
        yield f"{name} ({variant.kind})", variant.text, oracle.reduce_homes(variant.text)


@pytest.mark.task("reduction_kinds")
def test_reduction_kinds_deep_variadic_in_conditions_wrapped_and_shared(kata):
    """Reduces three fusions deep, tuple-shaped (argmax), in a while condition (fused and not),
    wrapped by an async-start (no fusion holds it: unfused), in a fused computation two
    fusions share (counted once per fusion, under each one's kind when a kInput and a kLoop
    fusion share it), in one two nested fusions of one kernel reach (counted once: one
    outermost fusion), and in a computation nothing calls."""
    _reduce_places()
    for what, text, expected in _reduce_forms():
        got = _read(kata.reduction_kinds, text, what)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: XLA's parse puts other numbers of reduces under "
                f"{_differing(got, expected)} (every reduce, variadic ones too, in every "
                "computation, under the outermost fusion reaching it, once per such fusion "
                "however many of its nested fusions reach it)"
            )


# ---- library_epilogues -------------------------------------------------------------------------


LIBRARY_MODULES = (
    "scan_cublas_h100",
    "branches_cublas_h100",
    "fp8_h100",
    "odd_gemms",
    "aux_epilogues",
)


@pytest.mark.task("library_epilogues")
def test_library_epilogues_in_loops_branches_and_by_prefix(kata):
    """cuBLAS calls in a scan's loop body (inside a fusion) and in a cond's branches, an FP8
    call (__cublas$lt$matmul$f8), typed-FFI calls whose targets only contain 'cublas' or
    'cudnn' (cublas_geqrf_batched_ffi, cudnn_rnn_ffi) and cub's sort (__cub$DeviceRadixSort,
    its target starts '__cub'): not library calls; and handwritten.AUX_EPILOGUES, a training
    forward pass whose calls keep the pre-activation (GELU_AUX, BIAS_GELU_AUX, BIAS_RELU_AUX:
    epilogues of their own, reported as printed)."""
    entry = re.compile(r"^ENTRY %([\w.-]+)", re.MULTILINE)
    for name in ("scan_cublas_h100", "branches_cublas_h100"):
        homes = {c for c, _, _, p in _rows(name) if "__cublas$" in p}
        assert homes and entry.findall(module_texts.text(name))[0] not in homes, name
    targets = set(re.findall(r'custom_call_target="([^"]+)"', module_texts.text("odd_gemms")))
    assert {t for t in targets if re.search("cublas|cudnn", t) and t[:2] != "__"}, targets
    assert "__cub$DeviceRadixSort" in targets, targets
    assert "__cublas$lt$matmul$f8" in module_texts.text("fp8_h100")
    aux = oracle.library_calls(module_texts.text("aux_epilogues"), "aux_epilogues")
    assert {"GELU_AUX", "BIAS_GELU_AUX"} <= set(aux.values()), f"XLA prints {aux}"
    for name in LIBRARY_MODULES:
        expected = oracle.library_calls(module_texts.text(name), name)
        assert expected, f"{name}: XLA prints no library call"
        for what, text, variant in module_texts.forms(name):
            got = _read(kata.library_epilogues, text, what)
            want = module_texts.renamed_keys(variant, expected)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == want, (
                    f"{what}: {len(got)} calls where XLA prints {len(want)}, "
                    f"{len(_differing(got, want))} of them differ (every computation's calls "
                    "whose target starts __cublas$ or __cudnn$, and only those)"
                )


# ---- gemm_flops --------------------------------------------------------------------------------


# handwritten.ODD_GEMMS, by hand from its shapes: name -> (opcode, printed output, flops).
ODD_GEMMS = {
    "outer": ("dot", "f32[64,32]", 2 * 64 * 32),  # contracts nothing: x 1
    "batched_outer": ("dot", "f32[8,64,32]", 2 * 8 * 64 * 32),  # batch dimension only
    "inner": ("dot", "f32[]", 2 * 256),  # one output element
    "f8-gemm": ("custom-call", "bf16[48,80]", 2 * 48 * 80 * 96),
    "cudnn_dot": ("dot", "bf16[64,256]", 2 * 64 * 256 * 128),
}
(SCAN_ROWS, SCAN_K), _ = SCAN_SHAPES[0]
(B_ROWS, B_K), _ = BRANCH_SHAPES[1]
(_, B_N), _ = BRANCH_SHAPES[2]
(FP8_ROWS, FP8_K), _ = FP8_SHAPES[0]
(_, FP8_N), _ = FP8_SHAPES[1]
GEMM_FLOPS = {
    "odd_gemms": sum(flops for _, _, flops in ODD_GEMMS.values()),
    "scan_cublas_h100": 2 * SCAN_ROWS * SCAN_K * SCAN_SHAPES[1][0][2],
    "branches_cublas_h100": 3 * 2 * B_ROWS * B_K * B_N,
    "fp8_h100": 2 * FP8_ROWS * FP8_K * FP8_N,
    # handwritten.AUX_EPILOGUES: x[64,96] through 128, 48, 40, 24 wide layers (the aux output,
    # the tuple's second element, is the pre-activation: no product of its own)
    "aux_epilogues": 2 * 64 * (96 * 128 + 128 * 48 + 48 * 40 + 40 * 24),
}


@pytest.mark.task("gemm_flops")
def test_gemm_flops_outer_products_scalars_fp8_and_loops(kata):
    """Dots that contract nothing (lhs_contracting_dims={} or none printed: the size is 1),
    a scalar output, an FP8 cuBLAS call, a dot in a cuDNN fusion beside look-alike custom calls
    (no GEMMs), and cuBLAS calls in a loop body and in branches."""
    gemms = {
        n: (op, p.split(" = ", 1)[1].split("{")[0].lstrip("(").split(" ")[0])
        for _, n, op, p in _rows("odd_gemms")
        if op == "dot" or "__cublas$" in p
    }
    assert gemms == {n: v[:2] for n, v in ODD_GEMMS.items()}, f"XLA reads {gemms}"
    printed = {n: p for _, n, _, p in _rows("odd_gemms")}
    for name in ("outer", "batched_outer"):
        assert "lhs_contracting_dims={}" in printed[name], f"XLA reads {printed[name]}"
    for name, expected in sorted(GEMM_FLOPS.items()):
        for what, text, _ in module_texts.forms(name):
            got = _read(kata.gemm_flops, text, what)
            assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: got {got}, the module's GEMMs take other flops (a dot that "
                    "contracts nothing multiplies by 1, a scalar output is one element, every "
                    "__cublas$ call is a GEMM, a custom call that only looks like one is not)"
                )


@pytest.mark.task("gemm_flops")
@pytest.mark.parametrize("elements", sorted(strata.GEMM_DTYPES))
@pytest.mark.parametrize(
    "place", ("in ENTRY", "in a nested jax.jit", "in a nested jax.jit called twice")
)
def test_gemm_flops_of_a_drawn_dot_before_optimization(kata, fresh, elements, place):
    """strata.drawn_gemm: a jax.lax.dot_general drawn afresh and lowered by JAX (the module
    before optimization, where a dot may contract several dimensions at once: XLA:GPU merges
    them into one later), contracting 2 or 3 dimensions in drawn positions, maybe batched, of
    a drawn dtype (floating point, or integers: an int8 GEMM is a GEMM), whose output holds
    2**31 elements or more and whose flops are past float64's exact integers and past int64
    (2 * an odd number above 2**64: the count is exact for shapes of any size); in ENTRY, or in
    a nested jax.jit (the computation a `call`'s to_apply names: a GEMM wherever it sits), or
    one called twice (two calls of one computation holding one dot instruction: it counts once,
    and so it does when both calls are made fusions of it, two kernels running one fused
    computation); and the module with a copy of the dot's computation that nothing calls (two
    GEMMs)."""
    nested, twice = place != "in ENTRY", place.endswith("twice")
    text, contracting, expected = strata.drawn_gemm(fresh, elements, nested=nested, twice=twice)
    (home, _, _, printed), *more = [r for r in oracle.parsed(text)[1] if r[2] == "dot"]
    assert not more, f"XLA reads {len(more) + 1} dots"
    callers = [p for _, _, op, p in oracle.parsed(text)[1] if op == "call"]
    calls = sum(f"to_apply=%{home}" in p for p in callers)
    assert calls == (2 if twice else int(nested)), f"XLA reads {callers}"
    dims = module_texts.matched(r"lhs_contracting_dims=\{([\d,]*)\}", printed)
    assert len(dims.split(",")) == contracting >= 2, f"XLA reads {printed[:160]}"
    (dtype, output), *_ = oracle.SHAPE.findall(printed.split(" = ", 1)[1])
    assert dtype[0] in ("su" if elements == "integer" else "fb"), f"XLA reads {printed[:160]}"
    assert math.prod(int(d) for d in output.split(",")) >= 2**31, f"XLA reads {printed[:160]}"
    assert expected > 2**65 and expected % 4 == 2, "flops float64 or int64 holds exactly"
    case = f"a drawn {dtype} dot_general {place} ({fresh.where()})"
    got = _read(kata.gemm_flops, text, case)
    assert isinstance(got, int), f"{case}: expected an int, got {type(got).__name__}"
    assert got == expected, (
        f"{case}: got {got}, its one dot takes other flops (2 * output elements * the product "
        "of every contracting dimension's size, counted exactly past 64 bits, whatever the "
        "element type)"
    )
    if twice:
        fused = module_texts.calls_fused(text, home)
        fusions = [
            n
            for _, n, op, p in oracle.parsed(fused)[1]
            if op == "fusion" and re.search(rf"\bcalls=%{re.escape(home)}(?![\w.-])", p)
        ]
        assert len(fusions) == 2, f"XLA reads {fusions} calling {home}"
        fused_case = f"{case}, both calls made fusions of {home}"
        got = _read(kata.gemm_flops, fused, fused_case)
        assert got == expected, (
            f"{fused_case}: got {got}, other flops than its one dot instruction takes (two "
            "fusions calling one fused computation: its dot is one instruction, counted once)"
        )
    copied = module_texts.copied_uncalled(text, home)
    case = f"{case}, with a copy of {home} that nothing calls"
    got = _read(kata.gemm_flops, copied, case)
    assert got == 2 * expected, (
        f"{case}: got {got}, other flops than its two dots take (every GEMM in the module "
        "counts, one in a computation nothing calls too)"
    )
