"""query, diff, summary and graph agree on the fusions of real compiled programs, and each fusion
agrees with XLA's own parser.

The programs are compiled here with the installed JAX/XLA: a matmul (a `__ynn_fusion` custom
fusion on CPU), a while loop whose body holds fusions, and a softmax whose fusions call reducers.
CPU's optimized HLO holds no fusion inside a fused computation, so one hand-written module (which
XLA's parser must accept) covers nested fusions.

The oracle is jaxlib's private `jaxlib._hlo.hlo_module_from_text` (as in test_oracle.py): each
fusion's kind, callee and output shape come from XLA's printed instruction, its operand count and
the fused computation's opcodes from XLA's objects, and which computations are fusion
computations from `make_nonfusion_computations`. Computations a fused computation calls
(reducers) are found from XLA's printed attribute values that name a computation, whatever the
attribute is called, so the test does not reuse xla_inspect's list of call attributes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import pytest

from kata_harness.xla_shapes import xla_shape
from xla_inspect.capture import capture
from xla_inspect.diff import diff_hlo
from xla_inspect.graph import fusion_graph_dot
from xla_inspect.model import HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.query import Fusion, fused_computation_names, fusions, opcode_counts
from xla_inspect.summary import summarize

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )

_PRINTED_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")
_KIND = re.compile(r", kind=(k\w+)")
_CALLS = re.compile(r", calls=%?([\w.\-]+)")
# `key=%name` or `key={%a, %b}`: any attribute value that may name computations
_NAMED_VALUES = re.compile(r"\b\w+=(%[\w.\-]+|\{%[^{}]*\})")
_NAME = re.compile(r"%([\w.\-]+)")


def _f32(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def _mlp(w, b, x):
    return jax.nn.relu(x @ w + b)


def _layers_in_a_loop(w, x):
    def body(_, v):
        return jax.nn.relu(v @ w) + jnp.sum(v, axis=-1, keepdims=True)

    return jax.lax.fori_loop(0, 3, body, x)


def _softmax(x):
    return jax.nn.softmax(x * 2.0, axis=-1)


PROGRAMS = {
    "mlp": (_mlp, (_f32(16, 32), _f32(32), _f32(8, 16))),
    "while_body": (_layers_in_a_loop, (_f32(32, 32), _f32(8, 32))),
    "softmax": (_softmax, (_f32(8, 128),)),
}

# A kLoop fusion whose fused computation holds a kLoop fusion and a reduce with a reducer.
NESTED = """HloModule nested

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

inner_fused {
  p = f32[8,16]{1,0} parameter(0)
  ROOT e = f32[8,16]{1,0} exponential(p)
}

outer_fused {
  x = f32[8,16]{1,0} parameter(0)
  zero = f32[] parameter(1)
  inner = f32[8,16]{1,0} fusion(x), kind=kLoop, calls=inner_fused
  ROOT r = f32[8]{0} reduce(inner, zero), dimensions={1}, to_apply=add_f32
}

ENTRY main {
  x = f32[8,16]{1,0} parameter(0)
  zero = f32[] constant(0)
  ROOT outer = f32[8]{0} fusion(x, zero), kind=kLoop, calls=outer_fused
}
"""


@dataclass(frozen=True)
class XlaFusion:
    name: str
    computation: str
    kind: str
    fused_computation: str
    operands: int
    shape: str


@dataclass(frozen=True)
class XlaView:
    fusions: dict[str, XlaFusion]
    opcodes: dict[str, Counter[str]]  # computation -> opcode counts
    callees: dict[str, set[str]]  # computation -> computations its attribute values name
    fusion_computations: set[str]


def _xla_view(text: str) -> XlaView:
    module = _hlo.hlo_module_from_text(text)
    names = {c.name for c in module.computations()}
    found: dict[str, XlaFusion] = {}
    opcodes: dict[str, Counter[str]] = {}
    callees: dict[str, set[str]] = {}
    for computation in module.computations():
        counts: Counter[str] = Counter()
        called: set[str] = set()
        for instruction in computation.instructions():
            printed = instruction.to_string()
            opcode = _PRINTED_OPCODE.search(printed)
            assert opcode is not None, printed
            counts[opcode.group(1)] += 1
            for value in _NAMED_VALUES.findall(printed):
                called.update(n for n in _NAME.findall(value) if n in names)
            if instruction.opcode.name == "kFusion":
                kind, calls = _KIND.search(printed), _CALLS.search(printed)
                assert kind is not None and calls is not None, printed
                found[instruction.name] = XlaFusion(
                    instruction.name,
                    computation.name,
                    kind.group(1),
                    calls.group(1),
                    len(instruction.operands()),
                    str(xla_shape(instruction)),
                )
        opcodes[computation.name] = counts
        callees[computation.name] = called
    nonfusion = {c.name for c in module.make_nonfusion_computations()}
    return XlaView(found, opcodes, callees, names - nonfusion)


def _closure(view: XlaView, start: str) -> set[str]:
    seen, pending = set(), [start]
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending.extend(view.callees[name])
    return seen


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def compiled(request) -> tuple[str, str, str]:
    fn, args = PROGRAMS[request.param]
    cap = capture(fn, *args)
    return request.param, cap.hlo_text, cap.optimized_hlo_text


def _check_against_xla(module: HloModule, text: str) -> list[Fusion]:
    view = _xla_view(text)
    found = fusions(module)
    assert [f.name for f in found] and {f.name for f in found} == set(view.fusions)
    for fusion in found:
        xla = view.fusions[fusion.name]
        assert (
            fusion.computation,
            fusion.kind,
            fusion.fused_computation,
            fusion.parameters,
            fusion.shape,
        ) == (xla.computation, xla.kind, xla.fused_computation, xla.operands, xla.shape)
        reached = _closure(view, xla.fused_computation)
        assert fusion.opcodes == sum((view.opcodes[c] for c in reached), Counter())
        assert fusion.absorbed == fusion.opcodes - Counter(parameter=fusion.opcodes["parameter"])
        fused_root = module[fusion.fused_computation].root.opcode
        assert fusion.root_opcode == fused_root
    assert view.fusion_computations <= fused_computation_names(module)
    assert fused_computation_names(module) == set().union(
        *(_closure(view, c) for c in view.fusion_computations)
    )
    return found


def test_fusions_match_xla(compiled) -> None:
    _, _, optimized = compiled
    _check_against_xla(parse_hlo(optimized), optimized)


def test_query_diff_summary_and_graph_agree(compiled) -> None:
    _, unoptimized, optimized = compiled
    module = parse_hlo(optimized)
    found = fusions(module)
    labels = Counter(f.label for f in found)
    summary = summarize(module)
    diff = diff_hlo(parse_hlo(unoptimized), module)
    assert diff.fusions == tuple(found)
    assert dict(summary.fusions_by_kind) == dict(diff.fusions_by_kind) == dict(labels)
    assert sum(labels.values()) == opcode_counts(module)["fusion"] == diff.added["fusion"]
    # diff's `absorbed` column counts each fused computation once, parameters left out
    fused = fused_computation_names(module)
    inside = Counter(
        i.opcode
        for c in module.computations
        if c.name in fused
        for i in c
        if i.opcode != "parameter"
    )
    assert {c.opcode: c.absorbed for c in diff.changes if c.absorbed} == dict(inside)
    data = json.loads(json.dumps(diff.to_dict()))
    assert data["fusions"] == [f.to_dict() for f in found]
    dot = fusion_graph_dot(module)
    in_entry = Counter(f.label for f in found if f.computation == module.entry.name)
    for label, count in in_entry.items():
        assert dot.count(f'[label="fusion {label}\\n') == count


def test_while_body_fusions_sit_in_the_body() -> None:
    fn, args = PROGRAMS["while_body"]
    module = parse_hlo(capture(fn, *args).optimized_hlo_text)
    [loop] = [i for i in module.entry if i.opcode == "while"]
    body = loop.attribute("body")
    assert body is not None
    in_body = [f for f in fusions(module) if f.computation == body.removeprefix("%")]
    assert in_body and all(f.computation != module.entry.name for f in in_body)
    assert any(f.opcodes["dot"] == 1 for f in in_body)


def test_cpu_matmul_is_labelled_as_a_ynn_custom_fusion() -> None:
    if jax.default_backend() != "cpu":
        pytest.skip("the __ynn_fusion custom fusion is the CPU backend's")
    fn, args = PROGRAMS["mlp"]
    found = fusions(parse_hlo(capture(fn, *args).optimized_hlo_text))
    [ynn] = [f for f in found if f.kind == "kCustom"]
    assert (ynn.custom_kind, ynn.label) == ("__ynn_fusion", "kCustom(__ynn_fusion)")
    assert ynn.absorbed == Counter(dot=1) and ynn.parameters == 2


def test_nested_fusion_is_counted_in_its_parent_and_on_its_own() -> None:
    module = parse_hlo(NESTED)
    outer, inner = sorted(_check_against_xla(module, NESTED), key=lambda f: f.name, reverse=True)
    assert (outer.name, outer.computation, inner.name, inner.computation) == (
        "outer",
        "main",
        "inner",
        "outer_fused",
    )
    assert outer.absorbed == Counter(fusion=1, exponential=1, reduce=1, add=1)
    assert (outer.parameters, outer.root_opcode, inner.root_opcode) == (2, "reduce", "exponential")
    assert fused_computation_names(module) == {"outer_fused", "inner_fused", "add_f32"}
    assert summarize(module).fusions_by_kind == {"kLoop": 2}


def test_gpu_style_custom_fusion_config_names_its_kind() -> None:
    text = NESTED.replace(
        "kind=kLoop, calls=outer_fused",
        'kind=kCustom, calls=outer_fused, backend_config={"fusion_backend_config":'
        '{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"16"}}}',
    )
    outer = next(f for f in fusions(parse_hlo(text)) if f.name == "outer")
    assert (outer.kind, outer.custom_kind, outer.label) == (
        "kCustom",
        "__triton_gemm",
        "kCustom(__triton_gemm)",
    )
