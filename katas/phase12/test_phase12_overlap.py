"""Phase 12 tests, collectives in flight: what XLA schedules while each collective runs, read
from recorded and hand-written GPU modules (as printed and renamed) against XLA's own schedule
(kata_harness.oracles.gpu_hlo); and compiler options that overlap an FSDP stack's gathers with
its GEMMs, compiled live for gpu-h100 / gpu-a100 (skipping, naming the ``gpu`` group, without
it) and checked on this host against the flags XLA accepts.
"""

import random
import re
import zlib
from collections import Counter
from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import gpu_hlo as oracle
from kata_harness.targets import require
from katas.phase12 import texts as module_texts
from katas.phase12.programs import (
    BLOCK_SHAPES,
    FSDP_CASES,
    FSDP_DOMAIN,
    block,
    fsdp_lowering,
    sds,
)


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


# ---- collective_overlap ------------------------------------------------------------------------


OVERLAP_RECORDINGS = (
    "matmul_2x2_a100",
    "matmul_2x2_h100",
    "fsdp4_h100",
    "grad_towers_mixed",
    "mlp_cublas",
    "block_tpu_v5e",  # copy-start / copy-done pairs: copies, not collectives
)


@pytest.mark.task("collective_overlap")
def test_collective_overlap(kata):
    for name in OVERLAP_RECORDINGS:
        for what, text, variant in module_texts.forms(name):
            got = kata.collective_overlap(text)
            expected = module_texts.renamed_keys(variant, oracle.overlaps(module_texts.text(name)))
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: got {got}, XLA's schedule says {expected}"


@pytest.mark.task("collective_overlap")
def test_collective_overlap_sync_and_async_side_by_side(kata):
    """The same sharded matmul: A100 keeps one gather async, H100 makes both synchronous."""
    for form in ("as printed", "renamed"):
        a100, h100 = (
            kata.collective_overlap(
                module_texts.variants(n)[0].text if form == "renamed" else module_texts.text(n)
            )
            for n in ("matmul_2x2_a100", "matmul_2x2_h100")
        )
        assert isinstance(a100, dict) and isinstance(h100, dict)
        with check:
            assert sum(bool(ops) for ops in a100.values()) == 1, f"A100 {form}: {a100}"
        with check:
            assert len(h100) == 2 and not any(h100.values()), f"H100 {form}: {h100}"


@pytest.mark.task("collective_overlap")
def test_collective_overlap_out_of_order_and_outside_entry(kata):
    """programs.NESTED_COLLECTIVES (hand-written): two all-gathers in flight at once, the
    second finishing first; an async collective-permute and an all-reduce in a while body; an
    async and a synchronous all-gather in a called computation."""
    name = "nested_collectives"
    _, rows = oracle.parsed(module_texts.text(name))
    schedule = oracle.schedule(module_texts.text(name))
    entry = re.findall(r"^ENTRY %([\w.-]+)", module_texts.text(name), re.MULTILINE)[0]
    main = schedule[entry]
    dones = [n for n in main if n.endswith("-done")]
    printed = {n: p for c, n, _, p in rows if c == entry}
    assert [module_texts.matched(r"-done\(%([\w.-]+)\)", printed[d]) for d in dones] == [
        "second-start",
        "first-start",
    ], f"XLA schedules {main}"
    elsewhere = {
        c for c, _, opcode, _ in rows if c != entry and opcode.startswith(("all-", "coll"))
    }
    assert len(elsewhere) == 2, f"collectives outside ENTRY in {sorted(elsewhere)}"
    for what, text, variant in module_texts.forms(name):
        got = kata.collective_overlap(text)
        expected = module_texts.renamed_keys(variant, oracle.overlaps(module_texts.text(name)))
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: got {got}, XLA's schedule says {expected} (a start pairs with the done "
                "that reads it; every computation that is not a fused one counts)"
            )


@pytest.mark.task("collective_overlap")
def test_collective_overlap_async_start_wrapping_a_collective(kata):
    """programs.ASYNC_COLLECTIVES (hand-written): a reduce-scatter and an all-reduce each started
    by a generic async-start whose wrapped computation holds the collective (XLA reads them as
    reduce-scatter-start / all-reduce-start), and a native all-gather-start with nothing in
    flight. Key the async-start; the wrapped collective is not a synchronous one of its own."""
    name = "async_collectives"
    _, rows = oracle.parsed(module_texts.text(name))
    starts = {n: op for _, n, op, _ in rows if op.endswith("-start")}
    assert starts == {
        "scatter-start": "reduce-scatter-start",
        "sum-start": "all-reduce-start",
        "gather-start": "all-gather-start",
    }, f"XLA reads the starts as {starts}"
    assert (
        "async-start(" in module_texts.text(name)
        and len(oracle.async_wrapped(module_texts.text(name))) == 2
    )
    expected = oracle.overlaps(module_texts.text(name))
    assert expected == {
        "scatter-start": ["negate"],
        "sum-start": ["exponential", "multiply"],
        "gather-start": [],
    }, f"XLA's schedule says {expected}"
    for what, text, variant in module_texts.forms(name):
        got = kata.collective_overlap(text)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == module_texts.renamed_keys(variant, expected), (
                f"{what}: got {got}, XLA's schedule says "
                f"{module_texts.renamed_keys(variant, expected)} (an async-start whose wrapped "
                "computation holds a collective is that collective's start)"
            )


@pytest.mark.task("collective_overlap")
def test_collective_overlap_wrapped_under_a_tuple_copies_and_fused_collectives(kata):
    """handwritten.ODD_COLLECTIVES: an async-start whose wrapped computation holds a
    reduce-scatter under a tuple ROOT (XLA names that start async-start, not
    reduce-scatter-start: it is still the collective's start), a copy-start / copy-done pair in
    flight beside it (not a collective), and an all-reduce inside a fused computation (not
    listed: fused computations are not walked)."""
    name = "odd_collectives"
    _, rows = oracle.parsed(module_texts.text(name))
    opcodes = {n: op for _, n, op, _ in rows}
    fused = oracle.fused_computations(module_texts.text(name))
    assert {"async-start", "copy-start"} <= set(opcodes.values()), f"XLA reads {opcodes}"
    assert any(c in fused and op == "all-reduce" for c, _, op, _ in rows), "no fused all-reduce"
    wrapped = oracle.async_wrapped(module_texts.text(name))
    roots = {c: op for c, _, op, p in rows if c in wrapped and p.startswith("ROOT")}
    assert wrapped and "reduce-scatter" not in roots.values(), f"wrapped roots {roots}"
    expected = oracle.overlaps(module_texts.text(name))
    assert len(expected) == 1, f"XLA's schedule has {len(expected)} collectives in flight"
    for what, text, variant in module_texts.forms(name):
        got = kata.collective_overlap(text)
        want = module_texts.renamed_keys(variant, expected)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == want, (
                f"{what}: got {sorted(got)} as collectives, XLA's schedule has {len(want)}, "
                "with what runs while it is in flight (an async-start whose wrapped computation "
                "holds a collective anywhere is its start; a copy-start is no collective; a "
                "fused computation's collectives are not listed)"
            )


@pytest.mark.task("collective_overlap")
def test_collective_overlap_update_steps_other_async_ops_and_other_collectives(kata):
    """handwritten.ASYNC_CHAINS: a reduce-scatter (generic async-start) and an all-to-all
    (all-to-all-start) each with async-update steps between start and done (the done reads the
    last update; the updates are the collective's own steps, not in its list), an async-start
    wrapping a fusion (no collective) in flight with the all-to-all (listed as the text prints
    it here and as its generic opcode however printed: async-start / async-done, which XLA
    re-prints as fusion-start), and ragged-all-to-all
    (async and not) and collective-broadcast, which are none of the five kinds."""
    name = "async_chains"
    _, rows = oracle.parsed(module_texts.text(name))
    opcodes = Counter(op for _, _, op, _ in rows)
    assert opcodes["reduce-scatter-update"] == 2 and opcodes["all-to-all-update"] == 1, opcodes
    others = {"fusion-start", "ragged-all-to-all-start", "ragged-all-to-all"}
    assert others | {"collective-broadcast"} <= set(opcodes), f"XLA reads {sorted(opcodes)}"
    assert "async-update(" in module_texts.text(name), "no update in the generic spelling"
    xla_reads = oracle.overlaps(module_texts.text(name))
    assert len(xla_reads) == 4 and sum(map(bool, xla_reads.values())) == 3, "XLA's schedule"
    # XLA re-prints the in-flight generic async-start wrapping a fusion as fusion-start /
    # fusion-done; this text prints (and spells no op as) async-start / async-done.
    resugared = {"fusion-start": "async-start", "fusion-done": "async-done"}
    assert not any(f" {op}(" in module_texts.text(name) for op in resugared), "printed as XLA"
    assert any(set(resugared) <= set(ops) for ops in xla_reads.values()), f"XLA reads {xla_reads}"
    expected = oracle.overlaps(module_texts.text(name), generic=True)
    assert expected == {k: [resugared.get(op, op) for op in ops] for k, ops in xla_reads.items()}
    for what, text, variant in module_texts.forms(name):
        got = _read(kata.collective_overlap, text, what)
        want = module_texts.renamed_keys(variant, expected)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == want, (
                f"{what}: {len(got)} collectives where XLA's schedule has {len(want)}; "
                f"{len(_differing(got, want))} keys differ (a start's done may read its last "
                "async-update; an async op wrapping no all-gather, all-reduce, reduce-scatter, "
                "collective-permute or all-to-all is no collective; the updates are not work in "
                "flight; an async op in flight is async-start / async-done however printed)"
            )


@pytest.mark.task("collective_overlap")
def test_collective_overlap_async_all_reduce_fusions_are_fusions(kata):
    """grad_fused_all_reduce_h100: XLA:GPU's default for small gradient all-reduces, each a
    Triton collective fusion run asynchronously (`fusion-start ... kind=kCustom,
    calls=%fused_all-reduce...`): an async op wrapping a fusion, its all-reduce in a fused
    computation. No collective of a computation that is not a fused one: nothing to list."""
    name = "grad_fused_all_reduce_h100"
    text = module_texts.text(name)
    _, rows = oracle.parsed(text)
    fused = oracle.fused_computations(text)
    reduces = {c for c, _, op, _ in rows if op == "all-reduce"}
    starts = [p for _, _, op, p in rows if op == "fusion-start"]
    assert len(reduces) == 2 and reduces <= fused, f"all-reduces in {sorted(reduces)}"
    assert len(starts) == 2 and all("kind=kCustom" in p for p in starts), "no async fusions"
    outside = {op for c, _, op, _ in rows if c not in fused}
    assert not {op for op in outside if op.startswith(("all-", "reduce-scatter", "coll"))}, outside
    expected = oracle.overlaps(text)
    assert expected == {}, f"XLA's schedule says {expected}"
    for what, form, _ in module_texts.forms(name):
        got = _read(kata.collective_overlap, form, what)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == {}, (
                f"{what}: {len(got)} collectives where there are none: an async op wrapping a "
                "fusion is no collective, even when the fusion's fused computation holds an "
                "all-reduce (fused computations' collectives are not listed)"
            )


@pytest.mark.task("collective_overlap")
def test_collective_overlap_in_xla_s_own_spelling(kata):
    """handwritten.ASYNC_CHAINS as XLA prints it back (its parser's module, printed): the generic
    async-starts become sugar (reduce-scatter-start, all-to-all-start, and fusion-start /
    fusion-done for the async fusion in flight). Spelling is not meaning: the same collectives,
    and the in-flight async op is still listed as async-start / async-done."""
    name = "async_chains"
    printed = oracle.xla_parsed(module_texts.text(name)).to_string()
    assert " fusion-start(" in printed and " async-start(" not in printed, "XLA's spelling"
    expected = oracle.overlaps(module_texts.text(name), generic=True)
    assert oracle.overlaps(printed, generic=True) == expected, "XLA reads its spelling alike"
    assert any("async-start" in ops for ops in expected.values()), f"XLA reads {expected}"
    got = _read(kata.collective_overlap, printed, f"{name} as XLA prints it")
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    assert got == expected, (
        f"{name} as XLA prints it: {len(got)} collectives where XLA's schedule has "
        f"{len(expected)}; {len(_differing(got, expected))} keys differ (sugar such as "
        "reduce-scatter-start is an async-start wrapping the collective; an async op in flight "
        "is async-start / async-done however it is printed, fusion-start too)"
    )


def _in_flight_elsewhere():
    """(what, text, expected): modules whose windows hold instructions that call computations
    (texts.dones_delayed: every done as late as its users allow, so NESTED_COLLECTIVES' first
    gather is in flight over a while and a call; texts.fusions_called: matmul_2x2_a100's
    ENTRY fusions reached through calls, or through conditionals), as made and renamed;
    expected from XLA's schedule."""
    made = [module_texts.dones_delayed(n) for n in ("nested_collectives", "async_collectives")]
    made += [module_texts.dones_delayed("odd_collectives")]
    made += [module_texts.fusions_called(_A100, through) for through in ("call", "conditional")]
    for variant in made:
        expected = oracle.overlaps(variant.text, generic=True)
        yield f"{variant.kind}", variant.text, expected
        renamed = metamorphic.renamed(
            variant.text, random.Random(zlib.crc32(variant.text.encode()))
        )
        assert renamed is not None, f"XLA refuses {variant.kind} renamed"
        yield f"{variant.kind}, renamed", renamed.text, module_texts.renamed_keys(renamed, expected)


_A100 = "matmul_2x2_a100"


@pytest.mark.task("collective_overlap")
def test_collective_overlap_calls_and_loops_in_flight(kata):
    """What runs while a collective is in flight may itself call computations: a `call`, a
    `while`, a fusion reached through a call or a conditional. Each is listed by its own opcode
    (`call`, `while`, `conditional`), not by what its computations hold."""
    cases = list(_in_flight_elsewhere())
    listed = {op for _, _, expected in cases for ops in expected.values() for op in ops}
    assert {"call", "while", "conditional"} <= listed, f"in flight: {sorted(listed)}"
    for what, text, expected in cases:
        got = _read(kata.collective_overlap, text, what)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: {len(got)} collectives where XLA's schedule has {len(expected)}; "
                f"{len(_differing(got, expected))} keys differ (each instruction printed "
                "between a start and its done is listed once, by its own opcode: a call is "
                "`call`, a while `while`, a conditional `conditional`, whatever the computations "
                "they call hold)"
            )


# ---- overlap_options (decide) ------------------------------------------------------------------


@cache
def _fsdp_text(case: str, options: tuple = ()) -> str:
    target_name, layers, rows, width = FSDP_CASES[case]
    target = require(target_name)
    lowered = fsdp_lowering(layers, rows, width)(target)
    text = lowered.compile(compiler_options=dict(options) or None).as_text()
    assert text is not None
    return text


@pytest.mark.task("overlap_options")
@pytest.mark.parametrize("case", sorted(FSDP_CASES))
def test_overlap_options_overlap_the_gathers(kata, case):
    options = kata.overlap_options()
    assert isinstance(options, dict) and all(isinstance(k, str) for k in options), (
        f"expected a dict of option names, got {options!r:.120}"
    )
    layers = FSDP_CASES[case][1]
    before_bytes, before_overlapped, _ = oracle.gathers(_fsdp_text(case))
    after_bytes, overlapped, gathers = oracle.gathers(
        _fsdp_text(case, tuple(sorted(options.items())))
    )
    with check:
        assert after_bytes == before_bytes, (
            f"{case}: the gathers produce {after_bytes} bytes, the original {before_bytes}: "
            "the same weights must be gathered"
        )
    before_gemms = oracle.gemm_kernels(_fsdp_text(case))
    after_gemms = oracle.gemm_kernels(_fsdp_text(case, tuple(sorted(options.items()))))
    assert before_gemms, f"{case}: the default compile has no GEMM kernel"
    with check:
        assert after_gemms == before_gemms, (
            f"{case}: the options change the GEMMs' kernels ({sum(after_gemms.values())} "
            f"GEMM kernels of {len(after_gemms)} kinds, the default compile "
            f"{sum(before_gemms.values())} of {len(before_gemms)}): options about collectives "
            "leave the program as it is, only its collectives' scheduling changes"
        )
    with check:
        assert gathers == layers and overlapped >= layers - 1, (
            f"{case}: {overlapped} of {gathers} all-gathers have a GEMM in flight (default "
            f"options: {before_overlapped}); the budget is one gather per weight, each but the "
            f"first layer's async with a GEMM in flight: {layers - 1} of {layers}"
        )


# Strata of programs.FSDP_DOMAIN: deep stacks of the narrowest weights (2 KiB each, where a
# combine threshold sized to the listed cases still merges gathers and XLA starts every gather
# at once), the deepest stack of 64-wide weights (also all started at once: 15 in flight, so
# any in-flight limit below 15 falls short whatever the seed), and any stack.
FSDP_STRATA = {
    "deep, 32 wide": (range(9, 17), (32,)),
    "deepest, 64 wide": (FSDP_DOMAIN["layers"][-1:], (64,)),
    "anywhere": (FSDP_DOMAIN["layers"], FSDP_DOMAIN["widths"]),
}


@pytest.mark.task("overlap_options")
@pytest.mark.parametrize("stratum", sorted(FSDP_STRATA))
def test_overlap_options_on_drawn_stacks(kata, fresh, stratum):
    """The budget on a stack drawn from programs.FSDP_DOMAIN, not only the listed cases: one
    gather per weight (each weight's bf16 bytes, by arithmetic on the drawn shape), all but the
    first with a GEMM in flight."""
    options = kata.overlap_options()
    assert isinstance(options, dict) and all(isinstance(k, str) for k in options), (
        f"expected a dict of option names, got {options!r:.120}"
    )
    depths, widths = FSDP_STRATA[stratum]
    layers, width = fresh.choice(depths), fresh.choice(widths)
    rows = fresh.choice(FSDP_DOMAIN["rows"])
    assert layers in FSDP_DOMAIN["layers"] and width in FSDP_DOMAIN["widths"]
    lowered = fsdp_lowering(layers, rows, width)(require("gpu-h100"))
    text = lowered.compile(compiler_options=options).as_text()
    assert text is not None
    produced, overlapped, gathers = oracle.gathers(text)
    case = f"{layers} layers of {width}, x of {rows} rows on gpu-h100 ({fresh.where()})"
    with check:
        assert produced == layers * width * width * 2, (
            f"{case}: the gathers produce {produced} bytes: the same weights must be gathered"
        )
    with check:
        assert gathers == layers and overlapped >= layers - 1, (
            f"{case}: {overlapped} of {gathers} all-gathers have a GEMM in flight; the budget "
            f"is one gather per weight, each but the first layer's async with a GEMM in flight"
        )


@pytest.mark.task("overlap_options")
def test_overlap_options_are_flags_xla_accepts(kata):
    """Runs without the gpu group. The recorded default compile (fsdp4_h100.hlo) gathers every
    weight in one synchronous all-gather, so the defaults miss the budget; and every option must
    be a flag XLA knows, with a value of its type: this host's XLA reads the same flag set as
    XLA:GPU (one DebugOptions) and refuses an unknown name or a bad value, as XLA:GPU would."""
    options = kata.overlap_options()
    assert isinstance(options, dict) and all(isinstance(k, str) for k in options), (
        f"expected a dict of option names, got {options!r:.120}"
    )
    _, overlapped, gathers = oracle.gathers(module_texts.text("fsdp4_h100"))
    assert (overlapped, gathers) == (0, 1), "the recording: one combined synchronous gather"
    with check:
        assert options, (
            "no options: the default compile (fsdp4_h100.hlo) combines the 4 weights' gathers "
            "into one synchronous all-gather, none in flight with a GEMM"
        )
    with check:
        assert all(isinstance(v, (bool, int, str)) for v in options.values()), options
    lowered = jax.jit(block).lower(*(sds(s, d) for s, d in BLOCK_SHAPES))
    refused = None
    try:
        lowered.compile(compiler_options=options)
    except Exception as error:  # noqa: BLE001  (XLA raises its own error types)
        refused = str(error)
    with check:
        assert refused is None, f"XLA refuses {options}: {refused}"
    # A str is a value of a string flag's type only: XLA parses "16" for an int flag too, but
    # refuses the empty string for any flag that is not a string, naming the flag's type (a
    # string flag takes it as unset: no side effect, e.g. no dump for xla_dump_to).
    for name, value in sorted(options.items()):
        if not isinstance(value, str):
            continue
        typed = None
        try:
            lowered.compile(compiler_options={name: ""})
        except Exception as error:  # noqa: BLE001  (XLA raises its own error types)
            typed = re.search(r"is not a valid (\w+) value", str(error))
        with check:
            assert typed is None or typed.group(1) == "string", (
                f"{name}: given the str {value!r}, but XLA's flag holds a {typed.group(1)} "
                "(a value of its type: an int for an integer flag, a bool for a bool flag)"
                if typed
                else ""
            )
