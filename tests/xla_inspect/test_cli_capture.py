"""xla-inspect capture on the command line: keyword and static arguments and arguments from a
builder (checked against plain jax.jit of the same function), and IR files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from .conftest import run_cli

FORMS = """\
import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx


def affine(x, w, *, b, scale=1.0):
    return jnp.tanh(x @ w + b) * scale


def power(x, n):
    return x**n


def apply(params, x):
    return affine(x, params["w"], b=params["b"])


def example_args():
    f32 = jnp.float32
    params = {"w": jax.ShapeDtypeStruct((16, 4), f32), "b": jax.ShapeDtypeStruct((4,), f32)}
    return (params,), {"x": jnp.ones((8, 16))}


def not_a_pair():
    return [1, 2, 3]


jitted = jax.jit(affine, static_argnames="scale")
nnx_jitted = nnx.jit(affine)
eqx_jitted = eqx.filter_jit(affine)
"""
KEYWORDS = ["--arg", "f32[8,16]", "--arg", "w=f32[16,4]", "--arg", "b = f32[4]"]


def _oracle_facts(fn, *args) -> tuple[list[str], Counter[str]]:
    import jax

    text = jax.jit(fn).lower(*args).compile().as_text()
    assert text is not None
    return _optimized_facts(text)


def _optimized_facts(text: str) -> tuple[list[str], Counter[str]]:
    from xla_inspect.parse import parse_hlo
    from xla_inspect.query import opcode_counts

    module = parse_hlo(text)
    params = sorted(
        (int(i.payload or -1), i.shape)
        for i in module.entry.instructions
        if i.opcode == "parameter"
    )
    return [shape.split("{")[0] for _, shape in params], opcode_counts(module)


def _affine_oracle(scale: float, order: str):
    import jax
    import jax.numpy as jnp

    shapes = {"x": (8, 16), "w": (16, 4), "b": (4,)}
    structs = [jax.ShapeDtypeStruct(shapes[name], jnp.float32) for name in order]

    def fn(*arrays):
        named = dict(zip(order, arrays, strict=True))
        return jnp.tanh(named["x"] @ named["w"] + named["b"]) * scale

    return _oracle_facts(fn, *structs)


@pytest.mark.parametrize(
    ("target", "extra", "scale", "order", "has_jaxpr"),
    [
        ("affine", [], 1.0, "xbw", True),  # keywords are flattened by sorted name
        ("affine", ["--arg", "scale=3.0"], 3.0, "xbw", True),
        ("jitted", ["--arg", "scale=3.0"], 3.0, "xbw", True),
        ("nnx_jitted", [], 1.0, "xbw", True),
        ("eqx_jitted", ["--arg", "scale=3.0"], 3.0, "xwb", False),  # equinox: as given
    ],
)
def test_capture_keyword_and_static_args(
    target: str, extra: list[str], scale: float, order: str, has_jaxpr: bool, tmp_path: Path, capsys
) -> None:
    (tmp_path / "forms.py").write_text(FORMS)
    out = tmp_path / "out"
    argv = ["capture", f"{tmp_path / 'forms.py'}:{target}", *KEYWORDS, *extra, "--out", str(out)]
    code, stdout, err = run_cli(capsys, *argv)
    assert (code, err) == (0, "")
    assert stdout.startswith(f"captured {tmp_path / 'forms.py'}:{target} into {out}: ")
    shapes, counts = _optimized_facts((out / "optimized_hlo.txt").read_text())
    want_shapes, want_counts = _affine_oracle(scale, order)
    assert shapes == want_shapes
    if target == "eqx_jitted":  # equinox returns one more output, an s32[] zero
        want_counts += Counter({"constant": 1, "copy": 1, "tuple": 1})
    assert counts == want_counts
    assert (out / "jaxpr.txt").exists() is has_jaxpr
    assert ("jaxpr.txt" in stdout) is has_jaxpr
    if has_jaxpr and scale != 1.0:
        assert "3.0" in (out / "jaxpr.txt").read_text()


def test_capture_static_positional_value(tmp_path: Path, capsys) -> None:
    (tmp_path / "forms.py").write_text(FORMS)
    target = f"{tmp_path / 'forms.py'}:power"
    outs = {n: tmp_path / f"out{n}" for n in ("3", "5")}
    for n, out in outs.items():
        assert (
            run_cli(capsys, "capture", target, "--arg", "f32[6]", "--arg", n, "--out", str(out))[0]
            == 0
        )
    facts = {
        n: _optimized_facts((out / "optimized_hlo.txt").read_text()) for n, out in outs.items()
    }
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((6,), jnp.float32)
    for n in outs:
        assert facts[n] == _oracle_facts(lambda x, n=int(n): x**n, x)
        assert facts[n][0] == ["f32[6]"]  # the static n is no parameter
    assert facts["3"][1] != facts["5"][1]


def test_capture_args_from_a_builder(tmp_path: Path, capsys) -> None:
    (tmp_path / "forms.py").write_text(FORMS)
    forms = tmp_path / "forms.py"
    out = tmp_path / "out"
    argv = ["capture", f"{forms}:apply", "--args-from", f"{forms}:example_args", "--out", str(out)]
    code, _, err = run_cli(capsys, *argv)
    assert (code, err) == (0, "")
    assert _optimized_facts((out / "optimized_hlo.txt").read_text()) == _affine_oracle(1.0, "bwx")


def test_capture_of_ir_files(tmp_path: Path, capsys) -> None:
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    lowered = jax.jit(lambda a, b: jnp.sin(a) @ b).lower(x, x)
    (tmp_path / "f.mlir").write_text(lowered.as_text())
    (tmp_path / "f.hlo").write_text(lowered.as_text(dialect="hlo"))
    code, stdout, err = run_cli(
        capsys, "capture", str(tmp_path / "f.mlir"), "--out", str(tmp_path / "m")
    )
    assert (code, err) == (0, "")
    names = ["stablehlo.mlir", "hlo.txt", "optimized_hlo.txt", "cost.json", "memory.json"]
    assert stdout == f"captured {tmp_path / 'f.mlir'} into {tmp_path / 'm'}: {', '.join(names)}\n"
    optimized = (tmp_path / "m" / "optimized_hlo.txt").read_text()
    assert _optimized_facts(optimized) == _optimized_facts(lowered.compile().as_text() or "")
    cost = lowered.compile().cost_analysis()
    assert cost is not None
    assert json.loads((tmp_path / "m" / "cost.json").read_text())["flops"] == cost["flops"]
    code, stdout, err = run_cli(
        capsys, "capture", str(tmp_path / "f.hlo"), "--out", str(tmp_path / "h")
    )
    assert (code, err) == (0, "")
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["hlo.txt"]
    assert (tmp_path / "h" / "hlo.txt").read_text() == (tmp_path / "f.hlo").read_text()
