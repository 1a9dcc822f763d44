"""Phase 15 tests: JAX programs exported as StableHLO, compiled and run by IREE. This file holds
the reading tasks merged_by_iree and export_facts; test_phase15_flops.py matmul_flops,
test_phase15_run.py the runs, test_phase15_verdict.py the verdicts, test_phase15_portable.py the
portable exports.

The reading tasks run on IREE flow listings recorded with the ``iree`` group
(katas/phase15/recorded/, programs.FLOWS; tests/harness/test_iree_recordings.py keeps them
current) and, with the group, on listings of freshly drawn programs compiled now. A listing is
also read with its dispatches' function renamed and its executables in another order (what IREE
prints for a module whose function has another name; MLIR does not order symbols), and XLA's
module renamed, reordered, with its fusions nested and with joined op_names. Expected
values come from other sources than the listing's names: flops from the dot_generals of the
program's jaxpr, XLA's kernels from XLA's own parser, IREE's verdicts from each draw's export
(checked against IREE with the group and against programs.VERDICTS), versions from the
bytecode's producer string and from what the test asked jax.export for. The decide tasks are
checked by running what they return: through IREE with the group, through JAX and jax.export
without it.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from pytest_check import check

from kata_harness import iree, metamorphic, oracles
from katas.phase15.draws import (
    f32,
    flow_forms,
    flow_listing,
    joined_op_names,
    recorded,
)
from katas.phase15.programs import (
    FLOWS,
    Flow,
)
from xla_inspect.iree import read_flow

# ---- merged_by_iree (read) -----------------------------------------------------------------

_CALLS = re.compile(r"\b(?:calls|to_apply|body|condition)=\{?%?([\w.-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_OP_NAMES = re.compile(r'op_name="([^"]*)"')


def _last_parts(joined: list[str]) -> set[str]:
    return {n.rsplit("/", 1)[1] for j in joined for n in j.split(";") if "/" in n}


def _xla_dot_kernel_names(hlo_text: str) -> set[str]:
    """Names held by XLA's kernels that hold a dot, read through XLA's own parser."""
    module = oracles.xla_parsed(hlo_text)
    computations = {c.name: c for c in module.computations()}
    entry = re.search(r"^ENTRY %?([\w.-]+)", hlo_text, re.MULTILINE)
    assert entry is not None
    names: set[str] = set()
    for instruction in computations[entry[1]].instructions():
        printed = [instruction.to_string()]
        pending = _called(printed[0])
        seen: set[str] = set()
        while pending:
            callee = pending.pop()
            if callee in seen or callee not in computations:
                continue
            seen.add(callee)
            for inner in computations[callee].instructions():
                printed.append(inner.to_string())
                pending.extend(_called(printed[-1]))
        if any(re.search(r"\] dot\(|\} dot\(", p) for p in printed):
            names |= _last_parts([m for p in printed for m in _OP_NAMES.findall(p)])
    return names


def _called(printed: str) -> list[str]:
    found = _CALLS.findall(printed)
    for branches in _BRANCHES.findall(printed):
        found.extend(b.strip().lstrip("%") for b in branches.split(","))
    return found


def _iree_matmul_names(flow_text: str) -> set[str]:
    contractions = {"matmul", "batch_matmul", "matvec", "vecmat"}
    return {n for d in read_flow(flow_text) if d.kind in contractions for n in d.sources}


# The expected side of these tests is kept per text (and per generator state where it draws):
# the census runs each test on every version of a kata file, which under one --kata-seed draw
# the same cases, and XLA's compiles and parses of them would otherwise be paid once a version.


@functools.lru_cache(maxsize=256)
def _merged(hlo_text: str, flow_text: str) -> tuple[frozenset[str], frozenset[str]]:
    ours, theirs = _iree_matmul_names(flow_text), _xla_dot_kernel_names(hlo_text)
    ours.discard("dot_general")
    theirs.discard("dot_general")
    return frozenset(ours - theirs), frozenset(theirs - ours)


def _xla_cpu(program: Flow) -> str:
    """XLA's optimized CPU module of the program, compiled once per lowered text (locations
    included: they become the op_names the task reads)."""
    lowered = jax.jit(program.fn).lower(*program.args())
    key = lowered.as_text(debug_info=True)
    if key not in _XLA_CPU:
        text = lowered.compile().as_text()
        assert text is not None
        _XLA_CPU[key] = text
    return _XLA_CPU[key]


_XLA_CPU: dict[str, str] = {}


def _hlo_forms(hlo: str, rng: random.Random) -> list[tuple[str, str]]:
    """The module as printed, renamed, reordered, with its dots' op_names joined with another
    name, and with its fusions nested one level deeper, joined names and all (each form
    accepted by XLA's parser: a dot fusion holding a second name is one that nesting hides).
    Made once per module and generator state: a second call draws from ``rng`` as the first
    did and leaves it where the first did."""
    state = rng.getstate()
    kept = _FORMS.get((hlo, state))
    if kept is None:
        kept = _FORMS[hlo, state] = (_hlo_forms_drawn(hlo, rng), rng.getstate())
    rng.setstate(kept[1])
    return list(kept[0])


_FORMS: dict[tuple[str, tuple[Any, ...]], tuple[tuple[tuple[str, str], ...], tuple[Any, ...]]] = {}


def _hlo_forms_drawn(hlo: str, rng: random.Random) -> tuple[tuple[str, str], ...]:
    forms = [("as printed", hlo)]
    forms += [(v.kind, v.text) for v in metamorphic.variants(hlo, seed=rng.getrandbits(16))]
    joined = joined_op_names(hlo, rng)
    forms += [] if joined is None else [("op_names joined", joined)]
    nested = metamorphic.nested(hlo if joined is None else joined)
    return tuple(forms + ([] if nested is None else [("nested, op_names joined", nested.text)]))


@pytest.mark.task("merged_by_iree")
def test_merged_by_iree_on_recorded_listings(kata):
    rng = random.Random(27)
    for name, program in sorted(FLOWS.items()):
        listings = list(flow_forms(name, recorded(name), rng))
        for at, (hlo_form, hlo_text) in enumerate(_hlo_forms(_xla_cpu(program), rng)):
            flow_form, flow_text = listings[at % len(listings)]
            expected = _merged(hlo_text, flow_text)
            got = kata.merged_by_iree(hlo_text, flow_text)
            assert isinstance(got, tuple) and len(got) == 2, f"{name}: expected a pair of sets"
            with check:
                assert (set(got[0]), set(got[1])) == expected, (
                    f"{name} (HLO {hlo_form}, listing {flow_form}): got {got}"
                )


def _fresh_vector_layers(rng: random.Random):
    """A matrix-vector and a vector-matrix product with a bias and an activation: IREE names
    their dispatches `matvec` and `vecmat` and puts the bias and activation inside."""
    r, k = rng.randint(4, 64), rng.randint(4, 64)
    act_name, act = rng.choice([("tanh", jnp.tanh), ("exp", jnp.exp), ("sigmoid", jax.nn.sigmoid)])
    yield (
        f"{act_name}(m @ v + c) {r}x{k}",
        Flow("matvec", lambda m, v, c: act(m @ v + c), (((r, k), f32), ((k,), f32), ((r,), f32))),
    )
    yield (
        f"{act_name}(v @ m + c) {k}x{r}",
        Flow("vecmat", lambda v, m, c: act(v @ m + c), (((k,), f32), ((k, r), f32), ((r,), f32))),
    )


def _named_scope(rng: random.Random) -> str:
    return f"{rng.choice(['epilogue', 'head', 'post', 'act'])}{rng.randint(0, 99)}"


def _called_jit(act: Any, name: str) -> Any:
    """``act`` behind a jit of a function called ``name`` (a nested jit in the program)."""

    def called(y: Any) -> Any:
        return act(y)

    called.__name__ = called.__qualname__ = name
    return jax.jit(called)


def _fresh_layers(rng: random.Random):
    activations = {
        "gelu": jax.nn.gelu,
        "relu": jax.nn.relu,
        "tanh": jnp.tanh,
        "silu": jax.nn.silu,
        "sigmoid": jax.nn.sigmoid,
        "exp": jnp.exp,
    }
    for at in range(3):
        act_name = rng.choice(sorted(activations))
        act = activations[act_name]
        if at == 0:
            # The first layer's activation runs inside a jit of its own, named afresh: IREE's
            # listing then locates its ops as loc(callsite(<op> at <that jit's scope>)), whose
            # caller is a name but not an operation.
            scope = _named_scope(rng)
            act, act_name = _called_jit(act, scope), f"jit({scope})({act_name})"
        bias, second = rng.random() < 0.5, rng.random() < 0.5
        m, k, n = rng.randint(4, 64), rng.randint(4, 64), rng.randint(4, 64)

        def layer(x, w, b, w2, act=act, bias=bias, second=second):
            y = x @ w
            y = act(y + b if bias else y)
            return y @ w2 if second else y

        shapes = (((m, k), f32), ((k, n), f32), ((n,), f32), ((n, 8), f32))
        yield f"{act_name} bias={bias} second={second} {m}x{k}x{n}", Flow("layer", layer, shapes)


def _fresh_reduced_layer(rng: random.Random):
    """An activation and a reduction after a matmul big enough for XLA's YNN dot fusion, which
    keeps both in the dot's kernel, while IREE computes them in a reduction dispatch of its own:
    names only XLA's matmul kernel holds, though IREE's listing holds them too."""
    act_name, act = rng.choice([("tanh", jnp.tanh), ("exp", jnp.exp), ("sigmoid", jax.nn.sigmoid)])
    reductions = [("sum", jnp.sum), ("max", jnp.max), ("mean", jnp.mean), ("min", jnp.min)]
    red_name, red = rng.choice(reductions)
    axis = rng.randint(0, 1)
    m, k, n = rng.choice([32, 48, 64]), rng.choice([64, 96, 128]), rng.choice([128, 160, 192, 256])

    def reduced(x, w):
        return red(act(x @ w), axis=axis)

    shapes = (((m, k), f32), ((k, n), f32))
    yield (
        f"{red_name}({act_name}(x @ w), axis={axis}) {m}x{k}x{n}",
        Flow("reduced", reduced, shapes),
    )


@pytest.mark.timeout(120)
@pytest.mark.task("merged_by_iree")
def test_merged_by_iree_on_fresh_layers(kata, fresh):
    iree.require()
    drawn = [*_fresh_layers(fresh), *_fresh_vector_layers(fresh), *_fresh_reduced_layer(fresh)]
    for what, program in drawn:
        flow_text = flow_listing(program.fn, *program.args())
        hlo_form, hlo = fresh.choice(_hlo_forms(_xla_cpu(program), fresh))
        expected = _merged(hlo, flow_text)
        got = kata.merged_by_iree(hlo, flow_text)
        with check:
            assert (set(got[0]), set(got[1])) == expected, (
                f"{what}, HLO {hlo_form} ({fresh.where()}): got {got}"
            )


# ---- export_facts (read) -------------------------------------------------------------------


def _producer(module_bytecode: bytes) -> str:
    """The producer string of MLIR bytecode: after the magic and a prefix varint version."""
    assert module_bytecode[:4] == b"ML\xefR", "not MLIR bytecode"
    first = module_bytecode[4]
    width = (first & -first).bit_length()  # trailing zeros + 1 bytes hold the version
    end = module_bytecode.index(b"\0", 4 + width)
    return module_bytecode[4 + width : end].decode()


_PLATFORMS = ("cpu", "cuda", "tpu")


def _spelled(platforms: tuple[str, ...], rng: random.Random, mixed: bool) -> tuple[str, ...]:
    """The platform names as a user may write them to jax.export, which keeps the case it is
    given ("CPU", "Cuda"): each letter's case drawn; with ``mixed`` at least one is not lower."""
    while True:
        spelled = tuple(
            "".join(c.upper() if rng.random() < 0.5 else c for c in name) for name in platforms
        )
        if not mixed or any(name != name.lower() for name in spelled):
            return spelled


def _current_stablehlo() -> tuple[int, ...]:
    from jax._src.lib.mlir.dialects import hlo  # what jax.export serializes with

    return tuple(int(p) for p in str(hlo.get_current_version()).split("."))


def _rewritten_for_older_stablehlo(exported, rng: random.Random, one_digit_minor: bool):
    """The export with its module's bytecode written again for an older StableHLO version (what
    an older jax release writes), drawn below the one this jax writes for; with
    ``one_digit_minor`` a 1.x.y, whose string is shorter than the 1.xx.y this jax writes."""
    from jax._src.lib.mlir.dialects import hlo

    written = _producer(exported.mlir_module_serialized).removeprefix("StableHLO_v")
    current = _current_stablehlo()
    while True:
        minor = rng.randint(0, min(9, current[1]) if one_digit_minor else current[1])
        target = (1, minor, rng.randint(0, 9))
        if target <= current and ".".join(map(str, target)) != written:
            break
    version = ".".join(map(str, target))
    data = hlo.serialize_portable_artifact_str(exported.mlir_module(), version)
    return dataclasses.replace(exported, mlir_module_serialized=bytes(data))


@pytest.mark.task("export_facts")
def test_export_facts(kata, fresh):
    low = jax.export.minimum_supported_calling_convention_version
    high = jax.export.maximum_supported_calling_convention_version
    before = jax.config.jax_export_calling_convention_version
    functions = [jnp.sin, lambda x: x @ x.T, lambda x: jax.nn.softmax(x, -1), jnp.cumsum]
    try:
        for version in range(low, high + 1):
            for drawn in range(3):
                size = 2 if drawn == 0 else fresh.randint(1, 3)
                platforms = tuple(fresh.sample(_PLATFORMS, size))
                if drawn == 0 and platforms == tuple(sorted(platforms)):
                    platforms = platforms[::-1]  # one case is never in alphabetical order
                # jax.export keeps the case it is given; one case always has a capital letter
                given = _spelled(platforms, fresh, mixed=drawn == 0)
                # A cumsum exported for CUDA holds a `chlo.scan` composite that StableHLO cannot
                # write for another version: the rewritten case draws among the others.
                fn = fresh.choice(functions if drawn != 1 else functions[:3])
                shape = (fresh.randint(1, 9), fresh.randint(1, 9))
                jax.config.update("jax_export_calling_convention_version", version)
                exported = jax.export.export(jax.jit(fn), platforms=given)(
                    jax.ShapeDtypeStruct(shape, f32)
                )
                if drawn == 1:
                    # one version string of another length on every run
                    exported = _rewritten_for_older_stablehlo(exported, fresh, version == low)
                blob = bytes(exported.serialize())
                producer = _producer(exported.mlir_module_serialized)
                assert producer.startswith("StableHLO_v"), producer
                expected = (producer.removeprefix("StableHLO_v"), version, platforms)
                # This process now exports with another convention than the blob's.
                other = high if version != high else low
                jax.config.update("jax_export_calling_convention_version", other)
                got = kata.export_facts(blob)
                with check:
                    assert tuple(got) == expected, (
                        f"exported for platforms={given}, calling convention {version} "
                        f"({fresh.where()}): got {got}"
                    )
    finally:
        jax.config.update("jax_export_calling_convention_version", before)
