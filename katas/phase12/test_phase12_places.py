"""Phase 12 tests, fusions and custom calls where a reader who walks ENTRY and its fusions never
looks: fusions in while bodies and conditions (a jax.lax.scan), in conditional branches (a
jax.lax.cond), in called computations and started asynchronously (fusion-start), and custom calls
that are not library calls (top_k's __gpu$TopK, cuSOLVER's Cholesky).

The modules are recorded from deviceless gpu-h100 compiles (scan_h100, branches_h100,
solvers_h100) or hand-written (programs.FUSIONS_ELSEWHERE), each read as printed and as its
metamorphic variants; where the fusions sit and what is expected come from XLA's parser
(kata_harness.oracles.gpu_hlo).
"""

import re

import pytest
from pytest_check import check

from kata_harness.oracles import gpu_hlo as oracle
from katas.phase12 import texts as module_texts

ELSEWHERE = ("scan_h100", "branches_h100", "fusions_elsewhere")


def _places_covered() -> None:
    """The modules put fusions in every place the contract's "every computation" covers."""
    places = set().union(*(oracle.fusion_places(module_texts.text(n)) for n in ELSEWHERE))
    want = {"while", "conditional", "call", "fusion", "fusion-start"}
    assert want <= places, f"XLA's parse puts fusions only under {sorted(places)}"


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
            got = kata.fusion_kinds(text)
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
            got = kata.reduction_kinds(text)
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
        got = kata.library_epilogues(form)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == module_texts.renamed_keys(variant, expected), (
                f"{what}: got {len(got)} calls, XLA prints {len(expected)} cuBLAS/cuDNN calls "
                "(a custom call whose target starts neither __cublas$ nor __cudnn$ is not a "
                "library call)"
            )
