"""Phase 12 tests: facts read from optimized GPU HLO, checked against XLA's own parser.

The reading tasks run on modules recorded from deviceless compiles (katas/phase12/recorded/,
listed in programs.RECORDINGS) and on hand-written modules (programs.HANDWRITTEN, for cases the
recordings never show), so they run without the ``gpu`` group; each module is read as printed
and as its metamorphic variants (kata_harness.metamorphic: every name relabelled, computations
reordered, each accepted by XLA's parser). Their expected values come from XLA's parser
(``jaxlib._hlo``: opcodes, the printed instruction, the module's schedule) and, for flops and
all-reduce sizes, from NumPy arithmetic on the programs' shapes (all-reduces also on seeded
random parameter pytrees). The decide tasks compile live for gpu-h100 / gpu-a100 and skip,
naming the group, without it; overlap_options is also checked on this host against the flags
XLA accepts.
"""

import math
import re
import zlib
from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec
from pytest_check import check

from kata_harness import metamorphic, oracles
from kata_harness.targets import recorded, require
from katas.phase12.programs import (
    BLOCK_SHAPES,
    BOTH_SPLIT,
    CUBLAS,
    DENSE_CASES,
    DENSE_SHAPES,
    EINSUMS,
    FSDP_CASES,
    GRADS,
    HANDWRITTEN,
    SPEC_CASES,
    SYNC_ALL_REDUCE,
    block,
    fsdp_lowering,
    handwritten_gelu_dense,
    sds,
    sharded_matmul,
)
from xla_inspect import targets
from xla_inspect.parse import parse_hlo

PHASE = "phase12"
_KIND = re.compile(r"\bkind=(\w+)")
_CUSTOM = re.compile(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"')
_CALLS = re.compile(r"\bcalls=%?([\w.-]+)")
_SHAPE = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")


CPU_BLOCK = "block_cpu"


@cache
def _text(name: str) -> str:
    """A recorded module, a hand-written one (programs.HANDWRITTEN), or (CPU_BLOCK)
    programs.block compiled for this host's CPU now."""
    if name == CPU_BLOCK:
        text = jax.jit(block).lower(*(sds(s, d) for s, d in BLOCK_SHAPES)).compile().as_text()
        assert text is not None
        return text
    if name in HANDWRITTEN:
        return HANDWRITTEN[name]
    return recorded(PHASE, name)


@cache
def _variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The module renamed (every name a label like %n17) and its computations reordered, each
    confirmed by XLA's parser; seeded by the module's name."""
    found = tuple(metamorphic.variants(_text(name), seed=zlib.crc32(name.encode())))
    assert found, f"{name}: no metamorphic variant XLA accepts"
    return found


def _forms(name: str):
    """(what, text, variant): the module as XLA printed it (variant None), then each variant.
    An answer must follow the module's facts, not its names or the order of its computations."""
    yield name, _text(name), None
    seed = zlib.crc32(name.encode())
    for variant in _variants(name):
        yield f"{name} ({variant.kind}, seed {seed})", variant.text, variant


def _renamed_keys(variant, expected: dict) -> dict:
    """expected with its keys (instruction names) renamed as in the variant; values kept (an
    opcode such as "fusion" may also be some instruction's name)."""
    return expected if variant is None else {variant.rename(k): v for k, v in expected.items()}


def _opcode(instruction) -> str:
    """The opcode as XLA prints it (all-gather-start, exponential): the word after the
    instruction's shape in XLA's own printing (the enum's names differ: kExp is exponential)."""
    rest = instruction.to_string().split(" = ", 1)[1]
    depth = 0
    for position, char in enumerate(rest):
        depth += (char == "(") - (char == ")")
        if char == " " and depth == 0:
            return rest[position + 1 :].split("(", 1)[0]
    raise AssertionError(f"no opcode in {rest[:80]}")


@cache
def _xla(name: str):
    """XLA's parse of a module: [(computation, instruction name, opcode, printed text)]."""
    module = oracles.xla_parsed(_text(name))
    return module, [
        (c.name, i.name, _opcode(i), i.to_string())
        for c in module.computations()
        for i in c.instructions()
    ]


def _label(printed: str) -> str:
    kind = _KIND.search(printed)
    custom = _CUSTOM.search(printed)
    base = kind.group(1) if kind else ""
    return f"{base}({custom.group(1)})" if custom else base


def _fusion_callers(name: str) -> dict[str, tuple[str, str]]:
    """fused computation -> (computation holding the fusion, the fusion's kind label)."""
    _, rows = _xla(name)
    callers = {}
    for computation, _, opcode, printed in rows:
        called = _CALLS.search(printed)
        if opcode == "fusion" and called:
            callers[called.group(1)] = (computation, _label(printed))
    return callers


SIDE_BY_SIDE = (CPU_BLOCK, "block_gpu_h100", "block_gpu_a100", "block_tpu_v5e")


# ---- fusion_kinds ------------------------------------------------------------------------------


def _matched(pattern: str, text: str) -> str:
    """The first group of ``pattern`` in ``text`` (which must hold it)."""
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in {text[:120]!r}"
    return found.group(1)


@pytest.mark.task("fusion_kinds")
def test_fusion_kinds(kata):
    for name in (*SIDE_BY_SIDE, "reductions_h100", "conv_h100", "mlp_grad_h100"):
        _, rows = _xla(name)
        expected = dict(Counter(_label(p) for _, _, opcode, p in rows if opcode == "fusion"))
        for what, text, _ in _forms(name):
            got = kata.fusion_kinds(text)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: got {got}, XLA's parser counts {expected}"


@pytest.mark.task("fusion_kinds")
def test_fusion_kinds_differ_per_target(kata):
    """The same program: each target has kinds the others never print (renamed too)."""
    for form in range(2):
        kinds = {
            name: kata.fusion_kinds(_variants(name)[0].text if form else _text(name))
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


def _reduce_homes(name: str) -> dict[str, int]:
    """Each reduce of XLA's parse, under the kind of the outermost fusion reaching it."""
    _, rows = _xla(name)
    callers = _fusion_callers(name)
    homes: Counter[str] = Counter()
    for computation, _, opcode, _printed in rows:
        if opcode != "reduce":
            continue
        label = "unfused"
        while computation in callers:
            computation, label = callers[computation]
        homes[label] += 1
    return dict(homes)


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
        expected = _reduce_homes(name)
        for what, text, _ in _forms(name):
            got = kata.reduction_kinds(text)
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: got {got}, XLA's parse puts the reduces in {expected}"
                )


@pytest.mark.task("reduction_kinds")
def test_reduction_kinds_a_gpu_reduce_is_not_always_kinput(kata):
    kinds = set(_reduce_homes("reductions_h100"))
    with check:
        assert len(kinds - {"kInput"}) >= 2, "the recording should show reductions beside kInput"
    for what, text, _ in _forms("reductions_h100"):
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
    _, rows = _xla(name)
    opcodes = Counter(opcode for _, _, opcode, _ in rows)
    near = {"all-reduce", "reduce-scatter", "reduce-window", "reduce-precision"}
    assert near <= set(opcodes), f"XLA reads {sorted(opcodes)}"
    callers = _fusion_callers(name)
    nested = [
        (callers[c][1], callers[callers[c][0]][1])
        for c, _, opcode, _ in rows
        if opcode == "reduce" and c in callers and callers[c][0] in callers
    ]
    assert sorted(nested) == [("kLoop", "kCustom(__triton)"), ("kLoop", "kInput")], nested
    expected = _reduce_homes(name)
    for what, text, _ in _forms(name):
        got = kata.reduction_kinds(text)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: got {got}, XLA's parse puts the reduces in {expected} (a reduce counts "
                "under the outermost fusion reaching it; only opcode reduce is a reduce)"
            )


# ---- library_epilogues -------------------------------------------------------------------------


def _library_calls(name: str) -> dict[str, str]:
    _, rows = _xla(name)
    found = {}
    for _, instruction, opcode, printed in rows:
        target = re.search(r'custom_call_target="(__(?:cublas|cudnn)\$[^"]*)"', printed)
        if opcode != "custom-call" or not target:
            continue
        value = re.search(r'\\?"(?:epilogue|activation_mode)\\?":\\?"(\w+)', printed)
        assert value, f"{name}: {instruction} prints no epilogue or activation mode"
        found[instruction] = value.group(1)
    return found


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
        for what, text, variant in _forms(name):
            got = kata.library_epilogues(text)
            expected = _renamed_keys(variant, _library_calls(name))
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: got {got}, XLA prints {expected}"


@pytest.mark.task("library_epilogues")
def test_library_epilogues_legacy_cublas_gemm(kata):
    """programs.GEMMS_EVERYWHERE (hand-written): a legacy cuBLAS call (`__cublas$gemm`, what XLA
    emits for f64 or with cuBLAS-Lt off) is a cuBLAS call too."""
    name = "gemms_everywhere"
    expected = _library_calls(name)
    targets_of = {
        n: _matched(r'custom_call_target="([^"]+)"', p)
        for _, n, op, p in _xla(name)[1]
        if op == "custom-call"
    }
    assert targets_of == {"legacy-gemm": "__cublas$gemm", "lt-gemm": "__cublas$lt$matmul"}, (
        f"XLA reads {targets_of}"
    )
    for what, text, variant in _forms(name):
        got = kata.library_epilogues(text)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == _renamed_keys(variant, expected), (
                f"{what}: got {got}, XLA prints {_renamed_keys(variant, expected)} (every target "
                "starting __cublas$ is a cuBLAS call, the legacy __cublas$gemm too)"
            )


@pytest.mark.task("library_epilogues")
def test_library_epilogues_follow_the_activation(kata):
    """dense_stack's four layers: relu, tanh gelu, nothing, erf gelu (not a cuBLAS epilogue)."""
    want = sorted(_library_calls("dense_cublas_h100").values())
    for what, text, _ in _forms("dense_cublas_h100"):
        got = kata.library_epilogues(text)
        assert isinstance(got, dict)
        assert sorted(got.values()) == want, f"{what}: {sorted(got.values())}, XLA prints {want}"
        with check:
            assert Counter(got.values())["BIAS_GELU"] == 1, "only the tanh gelu fuses as BIAS_GELU"


# ---- gemm_flops --------------------------------------------------------------------------------


def _einsum_flops(specs, shapes) -> int:
    sizes: dict[str, int] = {}
    operands = [shapes[0]] + list(shapes[1:])
    letters = [specs[0].split("->")[0].split(",")[0]] + [
        s.split("->")[0].split(",")[1] for s in specs
    ]
    for indices, shape in zip(letters, operands, strict=True):
        sizes.update(zip(indices, shape, strict=True))
    return sum(
        2 * math.prod(sizes[i] for i in set(spec.split("->")[0].replace(",", ""))) for spec in specs
    )


def _dense_flops() -> int:
    rows = DENSE_SHAPES[0][0][0]
    weights = [s for s, _ in DENSE_SHAPES if len(s) == 2][1:]
    return sum(2 * rows * k * n for k, n in weights)


FLOPS = {
    **{name: _einsum_flops(specs, shapes) for name, (specs, shapes, _, _) in EINSUMS.items()},
    "dense_cublas_h100": _dense_flops(),
    "dense_triton_h100": _dense_flops(),
    "block_gpu_h100": 2 * math.prod(BLOCK_SHAPES[0][0]) * BLOCK_SHAPES[1][0][1],
}


@pytest.mark.task("gemm_flops")
def test_gemm_flops(kata):
    for name in sorted(FLOPS):
        for what, text, _ in _forms(name):
            got = kata.gemm_flops(text)
            assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
            with check:
                assert got == FLOPS[name], (
                    f"{what}: got {got}, the program's contractions take {FLOPS[name]} flops "
                    "(2 * output elements * contracted size, per GEMM)"
                )


@pytest.mark.task("gemm_flops")
def test_gemm_flops_do_not_depend_on_the_lowering(kata):
    """Triton (split-K batched dots) and cuBLAS calls of the same program do the same work."""
    for pair in (("mlp_triton", "mlp_cublas"), ("attention_triton", "attention_cublas")):
        for form in ("as printed", "renamed"):
            texts = (_variants(n)[0].text if form == "renamed" else _text(n) for n in pair)
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
    _, rows = _xla(name)
    gemms = {
        n: (op, p.split(" = ", 1)[1].split("{")[0].lstrip("("))
        for _, n, op, p in rows
        if op == "dot" or "__cublas$" in p
    }
    assert gemms == {n: v[:2] for n, v in EVERYWHERE_GEMMS.items()}, f"XLA reads {gemms}"
    entry = re.findall(r"^ENTRY %([\w.-]+)", _text(name), re.MULTILINE)[0]
    assert {c for c, n, _, _ in rows if n == "step"} != {entry}, "the loop's dot is in ENTRY"
    expected = sum(flops for _, _, flops in EVERYWHERE_GEMMS.values())
    for what, text, _ in _forms(name):
        got = kata.gemm_flops(text)
        assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"{what}: got {got}, its four GEMMs take {expected} flops (the legacy "
                "__cublas$gemm call and the ENTRY dot contract the lhs's dimension 0; a dot in "
                "ENTRY or a while body counts)"
            )


# ---- collective_overlap ------------------------------------------------------------------------


def _schedule(name: str) -> dict[str, list[str]]:
    """computation -> instruction names in XLA's own schedule."""
    module, _ = _xla(name)
    order: dict[str, list[str]] = {}
    current = None
    for line in module.schedule().to_string().splitlines():
        head = re.match(r"computation ([^\s:]+)", line)  # "... (thread main):" on newer XLA
        if head:
            current = order.setdefault(head.group(1), [])
        elif line.strip() and current is not None:
            current.append(line.strip())
    return order


def _async_wrapped(name: str) -> set[str]:
    """Computations XLA treats as part of an async-start (it prints them inline, as sugar such
    as reduce-scatter-start): those holding some async-start's wrapped root."""
    module, _ = _xla(name)
    roots = {
        i.async_wrapped_root().name
        for c in module.computations()
        for i in c.instructions()
        if str(i.opcode).endswith("kAsyncStart")
    }
    return {c.name for c in module.computations() if any(i.name in roots for i in c.instructions())}


def _overlaps(name: str) -> dict[str, list[str]]:
    _, rows = _xla(name)
    opcode_of = {(c, n): op for c, n, op, _ in rows}
    printed = {(c, n): p for c, n, _, p in rows}
    plain = {"all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all"}
    found: dict[str, list[str]] = {}
    wrapped = _async_wrapped(name)
    for computation, names in _schedule(name).items():
        if computation in wrapped:
            continue
        for position, instruction in enumerate(names):
            opcode = opcode_of[(computation, instruction)]
            if opcode in plain:
                found[instruction] = []
            elif opcode.removesuffix("-start") in plain and opcode.endswith("-start"):
                done = next(
                    k
                    for k in range(position + 1, len(names))
                    if f"-done(%{instruction})" in printed[(computation, names[k])]
                )
                found[instruction] = [
                    opcode_of[(computation, n)] for n in names[position + 1 : done]
                ]
    return found


OVERLAP_RECORDINGS = (
    "matmul_2x2_a100",
    "matmul_2x2_h100",
    "fsdp4_h100",
    "grad_towers_mixed",
    "mlp_cublas",
)


@pytest.mark.task("collective_overlap")
def test_collective_overlap(kata):
    for name in OVERLAP_RECORDINGS:
        for what, text, variant in _forms(name):
            got = kata.collective_overlap(text)
            expected = _renamed_keys(variant, _overlaps(name))
            assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: got {got}, XLA's schedule says {expected}"


@pytest.mark.task("collective_overlap")
def test_collective_overlap_sync_and_async_side_by_side(kata):
    """The same sharded matmul: A100 keeps one gather async, H100 makes both synchronous."""
    for form in ("as printed", "renamed"):
        a100, h100 = (
            kata.collective_overlap(_variants(n)[0].text if form == "renamed" else _text(n))
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
    _, rows = _xla(name)
    schedule = _schedule(name)
    entry = re.findall(r"^ENTRY %([\w.-]+)", _text(name), re.MULTILINE)[0]
    main = schedule[entry]
    dones = [n for n in main if n.endswith("-done")]
    printed = {n: p for c, n, _, p in rows if c == entry}
    assert [_matched(r"-done\(%([\w.-]+)\)", printed[d]) for d in dones] == [
        "second-start",
        "first-start",
    ], f"XLA schedules {main}"
    elsewhere = {
        c for c, _, opcode, _ in rows if c != entry and opcode.startswith(("all-", "coll"))
    }
    assert len(elsewhere) == 2, f"collectives outside ENTRY in {sorted(elsewhere)}"
    for what, text, variant in _forms(name):
        got = kata.collective_overlap(text)
        expected = _renamed_keys(variant, _overlaps(name))
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
    _, rows = _xla(name)
    starts = {n: op for _, n, op, _ in rows if op.endswith("-start")}
    assert starts == {
        "scatter-start": "reduce-scatter-start",
        "sum-start": "all-reduce-start",
        "gather-start": "all-gather-start",
    }, f"XLA reads the starts as {starts}"
    assert "async-start(" in _text(name) and len(_async_wrapped(name)) == 2
    expected = _overlaps(name)
    assert expected == {
        "scatter-start": ["negate"],
        "sum-start": ["exponential", "multiply"],
        "gather-start": [],
    }, f"XLA's schedule says {expected}"
    for what, text, variant in _forms(name):
        got = kata.collective_overlap(text)
        assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == _renamed_keys(variant, expected), (
                f"{what}: got {got}, XLA's schedule says {_renamed_keys(variant, expected)} (an "
                "async-start whose wrapped computation holds a collective is that collective's "
                "start)"
            )


# ---- overlap_options (decide) ------------------------------------------------------------------


def _gathers(text: str) -> tuple[int, int, int]:
    """(bytes the all-gathers produce, async gathers with a GEMM kernel in flight, gathers)."""
    entry = parse_hlo(text).entry
    order = list(entry)
    produced, overlapped, gathers = 0, 0, 0
    for position, instruction in enumerate(order):
        if instruction.opcode in ("all-gather", "all-gather-done"):
            gathers += 1
            for dtype, dims in _SHAPE.findall(instruction.shape):
                width = int(re.sub(r"\D", "", dtype) or 8)
                produced += math.prod(int(d) for d in dims.split(",") if d) * width // 8
        if instruction.opcode == "all-gather-start":
            rest = order[position + 1 :]
            end = next(k for k, j in enumerate(rest) if instruction.name in j.operands)
            overlapped += any("gemm" in (j.attribute("backend_config") or "") for j in rest[:end])
    return produced, overlapped, gathers


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
    before_bytes, before_overlapped, _ = _gathers(_fsdp_text(case))
    after_bytes, overlapped, gathers = _gathers(_fsdp_text(case, tuple(sorted(options.items()))))
    with check:
        assert after_bytes == before_bytes, (
            f"{case}: the gathers produce {after_bytes} bytes, the original {before_bytes}: "
            "the same weights must be gathered"
        )
    with check:
        assert gathers == layers and overlapped >= layers - 1, (
            f"{case}: {overlapped} of {gathers} all-gathers have a GEMM in flight (default "
            f"options: {before_overlapped}); the budget is one gather per weight, each but the "
            f"first layer's async with a GEMM in flight: {layers - 1} of {layers}"
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
    _, overlapped, gathers = _gathers(_text("fsdp4_h100"))
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


# ---- gather_free_specs (decide) ----------------------------------------------------------------

_ANY_COLLECTIVE = re.compile(
    r"^(all-gather|all-reduce|reduce-scatter|collective-permute|all-to-all)(-start)?$"
)


def _collective_bytes(text: str) -> tuple[int, int]:
    """(collectives in every computation, bytes their results hold)."""
    count, produced = 0, 0
    for computation in parse_hlo(text).computations:
        for instruction in computation:
            if _ANY_COLLECTIVE.match(instruction.opcode):
                count += 1
                for dtype, dims in _SHAPE.findall(instruction.shape):
                    width = int(re.sub(r"\D", "", dtype) or 8)
                    produced += math.prod(int(d) for d in dims.split(",") if d) * width // 8
    return count, produced


def _matmul_text(case: str, x_spec, w_spec) -> str:
    target_name, x_shape, w_shape = SPEC_CASES[case]
    target = require(target_name)
    text = sharded_matmul(x_shape, w_shape, x_spec, w_spec)(target).compile().as_text()
    assert text is not None
    return text


@cache
def _original_matmul(case: str) -> tuple[int, int]:
    return _collective_bytes(_matmul_text(case, *BOTH_SPLIT))


@pytest.mark.task("gather_free_specs")
@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_gather_free_specs_need_no_collective(kata, case):
    specs = kata.gather_free_specs()
    assert isinstance(specs, tuple) and len(specs) == 2, f"expected (x spec, w spec), got {specs}"
    assert all(isinstance(s, PartitionSpec) for s in specs), f"expected PartitionSpecs: {specs}"
    original, original_bytes = _original_matmul(case)
    count, produced = _collective_bytes(_matmul_text(case, tuple(specs[0]), tuple(specs[1])))
    with check:
        assert original > 0, f"{case}: the original should need collectives"
    with check:
        assert count == 0, (
            f"{case}: {count} collectives producing {produced} bytes are left; the original's "
            f"{original} produce {original_bytes}: the budget is none"
        )


@cache
def _argument_bytes(case: str, x_spec: tuple, w_spec: tuple) -> int:
    """Argument bytes per device of the case's matmul compiled with these specs for this host's
    CPU devices (memory_analysis; the same blocks of x and w a GPU would hold)."""
    _, x_shape, w_shape = SPEC_CASES[case]
    lowered = sharded_matmul(x_shape, w_shape, x_spec, w_spec)(targets.get("cpu"))
    stats = lowered.compile().memory_analysis()
    assert stats is not None
    return int(stats.argument_size_in_bytes)


@pytest.mark.task("gather_free_specs")
@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_gather_free_specs_memory_budget(kata, case):
    """No collective is easy with whole operands: the budget is half of the replicated bytes."""
    specs = kata.gather_free_specs()
    assert isinstance(specs, tuple) and len(specs) == 2, f"expected (x spec, w spec), got {specs}"
    assert all(isinstance(s, PartitionSpec) for s in specs), f"expected PartitionSpecs: {specs}"
    got = _argument_bytes(case, tuple(specs[0]), tuple(specs[1]))
    replicated = _argument_bytes(case, (), ())
    with check:
        assert got <= replicated // 2, (
            f"{case}: x and w take {got} bytes per device; replicated they take {replicated}, "
            f"the budget is half of that: {replicated // 2}"
        )


# ---- fused_dense (decide) ----------------------------------------------------------------------


def _kernels(text: str) -> int:
    """Kernels the ENTRY launches: fusions and custom calls."""
    return sum(i.opcode in ("fusion", "custom-call") for i in parse_hlo(text).entry)


def _dense_kernels(fn, case: str) -> int:
    target = require("gpu-h100")
    placed = [target.place(sds(s, d)) for s, d in DENSE_CASES[case]]
    try:
        text = jax.jit(fn).lower(*placed).compile(compiler_options=CUBLAS).as_text()
    except Exception as error:  # noqa: BLE001  (XLA:GPU refusing the program is the answer's fault)
        raise AssertionError(
            f"{case}: XLA:GPU cannot compile it for gpu-h100 with Triton GEMMs off ({error!r:.300})"
        ) from error
    assert text is not None
    return _kernels(text)


@cache
def _original_dense_kernels(case: str) -> int:
    return _dense_kernels(handwritten_gelu_dense, case)


def _dense_inputs(case: str, seed: int):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=s).astype(d) for s, d in DENSE_CASES[case])


@pytest.mark.task("fused_dense")
@pytest.mark.parametrize("case", sorted(DENSE_CASES))
def test_fused_dense_values(kata, case):
    for seed in (0, 1):
        args = _dense_inputs(case, seed)
        got = np.asarray(jax.jit(kata.fused_dense)(*args), np.float32)
        want = np.asarray(jax.jit(handwritten_gelu_dense)(*args), np.float32)
        assert got.shape == want.shape, f"{case}: shape {got.shape}, expected {want.shape}"
        loose = args[0].dtype != np.float32
        np.testing.assert_allclose(
            got, want, rtol=5e-2 if loose else 1e-5, atol=5e-2 if loose else 1e-5
        )


@pytest.mark.task("fused_dense")
@pytest.mark.parametrize("case", sorted(DENSE_CASES))
def test_fused_dense_keeps_the_gemm_in_the_program(kata, case):
    """On this host: the layer must stay a program XLA compiles, with the GEMM in it for cuBLAS
    to run (a host callback computes the right values but leaves XLA no GEMM and no epilogue)."""
    lowered = jax.jit(kata.fused_dense).lower(*(sds(s, d) for s, d in DENSE_CASES[case]))
    text = lowered.as_text()
    with check:
        assert "stablehlo.dot" in text, f"{case}: the lowered program holds no dot (no GEMM)"
    calls = sorted(set(re.findall(r"custom_call @([\w.]+)", text)))
    with check:
        assert not calls, f"{case}: the lowered program calls out of XLA ({calls})"


@pytest.mark.task("fused_dense")
@pytest.mark.parametrize("case", sorted(DENSE_CASES))
def test_fused_dense_needs_fewer_kernels(kata, case):
    original = _original_dense_kernels(case)
    got = _dense_kernels(kata.fused_dense, case)
    assert got < original, (
        f"{case}: {got} kernels with Triton GEMMs off; the hand-written gelu takes {original}"
    )


# ---- allreduce_elements (predict) --------------------------------------------------------------


def _all_reduced(name: str) -> dict[str, int]:
    _, rows = _xla(name)
    found: Counter[str] = Counter()
    for _, _, opcode, printed in rows:
        if opcode in ("all-reduce", "all-reduce-start"):
            head = printed.split(" all-reduce")[0]
            for dtype, dims in _SHAPE.findall(head):
                found[dtype] += math.prod(int(d) for d in dims.split(",") if d)
    return dict(found)


@pytest.mark.task("allreduce_elements")
def test_allreduce_elements(kata):
    for name in sorted(GRADS):
        _, params, _, _ = GRADS[name]
        got = kata.allreduce_elements({k: sds(s, d) for k, (s, d) in params.items()})
        expected = _all_reduced(name)
        assert isinstance(got, dict), f"{name}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, f"{name}: predicted {got}, XLA all-reduces {expected}"


@pytest.mark.task("allreduce_elements")
def test_allreduce_elements_of_arrays(kata):
    _, params, _, _ = GRADS["grad_towers_mixed"]
    arrays = [np.zeros(s, d) for s, d in params.values()]
    got = kata.allreduce_elements(arrays)
    assert got == _all_reduced("grad_towers_mixed"), f"got {got}"


# Fresh parameter pytrees: nested dicts, lists and tuples of 1-D to 4-D leaves in every float
# dtype XLA:GPU all-reduces, some ShapeDtypeStructs and some arrays. XLA concatenates the
# gradients of one dtype into one flat all-reduce (checked against XLA:GPU's own compile below,
# with the gpu group), so the expected count is NumPy arithmetic on the shapes drawn here.
_LEAF_DTYPES = (("f32", np.float32), ("bf16", jnp.bfloat16), ("f16", np.float16))
RANDOM_SEEDS = range(40)


def _random_pytree(rng: np.random.Generator, leaves: list, depth: int = 0):
    """A pytree drawn from rng; appends (HLO dtype, shape) of each leaf to leaves."""
    if depth == 3 or (depth > 0 and rng.random() < 0.45):
        shape = tuple(int(d) for d in rng.integers(1, 7, size=int(rng.integers(1, 5))))
        hlo, dtype = _LEAF_DTYPES[int(rng.integers(len(_LEAF_DTYPES)))]
        leaves.append((hlo, shape))
        return sds(shape, dtype) if rng.random() < 0.5 else np.zeros(shape, dtype)
    children = [_random_pytree(rng, leaves, depth + 1) for _ in range(int(rng.integers(1, 4)))]
    container = int(rng.integers(3))
    if container == 0:
        return {f"{'abcdefgh'[int(rng.integers(8))]}{k}": c for k, c in enumerate(children)}
    return children if container == 1 else tuple(children)


def _random_case(seed: int):
    leaves: list = []
    params = _random_pytree(np.random.default_rng(seed), leaves)
    expected: Counter[str] = Counter()
    for hlo, shape in leaves:
        expected[hlo] += math.prod(shape)
    shown = jax.tree.map(lambda x: f"{_HLO_NAMES[np.dtype(x.dtype).name]}{list(x.shape)}", params)
    return params, dict(expected), leaves, shown


_HLO_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


@pytest.mark.task("allreduce_elements")
def test_allreduce_elements_of_random_pytrees(kata):
    """Nested pytrees, leaves of rank 1 to 4, f32/bf16/f16: a fresh draw per seed."""
    drawn = [_random_case(seed) for seed in RANDOM_SEEDS]
    ranks = {len(shape) for _, _, leaves, _ in drawn for _, shape in leaves}
    dtypes = {hlo for _, _, leaves, _ in drawn for hlo, _ in leaves}
    assert ranks == {1, 2, 3, 4} and dtypes == {h for h, _ in _LEAF_DTYPES}, (ranks, dtypes)
    for seed, (params, expected, _, shown) in zip(RANDOM_SEEDS, drawn, strict=True):
        got = kata.allreduce_elements(params)
        assert got == expected, (
            f"seed {seed}: params {shown}: predicted {got}, XLA:GPU all-reduces {expected} "
            "(one flat all-reduce per dtype of every gradient's elements)"
        )


def _random_loss(params, x):
    """Every element of every parameter's gradient depends on the whole (split) batch."""
    total = jnp.zeros((), jnp.float32)
    for leaf in jax.tree.leaves(params):
        total += jnp.sum(jnp.tanh(x[:, :1].astype(leaf.dtype) * leaf.reshape(1, -1)))
    return total


@pytest.mark.task("allreduce_elements")
@pytest.mark.parametrize("seed", (3, 11, 29))
def test_allreduce_elements_of_random_pytrees_match_xla(kata, seed):
    """The rule above against XLA:GPU itself: the gradients of a random pytree compiled for
    gpu-h100, the batch split over 4 devices, the all-reduces read from the text."""
    target = require("gpu-h100")
    params, _, _, shown = _random_case(seed)
    mesh = target.mesh((4,), ("d",))
    placed = jax.tree.map(lambda x: target.place(sds(x.shape, x.dtype), mesh), params)
    batch = target.place(sds((64, 8), jnp.float32), mesh, "d", None)
    lowered = jax.jit(jax.grad(_random_loss)).lower(placed, batch)
    text = lowered.compile(compiler_options=SYNC_ALL_REDUCE).as_text()
    assert text is not None
    found: Counter[str] = Counter()
    for computation in parse_hlo(text).computations:
        for instruction in computation:
            if instruction.opcode in ("all-reduce", "all-reduce-start"):
                for dtype, dims in _SHAPE.findall(instruction.shape):
                    found[dtype] += math.prod(int(d) for d in dims.split(",") if d)
    got = kata.allreduce_elements(params)
    assert got == dict(found), f"seed {seed}: params {shown}: predicted {got}, XLA {dict(found)}"
