"""xla_inspect.iree against IREE's own output: flow listings IREE 3.13.0 printed (fixtures/,
recorded with the iree group) and, with the group, listings compiled now and read by IREE's own
MLIR parser; xla_inspect.iree_compile's messages with and without the group."""

from __future__ import annotations

import re
import sys

import jax
import jax.numpy as jnp
import pytest

from xla_inspect import iree_compile
from xla_inspect.iree import IreeFlowError, read_flow, split_dispatch_name
from xla_inspect.targets import group_missing

from .conftest import HERE

needs_iree = pytest.mark.skipif(
    group_missing("iree") is not None, reason=f"needs: {iree_compile.INSTALL}"
)


def _listing(name: str) -> str:
    return (HERE / "fixtures" / f"iree_{name}_flow.mlir").read_text()


def test_attention_dispatches():
    dispatches = read_flow(_listing("attention"))
    assert [(d.index, d.kind, d.sizes, d.dtype) for d in dispatches] == [
        (0, "batch_matmul", (4, 16, 24, 32), "f32"),
        (1, "softmax", (4, 16, 24), "f32"),
        (2, "batch_matmul", (4, 16, 32, 24), "f32"),
    ]
    assert all(d.function == "main" for d in dispatches)
    assert "linalg.batch_matmul" in dispatches[0].ops
    assert "div" in dispatches[0].sources  # the scaling by 1/sqrt(d) went into the first GEMM


def test_mixed_dtypes_and_vector_kinds():
    found = {d.kind: (d.sizes, d.dtype) for d in read_flow(_listing("projections"))}
    assert found == {
        "matvec": ((48, 40), "f32"),
        "vecmat": ((56, 40), "f32xbf16xf32"),
        "matmul": ((12, 56, 40), "bf16xbf16xf32"),
    }


@pytest.mark.parametrize(
    ("name", "parts"),
    [  # names IREE 3.13.0 printed on this machine
        ("main_dispatch_0_matmul_32x128x64_f32", ("main", 0, "matmul", (32, 128, 64), "f32")),
        ("main_dispatch_0_matmul_Dx128x64_f32", ("main", 0, "matmul", (None, 128, 64), "f32")),
        (
            "main_dispatch_2_softmax_8x256xf32_dispatch_tensor_store",
            ("main", 2, "softmax", (8, 256), "f32"),
        ),
        (
            "main_dispatch_0_elementwise_transpose_8x16_f32",
            ("main", 0, "elementwise_transpose", (8, 16), "f32"),
        ),
        ("main_dispatch_1_elementwise_16_i8xf16", ("main", 1, "elementwise", (16,), "i8xf16")),
        ("main_dispatch_0_elementwise", ("main", 0, "elementwise", (), "")),
        ("main_dispatch_1_conv_8x8x4x3x3x3_f32", ("main", 1, "conv", (8, 8, 4, 3, 3, 3), "f32")),
    ],
)
def test_split_dispatch_name(name, parts):
    assert split_dispatch_name(name) == parts


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("HloModule m\nENTRY e { ROOT p = f32[] parameter(0) }", "not an IREE flow listing"),
        ("  flow.executable private @d {\n  flow.executable.export public @d_dispatch_0", "never"),
    ],
)
def test_bad_listings_say_what_is_wrong(text, message):
    with pytest.raises(IreeFlowError, match=message):
        read_flow(text)


def test_bad_input_types_and_names():
    with pytest.raises(IreeFlowError, match="as text"):
        read_flow(b"flow.executable")  # type: ignore[arg-type]
    with pytest.raises(IreeFlowError, match="not an IREE dispatch name"):
        split_dispatch_name("fusion.3")
    with pytest.raises(IreeCompileErrorType, match="StableHLO text or bytecode"):
        iree_compile.compile_vmfb(42)  # type: ignore[arg-type]


IreeCompileErrorType = iree_compile.IreeCompileError


def test_missing_group_gives_one_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "iree.compiler", None)
    with pytest.raises(iree_compile.IreeMissingError, match=r"uv sync --group iree"):
        iree_compile.compile_vmfb("module {}")


def _iree_parse(text: str):
    """(export names, {export: location names its function computes}) by IREE's MLIR parser."""
    from iree.compiler import ir  # pyright: ignore[reportMissingImports]  (the iree group)

    module = ir.Module.parse(text, ir.Context())  # pyright: ignore[reportAttributeAccessIssue]
    exports, sources = [], {}
    moves = re.compile(r"\.dispatch\.tensor\.(load|store)$")

    def walk(op, into):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if into is not None and not moves.search(inner.name):
                        into.update(_loc_names(str(inner.location)))
                    if inner.name == "flow.executable.export":
                        exports.append(inner.attributes["sym_name"].value)
                    if inner.name == "func.func":
                        name = inner.attributes["sym_name"].value
                        walk(inner, sources.setdefault(name, set()))
                    else:
                        walk(inner, into)

    walk(module.operation, None)
    return exports, sources


def _loc_names(location: str) -> set[str]:
    """The operation named by one location as IREE's bindings print it: a name with a `/` (its
    last part), or the callee of a call site (an operation inside a called jit)."""
    quoted = r'"((?:[^"\\]|\\.)*)"'
    callee = re.match(rf"loc\(callsite\({quoted}", location)
    if callee:
        return {callee[1].rsplit("/", 1)[-1]}
    assert not location.startswith("loc(fused"), f"a fused location: {location}"
    name = re.match(rf"loc\({quoted}(?!:\d)", location)
    return {name[1].rsplit("/", 1)[1]} if name and "/" in name[1] else set()


@needs_iree
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "program",
    ["mlp", "layernorm", "grad"],
)
def test_read_flow_agrees_with_iree_parser(program):
    x = jax.ShapeDtypeStruct((12, 20), jnp.float32)
    w = jax.ShapeDtypeStruct((20, 36), jnp.float32)

    def mlp(x, w):
        return jax.nn.silu(x @ w) @ w.T

    def layernorm(x, w):
        centred = x - x.mean(-1, keepdims=True)
        return centred / jnp.sqrt((centred**2).mean(-1, keepdims=True) + 1e-6) @ w

    def grad(x, w):
        return jax.grad(lambda w: jnp.tanh(x @ w).sum())(w)

    fn = {"mlp": mlp, "layernorm": layernorm, "grad": grad}[program]
    text = iree_compile.flow_listing(fn, x, w)
    exports, sources = _iree_parse(text)
    dispatches = read_flow(text)
    assert [d.name for d in dispatches] == exports
    for d in dispatches:
        assert d.sources == frozenset(sources[d.name]), d.name


@needs_iree
def test_refused_module_names_the_custom_call():
    module = iree_compile.export(jnp.linalg.solve, jnp.eye(3), jnp.ones(3)).mlir_module()
    with pytest.raises(iree_compile.IreeCompileError, match="lapack_sgetrf_ffi"):
        iree_compile.compile_vmfb(module)


@needs_iree
def test_portable_bytecode_compiles_too():
    exported = iree_compile.export(lambda x: jnp.tanh(x) * 2, jnp.ones((4, 4)))
    restored = jax.export.deserialize(exported.serialize())
    assert iree_compile.compile_vmfb(restored.mlir_module_serialized)[:4] != b""
