"""capture() however people compile: keyword and static arguments, pytrees (dicts, NamedTuples,
dataclasses, flax structs), jax.jit, flax.nnx.jit and equinox's filter_jit, Traced and Lowered
stages, each checked against plain jax.jit of the same function; capture_ir of compiled
objects and IR files; the persistent cache turned off while dumping."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from xla_inspect.capture import Capture, CaptureError, capture, capture_ir
from xla_inspect.errors import HloParseError
from xla_inspect.jaxpr import in_avals
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

# Every way people compile, each checked against an independent path: `jax.jit(f).lower(...)
# .compile().as_text()` of the same function, read for the ENTRY parameter shapes (in order) and
# the opcode counts over every computation.


def _facts(optimized_hlo_text: str) -> tuple[list[str], dict[str, int]]:
    module = parse_hlo(optimized_hlo_text)
    parameters = sorted(
        (int(i.payload or "-1"), i.shape)
        for i in module.entry.instructions
        if i.opcode == "parameter"
    )
    return [shape.split("{")[0] for _, shape in parameters], dict(opcode_counts(module))


def _oracle(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[list[str], dict[str, int]]:
    text = jax.jit(fn).lower(*args, **kwargs).compile().as_text()
    assert text is not None
    return _facts(text)


def _flops(compiled: jax.stages.Compiled) -> float:
    cost = compiled.cost_analysis()
    assert cost is not None
    return cost["flops"]


def affine(x, w, *, b, scale=1.0):
    return jnp.tanh(x @ w + b) * scale


X = jax.ShapeDtypeStruct((8, 16), jnp.float32)
W = jax.ShapeDtypeStruct((16, 4), jnp.float32)
B = jax.ShapeDtypeStruct((4,), jnp.float32)


class Params(NamedTuple):
    w: Any
    b: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class DataParams:
    w: Any
    b: Any


@flax.struct.dataclass
class StructParams:
    w: Any
    b: Any


def _apply(params, x):
    return affine(x, params.w, b=params.b)


ARRAYS = (jnp.ones(X.shape), jnp.ones(W.shape), jnp.ones(B.shape))


def plain(x, w, b):
    return affine(x, w, b=b)


def scaled(x, w, b):
    return affine(x, w, b=b, scale=3.0)


def params_first(params, x):
    return affine(x, params["w"], b=params["b"])


# (form, the capture, the plain function and its positional args for the oracle, has a jaxpr)
# The oracle's functions take the arrays in the order JAX flattens them: positional, then keyword
# arguments by sorted name; a dict by sorted key, a NamedTuple or dataclass by field order.
PLAIN = (plain, X, W, B)
SCALED = (scaled, X, W, B)
KEYWORDS = (lambda x, b, w: affine(x, w, b=b), X, B, W)
DICT = (lambda b, w, x: affine(x, w, b=b), B, W, X)
FIELDS = (lambda w, b, x: affine(x, w, b=b), W, B, X)
CASES = [
    ("keyword args", lambda: capture(affine, X, w=W, b=B), KEYWORDS, True),
    (
        "static_argnames",
        lambda: capture(affine, X, W, b=B, scale=3.0, static_argnames="scale"),
        SCALED,
        True,
    ),
    (
        "static_argnums",
        lambda: capture(
            lambda s, x, w, b: affine(x, w, b=b, scale=s), 3.0, X, W, B, static_argnums=0
        ),
        SCALED,
        True,
    ),
    ("dict pytree", lambda: capture(params_first, {"w": W, "b": B}, X), DICT, True),
    ("NamedTuple pytree", lambda: capture(_apply, Params(W, B), X), FIELDS, True),
    ("dataclass pytree", lambda: capture(_apply, DataParams(W, B), X), FIELDS, True),
    ("flax struct pytree", lambda: capture(_apply, StructParams(W, B), x=X), FIELDS, True),
    ("jax.jit, keywords", lambda: capture(jax.jit(affine), X, W, b=B), PLAIN, True),
    (
        "jax.jit, static",
        lambda: capture(jax.jit(affine, static_argnames="scale"), X, W, b=B, scale=3.0),
        SCALED,
        True,
    ),
    ("flax.nnx.jit", lambda: capture(nnx.jit(affine), X, W, b=B), PLAIN, True),
    (
        "equinox.filter_jit",
        lambda: capture(eqx.filter_jit(affine), *ARRAYS[:2], b=ARRAYS[2], scale=3.0),
        SCALED,
        False,
    ),
    (
        "equinox.filter_jit, ShapeDtypeStructs",
        lambda: capture(eqx.filter_jit(affine), X, W, b=B),
        PLAIN,
        False,
    ),
    ("jax Traced", lambda: capture(jax.jit(affine).trace(X, W, b=B)), PLAIN, True),
    ("jax Lowered", lambda: capture(jax.jit(affine).lower(X, W, b=B)), PLAIN, False),
    ("nnx Traced", lambda: capture(nnx.jit(affine).trace(X, W, b=B)), PLAIN, True),
    ("nnx Lowered", lambda: capture(nnx.jit(affine).lower(X, W, b=B)), PLAIN, False),
    (
        "equinox Lowered",
        lambda: capture(eqx.filter_jit(affine).lower(*ARRAYS[:2], b=ARRAYS[2])),
        PLAIN,
        False,
    ),
]


# equinox's jit returns one more output, an s32[] zero, beside the function's result
EQUINOX_EXTRA = {"constant": 1, "copy": 1, "tuple": 1}


@pytest.mark.parametrize(("form", "make", "oracle", "has_jaxpr"), CASES, ids=[c[0] for c in CASES])
def test_every_way_of_compiling_matches_plain_jit(
    form: str, make: Callable[[], Capture], oracle: tuple[Any, ...], has_jaxpr: bool
) -> None:
    captured = make()
    fn, *args = oracle
    shapes, counts = _facts(captured.optimized_hlo_text)
    want_shapes, want_counts = _oracle(fn, *args)
    assert shapes == want_shapes
    assert sorted(shapes) == ["f32[16,4]", "f32[4]", "f32[8,16]"]
    if form.startswith("equinox"):
        assert parse_hlo(captured.optimized_hlo_text).entry.root.shape.startswith(
            "(s32[], f32[8,4]"
        )
        want_counts = dict(Counter(want_counts) + Counter(EQUINOX_EXTRA))
    assert counts == want_counts
    assert captured.cost_analysis["flops"] == _flops(jax.jit(fn).lower(*args).compile())
    assert (captured.jaxpr is not None) is has_jaxpr
    if captured.jaxpr is not None:
        assert sorted(a.shape for a in in_avals(captured.jaxpr)) == [(4,), (8, 16), (16, 4)]
    assert opcode_counts(parse_hlo(captured.hlo_text))["dot"] == 1


def test_forms_that_fixed_their_options_refuse_new_ones() -> None:
    for wrapped in (nnx.jit(affine), eqx.filter_jit(affine)):
        with pytest.raises(CaptureError, match="already jit-wrapped: pass static_argnames"):
            capture(wrapped, X, W, b=B, static_argnames="scale")
    with pytest.raises(CaptureError, match="already traced: pass no arguments"):
        capture(jax.jit(affine).lower(X, W, b=B), X)
    with pytest.raises(CaptureError, match="already traced: pass no arguments"):
        capture(nnx.jit(affine).trace(X, W, b=B), static_argnums=0)
    with pytest.raises(CaptureError, match="holds no lowering to capture: use capture_ir"):
        capture(jax.jit(plain).lower(X, W, B).compile())
    with pytest.raises(CaptureError, match="not callable and not a JAX stage"):
        capture(42)
    with pytest.raises(CaptureError, match="TypeError"):
        capture(affine, X, W, B)  # b is keyword-only


def test_capture_ir_of_compiled_gives_what_it_holds() -> None:
    compiled = jax.jit(plain).lower(X, W, B).compile()
    for source in (compiled, eqx.filter_jit(plain).lower(*ARRAYS).compile()):
        held = capture_ir(source)
        assert held.source == "Compiled"
        assert held.stablehlo_text is None and held.hlo_text is None
        assert held.optimized_hlo_text is not None
        shapes, _ = _facts(held.optimized_hlo_text)
        assert shapes == ["f32[8,16]", "f32[16,4]", "f32[4]"]
        assert held.cost_analysis["flops"] == _flops(compiled)
        assert held.memory_analysis["argument_size_in_bytes"] == 4 * (8 * 16 + 16 * 4 + 4)
    assert capture_ir(compiled).optimized_hlo_text == compiled.as_text()


def test_capture_ir_of_hlo_file_gives_the_text_as_given(tmp_path: Path) -> None:
    text = jax.jit(plain).lower(X, W, B).as_text(dialect="hlo")
    (tmp_path / "f.hlo").write_text(text)
    held = capture_ir(tmp_path / "f.hlo")
    assert (held.source, held.hlo_text) == (str(tmp_path / "f.hlo"), text)
    assert held.optimized_hlo_text is None and held.stablehlo_text is None
    assert held.cost_analysis == {} and held.memory_analysis == {}
    (tmp_path / "bad.hlo").write_text("module @m {}\n")
    with pytest.raises(HloParseError):
        capture_ir(tmp_path / "bad.hlo")
    with pytest.raises(CaptureError, match=r"expected a \.hlo, \.txt .* or \.mlir"):
        capture_ir(tmp_path / "f.py")
    with pytest.raises(CaptureError, match="cannot read"):
        capture_ir(tmp_path / "missing.hlo")


def test_capture_ir_compiles_a_stablehlo_file(tmp_path: Path) -> None:
    lowered = jax.jit(plain).lower(X, W, B)
    compiled = lowered.compile()
    (tmp_path / "f.mlir").write_text(lowered.as_text())
    held = capture_ir(str(tmp_path / "f.mlir"))
    assert held.stablehlo_text == lowered.as_text()
    assert held.hlo_text is not None and held.optimized_hlo_text is not None
    assert _facts(held.optimized_hlo_text) == _oracle(plain, X, W, B)
    unoptimized = opcode_counts(parse_hlo(held.hlo_text))
    assert unoptimized == opcode_counts(parse_hlo(lowered.as_text(dialect="hlo")))
    assert held.cost_analysis["flops"] == _flops(compiled)
    stats = compiled.memory_analysis()
    assert stats is not None
    assert held.memory_analysis["argument_size_in_bytes"] == stats.argument_size_in_bytes
    assert held.memory_analysis["output_size_in_bytes"] == stats.output_size_in_bytes
    (tmp_path / "bad.mlir").write_text("module @m { func.func @main() { nonsense } }\n")
    with pytest.raises(CaptureError, match="compiling the StableHLO failed"):
        capture_ir(tmp_path / "bad.mlir")


_CACHE_SCRIPT = """
import os, sys
import jax, jax.numpy as jnp
from xla_inspect.capture import capture, dump_options
cache, control, dumped = sys.argv[1:]
jax.config.update("jax_compilation_cache_dir", cache)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
f = lambda x: jnp.sin(x) * 2.0
jax.jit(f).lower(jnp.ones(8)).compile()  # fills the cache
entries = len(os.listdir(cache))
jax.jit(f).lower(jnp.ones(8)).compile(compiler_options=dump_options(control))  # a cache hit
capture(f, jnp.ones(8), dump_dir=dumped, dump_passes=True)
jax.jit(jnp.cos).lower(jnp.ones(8)).compile()  # the cache is on again afterwards
passes = [len([n for n in os.listdir(d) if ".before_" in n]) for d in (control, dumped)]
print(entries, *passes, len(os.listdir(cache)))
"""


@pytest.mark.battery
def test_dumping_turns_the_persistent_cache_off(tmp_path: Path) -> None:
    # JAX leaves dump options out of its cache key: the control compile hits the cache and dumps
    # no pass (only the deserialized module), the capture of the same function dumps every pass
    dirs = [tmp_path / name for name in ("cache", "control", "dumped")]
    result = subprocess.run(
        [sys.executable, "-c", _CACHE_SCRIPT, *map(str, dirs)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    entries, control, dumped, entries_after = map(int, result.stdout.split())
    assert entries >= 1
    assert control == 0
    assert dumped > 10  # one `.after_X.before_Y.txt` file per pass that changed the module
    assert entries_after == entries + 1


def _ones(leaf: Any) -> Any:
    """An array of ones for a traced shape (other leaves kept): a model's parameters built this
    way cost no compile, where drawing them from a key compiled a random op per shape (about 1 s
    per model once the caches are cleared); the compiled program reads their shapes only."""
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return jax.device_put(np.ones(leaf.shape, leaf.dtype))
    return leaf


class TwoLayer(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.first = nnx.Linear(16, 32, rngs=rngs)
        self.second = nnx.Linear(32, 4, rngs=rngs)

    def __call__(self, x):
        return self.second(jax.nn.relu(self.first(x)))


def test_nnx_jit_of_a_module_matches_jit_of_its_split_state() -> None:
    graphdef, abstract = nnx.split(nnx.eval_shape(lambda: TwoLayer(nnx.Rngs(0))))
    model = nnx.merge(graphdef, jax.tree.map(_ones, abstract))
    x = jnp.ones((8, 16))
    captured = capture(nnx.jit(lambda m, x: m(x)), model, x)
    graphdef, state = nnx.split(model)
    shapes, counts = _facts(captured.optimized_hlo_text)
    want_shapes, want_counts = _oracle(lambda s, x: nnx.merge(graphdef, s)(x), state, x)
    assert shapes == want_shapes
    assert sorted(shapes) == sorted(["f32[8,16]", "f32[16,32]", "f32[32]", "f32[32,4]", "f32[4]"])
    # nnx.jit also returns the module's four arrays (its state after the call): a copy of each
    assert counts == dict(Counter(want_counts) + Counter({"copy": 4, "tuple": 1}))
    assert counts["dot"] == 2
    assert captured.jaxpr is not None
    assert sorted(a.shape for a in in_avals(captured.jaxpr)) == sorted(
        [(8, 16), (16, 32), (32,), (32, 4), (4,)]
    )


def test_filter_jit_of_an_equinox_module_matches_jit_of_its_arrays() -> None:
    mlp = eqx.filter_eval_shape(lambda: eqx.nn.MLP(16, 4, 32, 1, key=jax.random.key(0)))
    model = jax.tree.map(_ones, mlp)
    x = jax.ShapeDtypeStruct((16,), jnp.float32)
    captured = capture(eqx.filter_jit(lambda m, x: m(x)), model, x)
    arrays, static = eqx.partition(model, eqx.is_array)
    shapes, counts = _facts(captured.optimized_hlo_text)
    want_shapes, want_counts = _oracle(lambda a, x: eqx.combine(a, static)(x), arrays, x)
    assert shapes == want_shapes
    assert sorted(shapes) == sorted(["f32[16]", "f32[32,16]", "f32[32]", "f32[4,32]", "f32[4]"])
    assert counts == dict(Counter(want_counts) + Counter(EQUINOX_EXTRA))
