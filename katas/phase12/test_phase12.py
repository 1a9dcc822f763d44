"""Phase 12 tests, reading optimized GPU HLO: fusion kinds, where reductions run, the epilogues
of library calls, and the flops of every GEMM.

The tests run on modules recorded from deviceless compiles (katas/phase12/recorded/, listed in
programs.RECORDINGS) and on hand-written modules (programs.HANDWRITTEN, for cases the recordings
never show), so they run without the ``gpu`` group; each module is read as printed and as its
metamorphic variants (katas/phase12/texts.py). Expected values come from XLA's parser
(kata_harness.oracles.gpu_hlo: opcodes, the printed instruction) and, for flops, from NumPy
arithmetic on the programs' shapes.
"""

import math
import re
from collections import Counter

import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import gpu_hlo as oracle
from katas.phase12 import texts as module_texts
from katas.phase12.programs import BLOCK_SHAPES, DENSE_SHAPES, EINSUMS
from katas.phase12.texts import CPU_BLOCK

# ---- fusion_kinds ------------------------------------------------------------------------------


SIDE_BY_SIDE = (CPU_BLOCK, "block_gpu_h100", "block_gpu_a100", "block_tpu_v5e")


@pytest.mark.task("fusion_kinds")
def test_fusion_kinds(kata):
    for name in (*SIDE_BY_SIDE, "reductions_h100", "conv_h100", "mlp_grad_h100"):
        expected = oracle.fusion_kinds(module_texts.text(name))
        for what, text, _ in module_texts.forms(name):
            got = kata.fusion_kinds(text)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: got {got}, XLA's parser counts {expected}"


@pytest.mark.task("fusion_kinds")
def test_fusion_kinds_differ_per_target(kata):
    """The same program: each target has kinds the others never print (renamed too)."""
    for form in range(2):
        kinds = {
            name: kata.fusion_kinds(
                module_texts.variants(name)[0].text if form else module_texts.text(name)
            )
            for name in SIDE_BY_SIDE
        }
        for name, got in kinds.items():
            assert isinstance(got, dict), f"{name}: expected a dict"
        gpu = set(kinds["block_gpu_h100"]) | set(kinds["block_gpu_a100"])
        with check:
            assert "kInput" in gpu and "kOutput" not in gpu, f"GPU kinds {sorted(gpu)}"
        with check:
            assert "kOutput" in kinds["block_tpu_v5e"], f"TPU kinds {kinds['block_tpu_v5e']}"
        with check:
            assert not gpu & set(kinds[CPU_BLOCK]) - {"kLoop"}, (
                f"CPU {sorted(kinds[CPU_BLOCK])} and GPU {sorted(gpu)} share only kLoop"
            )


# ---- reduction_kinds ---------------------------------------------------------------------------


@pytest.mark.task("reduction_kinds")
def test_reduction_kinds(kata):
    for name in (
        "reductions_h100",
        "block_gpu_h100",
        "block_gpu_a100",
        "mlp_grad_h100",
        "grad_mlp_bf16",
        CPU_BLOCK,
    ):
        expected = oracle.reduce_homes(module_texts.text(name))
        for what, text, _ in module_texts.forms(name):
            got = kata.reduction_kinds(text)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: got {got}, XLA's parse puts the reduces in {expected}"
                )


@pytest.mark.task("reduction_kinds")
def test_reduction_kinds_a_gpu_reduce_is_not_always_kinput(kata):
    kinds = set(oracle.reduce_homes(module_texts.text("reductions_h100")))
    with check:
        assert len(kinds - {"kInput"}) >= 2, "the recording should show reductions beside kInput"
    for what, text, _ in module_texts.forms("reductions_h100"):
        got = kata.reduction_kinds(text)
        assert isinstance(got, dict)
        with check:
            assert set(got) == kinds, (
                f"{what}: reductions run in {sorted(kinds)}; got {sorted(got)}"
            )


@pytest.mark.task("reduction_kinds")
def test_reduction_kinds_outermost_fusion_and_only_reduce(kata):
    """programs.NESTED_REDUCTIONS (hand-written): a reduce in a kLoop fusion nested in a kInput
    fusion, one in a kLoop fusion nested in a Triton fusion (each counts under the outer kind);
    all-reduce, reduce-scatter, reduce-window and reduce-precision beside them (not reduces); a
    reduce in a called computation and one in ENTRY (unfused)."""
    name = "nested_reductions"
    _, rows = oracle.parsed(module_texts.text(name))
    opcodes = Counter(opcode for _, _, opcode, _ in rows)
    near = {"all-reduce", "reduce-scatter", "reduce-window", "reduce-precision"}
    assert near <= set(opcodes), f"XLA reads {sorted(opcodes)}"
    callers = oracle.fusion_callers(module_texts.text(name))
    nested = [
        (callers[c][1], callers[callers[c][0]][1])
        for c, _, opcode, _ in rows
        if opcode == "reduce" and c in callers and callers[c][0] in callers
    ]
    assert sorted(nested) == [("kLoop", "kCustom(__triton)"), ("kLoop", "kInput")], nested
    expected = oracle.reduce_homes(module_texts.text(name))
    for what, text, _ in module_texts.forms(name):
        got = kata.reduction_kinds(text)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: got {got}, XLA's parse puts the reduces in {expected} (a reduce counts "
                "under the outermost fusion reaching it; only opcode reduce is a reduce)"
            )


# ---- library_epilogues -------------------------------------------------------------------------


LIBRARY_RECORDINGS = (
    "dense_cublas_h100",
    "dense_cublas_a100",
    "conv_h100",
    "attention_cublas",
    "dense_triton_h100",
)


@pytest.mark.task("library_epilogues")
def test_library_epilogues(kata):
    for name in LIBRARY_RECORDINGS:
        for what, text, variant in module_texts.forms(name):
            got = kata.library_epilogues(text)
            expected = module_texts.renamed_keys(
                variant, oracle.library_calls(module_texts.text(name), name)
            )
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: got {got}, XLA prints {expected}"


@pytest.mark.task("library_epilogues")
def test_library_epilogues_legacy_cublas_gemm(kata):
    """programs.GEMMS_EVERYWHERE (hand-written): a legacy cuBLAS call (`__cublas$gemm`, what XLA
    emits for f64 or with cuBLAS-Lt off) is a cuBLAS call too."""
    name = "gemms_everywhere"
    expected = oracle.library_calls(module_texts.text(name), name)
    targets_of = {
        n: module_texts.matched(r'custom_call_target="([^"]+)"', p)
        for _, n, op, p in oracle.parsed(module_texts.text(name))[1]
        if op == "custom-call"
    }
    assert targets_of == {"legacy-gemm": "__cublas$gemm", "lt-gemm": "__cublas$lt$matmul"}, (
        f"XLA reads {targets_of}"
    )
    for what, text, variant in module_texts.forms(name):
        got = kata.library_epilogues(text)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == module_texts.renamed_keys(variant, expected), (
                f"{what}: got {got}, XLA prints {module_texts.renamed_keys(variant, expected)} "
                "(every target "
                "starting __cublas$ is a cuBLAS call, the legacy __cublas$gemm too)"
            )


@pytest.mark.task("library_epilogues")
def test_library_epilogues_follow_the_activation(kata):
    """dense_stack's four layers: relu, tanh gelu, nothing, erf gelu (not a cuBLAS epilogue)."""
    want = sorted(
        oracle.library_calls(module_texts.text("dense_cublas_h100"), "dense_cublas_h100").values()
    )
    for what, text, _ in module_texts.forms("dense_cublas_h100"):
        got = kata.library_epilogues(text)
        assert isinstance(got, dict)
        assert sorted(got.values()) == want, f"{what}: {sorted(got.values())}, XLA prints {want}"
        with check:
            assert Counter(got.values())["BIAS_GELU"] == 1, "only the tanh gelu fuses as BIAS_GELU"


# ---- gemm_flops --------------------------------------------------------------------------------


FLOPS = {
    **{name: oracle.einsum_flops(specs, shapes) for name, (specs, shapes, _, _) in EINSUMS.items()},
    "dense_cublas_h100": oracle.dense_flops(DENSE_SHAPES),
    "dense_triton_h100": oracle.dense_flops(DENSE_SHAPES),
    "block_gpu_h100": 2 * math.prod(BLOCK_SHAPES[0][0]) * BLOCK_SHAPES[1][0][1],
}


@pytest.mark.task("gemm_flops")
def test_gemm_flops(kata):
    for name in sorted(FLOPS):
        for what, text, _ in module_texts.forms(name):
            got = kata.gemm_flops(text)
            assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
            with check:
                assert got == FLOPS[name], (
                    f"{what}: got {got}, the program's contractions take {FLOPS[name]} flops "
                    "(2 * output elements * contracted size, per GEMM)"
                )


@pytest.mark.task("gemm_flops")
def test_gemm_flops_of_a_gemm_computation_two_fusions_call(kata, fresh):
    """Each module of FLOPS with Triton GEMM fusions in ENTRY, as printed, renamed and
    reordered, with a second fusion calling the fused computation of one of them, drawn afresh
    (metamorphic.shared; XLA deduplicates identical fused computations so): two kernels run it,
    but it holds one dot instruction, and every GEMM instruction counts once."""
    shared = []
    for name in sorted(FLOPS):
        gemms = module_texts.gemm_fusions(module_texts.text(name))
        if not gemms:
            continue  # cuBLAS calls: no fused computation holds a dot
        fusion, computation = fresh.choice(gemms)
        for what, text, variant in module_texts.forms(name):
            own = variant.rename(fusion) if variant else fusion
            twin = metamorphic.shared(text, own)
            assert twin is not None, f"{what}: XLA refuses a second fusion calling {own}'s"
            called = variant.rename(computation) if variant else computation
            calls = rf"\bcalls=%{re.escape(called)}(?![\w.-])"
            callers = [n for _, n, op, p in oracle.parsed(twin.text)[1] if re.search(calls, p)]
            assert len(callers) == 2, f"{what}: XLA reads {callers} calling {called}"
            case = f"{what}, {own} and a second fusion calling {called} ({fresh.where()})"
            got = kata.gemm_flops(twin.text)
            assert isinstance(got, int), f"{case}: expected an int, got {type(got).__name__}"
            with check:
                assert got == FLOPS[name], (
                    f"{case}: got {got}, other flops than the module's GEMM instructions take "
                    "(two fusions calling one fused computation: its dot is one instruction, "
                    "counted once)"
                )
        shared.append(name)
    assert len(shared) >= 4, f"only {shared} hold a Triton GEMM fusion in ENTRY"


@pytest.mark.task("gemm_flops")
def test_gemm_flops_do_not_depend_on_the_lowering(kata):
    """Triton (split-K batched dots) and cuBLAS calls of the same program do the same work."""
    for pair in (("mlp_triton", "mlp_cublas"), ("attention_triton", "attention_cublas")):
        for form in ("as printed", "renamed"):
            texts = (
                module_texts.variants(n)[0].text if form == "renamed" else module_texts.text(n)
                for n in pair
            )
            triton, cublas = (kata.gemm_flops(t) for t in texts)
            with check:
                assert triton == cublas == FLOPS[pair[0]], f"{pair} {form}: {triton} vs {cublas}"


# programs.GEMMS_EVERYWHERE, by hand from its shapes: a legacy cuBLAS call contracting the lhs's
# dimension 0 (f32[64,32]^T @ f32[64,16]), a cuBLAS-Lt call with a bias (f32[32,24] @
# f32[24,8]), a dot in ENTRY contracting dimension 0 (f32[48,16]^T @ f32[48,24]), and a dot in
# a while body (f32[8,40] @ f32[40,40]; counted once per instruction, not per trip).
EVERYWHERE_GEMMS = {
    "legacy-gemm": ("custom-call", "f32[32,16]", 2 * 32 * 16 * 64),
    "lt-gemm": ("custom-call", "f32[32,8]", 2 * 32 * 8 * 24),
    "ptq": ("dot", "f32[16,24]", 2 * 16 * 24 * 48),
    "step": ("dot", "f32[8,40]", 2 * 8 * 40 * 40),
}


@pytest.mark.task("gemm_flops")
def test_gemm_flops_legacy_cublas_entry_and_loop_dots(kata):
    """programs.GEMMS_EVERYWHERE (hand-written): GEMMs where no recording puts them; the lhs's
    contracting dimension is not always its last."""
    name = "gemms_everywhere"
    _, rows = oracle.parsed(module_texts.text(name))
    gemms = {
        n: (op, p.split(" = ", 1)[1].split("{")[0].lstrip("("))
        for _, n, op, p in rows
        if op == "dot" or "__cublas$" in p
    }
    assert gemms == {n: v[:2] for n, v in EVERYWHERE_GEMMS.items()}, f"XLA reads {gemms}"
    entry = re.findall(r"^ENTRY %([\w.-]+)", module_texts.text(name), re.MULTILINE)[0]
    assert {c for c, n, _, _ in rows if n == "step"} != {entry}, "the loop's dot is in ENTRY"
    expected = sum(flops for _, _, flops in EVERYWHERE_GEMMS.values())
    for what, text, _ in module_texts.forms(name):
        got = kata.gemm_flops(text)
        assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: got {got}, its four GEMMs take {expected} flops (the legacy "
                "__cublas$gemm call and the ENTRY dot contract the lhs's dimension 0; a dot in "
                "ENTRY or a while body counts)"
            )
    homes = {n: c for c, n, _, _ in rows if n in EVERYWHERE_GEMMS}
    for home in sorted(set(homes.values())):
        copied = module_texts.copied_uncalled(module_texts.text(name), home)
        more = sum(flops for n, (_, _, flops) in EVERYWHERE_GEMMS.items() if homes[n] == home)
        what = f"{name} with a copy of {home} that nothing calls"
        got = kata.gemm_flops(copied)
        with check:
            assert got == expected + more, (
                f"{what}: got {got}, its GEMMs take {expected + more} flops (every GEMM in the "
                "module counts, one in a computation nothing calls too)"
            )
