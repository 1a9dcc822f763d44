"""Phase 12 tests, fusions and custom calls where a reader who walks ENTRY and its fusions never
looks: fusions in while bodies and conditions (a jax.lax.scan), in conditional branches (a
jax.lax.cond), in called computations and started asynchronously (fusion-start), custom calls
that are not library calls (top_k's __gpu$TopK, cuSOLVER's Cholesky, whose backend_config is
not JSON), library calls whose config alone says what they fused (activation modes swapped,
default fields left out), and convolutions beside GEMMs (cuDNN's, and `convolution` before
optimization), which are no GEMMs.

The modules are recorded from deviceless gpu-h100 compiles (scan_h100, branches_h100,
solvers_h100) or hand-written (programs.FUSIONS_ELSEWHERE), each read as printed and as its
metamorphic variants; where the fusions sit and what is expected come from XLA's parser
(kata_harness.oracles.gpu_hlo).
"""

import re
from collections import Counter

import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import gpu_hlo as oracle
from kata_harness.oracles import xla_accepts
from katas.phase12 import strata
from katas.phase12 import texts as module_texts
from katas.phase12.programs import (
    BLOCK_SHAPES,
    BRANCH_SHAPES,
    DENSE_SHAPES,
    SCAN_SHAPES,
    SOLVER_SHAPES,
)

ELSEWHERE = ("scan_h100", "branches_h100", "fusions_elsewhere")


def _places_covered() -> None:
    """The modules put fusions in every place the contract's "every computation" covers."""
    places = set().union(*(oracle.fusion_places(module_texts.text(n)) for n in ELSEWHERE))
    want = {"while", "conditional", "call", "fusion", "fusion-start"}
    assert want <= places, f"XLA's parse puts fusions only under {sorted(places)}"


def _read(fn, text: str, what: str):
    """fn(text). A crash on a module XLA printed is a wrong answer, not a broken test (the stub's
    NotImplementedError passes through)."""
    try:
        return fn(text)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (any exception: the module is valid)
        crash = f"{type(error).__name__}: {str(error)[:160]}"
    pytest.fail(f"{what}: raised {crash} on a module XLA printed and parses", pytrace=False)


def _differing(got: dict, expected: dict) -> list[str]:
    """The keys whose counts differ (not the counts: a failure must not hand out the answer)."""
    return sorted(str(k) for k in set(got) | set(expected) if got.get(k) != expected.get(k))


@pytest.mark.task("fusion_kinds")
def test_fusion_kinds_outside_entry(kata):
    """Fusions in a scan's while body and condition, asynchronous fusion starts, fusions in a
    cond's branches and in a called computation are fusions of the module too."""
    _places_covered()
    for name in ELSEWHERE:
        expected = oracle.fusion_kinds(module_texts.text(name))
        for what, text, _ in module_texts.forms(name):
            got = _read(kata.fusion_kinds, text, what)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: got {got}; XLA's parser counts other numbers of "
                    f"{_differing(got, expected)} (every computation's "
                    "fusions: loop bodies and conditions, branches, called and async-wrapped "
                    "computations too)"
                )


@pytest.mark.task("reduction_kinds")
def test_reduction_kinds_outside_entry(kata):
    """A reduce in a fusion that sits in a while body, a conditional branch, a called
    computation or an async fusion start runs in that fusion's kernel, not unfused."""
    _places_covered()
    for name in ELSEWHERE:
        expected = oracle.reduce_homes(module_texts.text(name))
        assert set(expected) - {"unfused"}, f"{name}: XLA's parse fuses no reduce"
        for what, text, _ in module_texts.forms(name):
            got = _read(kata.reduction_kinds, text, what)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: got {got}; XLA's parse puts other numbers of reduces under "
                    f"{_differing(got, expected)} (a fusion "
                    "in a loop body, a branch or a called computation is a kernel too)"
                )


@pytest.mark.task("library_epilogues")
def test_library_epilogues_skip_other_custom_calls(kata):
    """solvers_h100: top_k (__gpu$TopK) and cholesky (cuSOLVER) are custom calls beside two
    cuBLAS-Lt GEMMs; only the cuBLAS and cuDNN calls are library calls."""
    name = "solvers_h100"
    text = module_texts.text(name)
    called = set(re.findall(r'custom_call_target="([^"]+)"', text))
    others = {t for t in called if not t.startswith(("__cublas$", "__cudnn$"))}
    assert len(others) >= 2 and called - others, f"XLA calls {sorted(called)}"
    expected = oracle.library_calls(text, name)
    for what, form, variant in module_texts.forms(name):
        got = _read(kata.library_epilogues, form, what)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == module_texts.renamed_keys(variant, expected), (
                f"{what}: got {len(got)} calls, XLA prints {len(expected)} cuBLAS/cuDNN calls "
                "(a custom call whose target starts neither __cublas$ nor __cudnn$ is not a "
                "library call)"
            )


@pytest.mark.task("library_epilogues")
def test_library_epilogues_read_the_config_and_its_defaults(kata):
    """conv_h100 and dense_cublas_h100 with the cuDNN calls' activation modes swapped (kNone and
    kRelu: its __cudnn$convForward then records kRelu), and with every field holding its proto
    default left out of the JSON (proto3 JSON may omit it: `DEFAULT`, `kNone` all the same)."""
    for name in ("conv_h100", "dense_cublas_h100"):
        text = module_texts.text(name)
        swapped, bare = module_texts.modes_swapped(text), module_texts.defaults_left_out(text)
        assert bare != text and xla_accepts(bare), f"{name}: no default left out"
        cases = [
            (f"{name} (defaults left out of the JSON)", bare, oracle.library_calls(text, name))
        ]
        if swapped != text:
            assert xla_accepts(swapped), f"{name}: XLA refuses the swapped modes"
            expected = oracle.library_calls(swapped, name)
            forward = [n for _, n, _, p in oracle.parsed(swapped)[1] if "$convForward" in p]
            assert forward and expected[forward[0]] != "kNone", f"{name}: XLA reads {expected}"
            cases.append((f"{name} (cuDNN activation modes swapped)", swapped, expected))
        for what, form, expected in cases:
            got = _read(kata.library_epilogues, form, what)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: {len(got)} calls where XLA prints {len(expected)}, "
                    f"{len(_differing(got, expected))} of them differ (the epilogue or activation "
                    "mode the config records, whatever the target's name; a field left out holds "
                    "its default, DEFAULT or kNone)"
                )


@pytest.mark.task("library_epilogues")
@pytest.mark.parametrize("name", ("conv_h100", "dense_cublas_h100"))
def test_library_epilogues_cudnn_calls_of_other_kinds(kata, fresh, name):
    """Every `__cudnn$` call is a library call, a convolution or not: 2 to 4 drawn cuDNN calls
    of other kinds (a layer norm, fused attention forward and backward, a filter reorder; texts.
    OTHER_CUDNN_CALLS), each printing its own kind's config, `{}` or no backend_config (at least
    one printing none, as XLA's parse confirms), added to a recorded module. None holds a
    cudnn_conv_backend_config: each maps to its default, kNone."""
    text, added = module_texts.other_cudnn_calls(name, fresh)
    printed = {n: p for _, n, op, p in oracle.parsed(text)[1] if n in added and op == "custom-call"}
    read = {n: module_texts.matched(r'custom_call_target="([^"]+)"', p) for n, p in printed.items()}
    assert read == added, f"XLA reads {read}"
    bare = [n for n, p in printed.items() if "backend_config=" not in p]
    assert bare, f"XLA prints a backend_config in every added call: {sorted(printed)}"
    assert not any("cudnn_conv_backend_config" in p for p in printed.values()), "a conv config"
    expected = oracle.library_calls(module_texts.text(name), name) | dict.fromkeys(added, "kNone")
    variant = metamorphic.renamed(text, fresh)
    assert variant is not None, f"{name}: XLA refuses the calls renamed"
    for what, form, want in (
        (f"{name} with {sorted(added.values())} added ({fresh.where()})", text, expected),
        (
            f"{name} with those calls, renamed ({fresh.where()})",
            variant.text,
            module_texts.renamed_keys(variant, expected),
        ),
    ):
        got = _read(kata.library_epilogues, form, what)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == want, (
                f"{what}: {len(got)} calls where XLA prints {len(want)}, "
                f"{len(_differing(got, want))} of them differ (every call whose target starts "
                "__cudnn$ is a library call, whatever its kind; with no activation_mode in a "
                "cudnn_conv_backend_config it holds the default, kNone)"
            )


def _flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


# By hand from the programs' shapes (programs.scanned_softmax, branches, solvers): the scan's
# step c @ w (one dot instruction in the while body, counted once, not per trip); the cond's
# x @ w in one branch, x @ w.T and (...) @ w in the other; solvers' a @ a.T and values @ w;
# programs.FUSIONS_ELSEWHERE's Triton GEMM fusion x[64,32] @ w[32,48], started by an
# async-start (a GEMM's kernel run asynchronously is a GEMM all the same).
(X_ROWS, SCAN_K), _ = SCAN_SHAPES[0]
(_, _, SCAN_N), _ = SCAN_SHAPES[1]
(B_ROWS, B_K), _ = BRANCH_SHAPES[1]
(_, B_N), _ = BRANCH_SHAPES[2]
(TOP_ROWS, _), _ = SOLVER_SHAPES[0]
(A_ROWS, A_K), _ = SOLVER_SHAPES[1]
(TOP_K, V_N), _ = SOLVER_SHAPES[2]
GEMM_FLOPS_ELSEWHERE = {
    "scan_h100": _flops(X_ROWS, SCAN_K, SCAN_N),
    "branches_h100": 3 * _flops(B_ROWS, B_K, B_N),
    "solvers_h100": _flops(A_ROWS, A_K, A_ROWS) + _flops(TOP_ROWS, TOP_K, V_N),
    "fusions_elsewhere": _flops(64, 32, 48),
}


@pytest.mark.task("gemm_flops")
def test_gemm_flops_in_loops_branches_and_beside_other_custom_calls(kata):
    """A Triton GEMM in a scan's while body, cuBLAS-free GEMMs in a cond's branches, cuBLAS-Lt
    GEMMs beside custom calls whose backend_config is not JSON (cuSOLVER, TopK), and Triton
    GEMM fusions an async-start wraps (fusions_elsewhere; block_gpu_h100 and dense_triton_h100
    with each ENTRY GEMM fusion started asynchronously)."""
    cases = [
        (what, text, expected)
        for name, expected in sorted(GEMM_FLOPS_ELSEWHERE.items())
        for what, text, _ in module_texts.forms(name)
    ]
    # recorded Triton GEMM fusions moved into computations async-starts wrap (fusion-start)
    ((rows, k), _), ((_, n), _) = BLOCK_SHAPES[0], BLOCK_SHAPES[1]
    for name, expected in (
        ("block_gpu_h100", _flops(rows, k, n)),
        ("dense_triton_h100", oracle.dense_flops(DENSE_SHAPES)),
    ):
        moved = module_texts.async_wrapped(name)
        cases.append((f"{name} ({moved.kind})", moved.text, expected))
    for what, text, expected in cases:
        got = _read(kata.gemm_flops, text, what)
        assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: got {got}, the program's GEMMs take {expected} flops (a GEMM in a "
                "loop body, a branch or an async-wrapped computation counts once; a custom "
                "call that is not cuBLAS is no GEMM)"
            )


def _opcodes(text: str) -> Counter[str]:
    """Opcodes XLA's parser reads in the module, a custom call counted under its target."""
    return Counter(
        module_texts.matched(r'custom_call_target="([^"]+)"', p) if op == "custom-call" else op
        for _, _, op, p in oracle.parsed(text)[1]
    )


@pytest.mark.task("gemm_flops")
def test_gemm_flops_leave_out_convolutions(kata, fresh):
    """A convolution is no GEMM (the contract's GEMMs are dots and cuBLAS calls): conv_h100's
    cuDNN convolutions take no GEMM flops, and in a drawn conv -> dense -> conv network before
    optimization (strata.drawn_conv_dense: two `convolution` instructions and a dot) only the
    dot counts."""
    name = "conv_h100"
    ops = _opcodes(module_texts.text(name))
    convs = sum(n for op, n in ops.items() if op.startswith("__cudnn$conv"))
    gemms = ops["dot"] + sum(n for op, n in ops.items() if op.startswith("__cublas$"))
    assert convs >= 2 and not gemms, f"XLA reads {sorted(ops)} in {name}"
    for what, text, _ in module_texts.forms(name):
        got = _read(kata.gemm_flops, text, what)
        assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
        with check:
            assert got == 0, (
                f"{what}: got {got}; its {convs} cuDNN convolutions are no GEMMs, and it holds no "
                "dot and no cuBLAS call"
            )
    drawn, text, expected = strata.drawn_conv_dense(fresh)
    case = f"{drawn} ({fresh.where()})"
    ops = _opcodes(text)
    assert (ops["convolution"], ops["dot"]) == (2, 1), f"{case}: XLA reads {sorted(ops)}"
    got = _read(kata.gemm_flops, text, case)
    assert isinstance(got, int), f"{case}: expected an int, got {type(got).__name__}"
    assert got == expected, (
        f"{case}: got {got}, other flops than its one dot takes (its two convolutions are no GEMMs)"
    )
