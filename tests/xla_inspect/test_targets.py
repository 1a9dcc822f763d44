"""Named compile targets: names, what is missing and how to install it, and (with the tpu / gpu
groups installed) deviceless compiles checked against independent oracles: XLA's own parser,
cost_analysis against 2*M*N*K from the shapes, per-device shapes against the mesh."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from kata_harness import oracles
from kata_harness.targets import require
from xla_inspect import targets
from xla_inspect.capture import CaptureError, capture
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions, opcode_counts

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")

SCRIPT = str(Path(sys.executable).with_name("xla-inspect"))
SHAPES = [(512, 256, 384), (128, 1024, 256), (8, 128, 128)]


def _matmul(x, w):
    return jnp.tanh(x @ w)


def _compile(target: targets.Target, m: int, k: int, n: int, dtype=jnp.float32, **options):
    x = target.place(jax.ShapeDtypeStruct((m, k), dtype))
    w = target.place(jax.ShapeDtypeStruct((k, n), dtype))
    return jax.jit(_matmul).lower(x, w).compile(compiler_options=options or None)


def _text(compiled) -> str:
    text = compiled.as_text()
    assert text is not None
    return text


def _same_as_xla(text: str) -> None:
    ours = parse_hlo(text)
    theirs = oracles.xla_module(text)
    assert sorted(len(c.instructions) for c in ours.computations) == sorted(
        len(c.instructions) for c in theirs.computations
    )


def test_every_named_target_round_trips():
    for name, target in targets.TARGETS.items():
        assert targets.get(name) is target
        assert (target.group is None) == (target.platform == "cpu")


@pytest.mark.parametrize(
    ("name", "platform", "topology"),
    [
        ("tpu-v5e:4x4", "tpu", "v5e:4x4"),
        ("tpu-v6e:2x4", "tpu", "v6e:2x4"),
        ("gpu-h100:1x1x8", "cuda", "1x1x8"),
    ],
)
def test_other_topologies_by_name(name, platform, topology):
    target = targets.get(name)
    assert (target.platform, target.topology, target.name) == (platform, topology, name)


@pytest.mark.parametrize("name", ["tpu-v9z:2x2", "gpu", "h100", "tpu-v5e", "cpu:2x2", ""])
def test_unknown_names_list_the_known_ones(name):
    with pytest.raises(targets.TargetError, match="tpu-v5e:2x2, tpu-v6e:2x2"):
        targets.get(name)


@pytest.mark.parametrize(
    ("name", "module"), [("tpu-v5e:2x2", "libtpu"), ("gpu-h100", "jax_plugins.xla_cuda12")]
)
def test_a_missing_group_names_its_install_command(monkeypatch, name, module):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda m, *a: None if m == module else real(m, *a)
    )
    target = targets.get(name)
    group = "tpu" if name.startswith("tpu") else "gpu"
    missing = target.missing()
    assert missing is not None and f"uv sync --group {group}" in missing
    assert targets.group_missing(group) is not None
    with pytest.raises(pytest.skip.Exception, match=f"needs: uv sync --group {group}"):
        require(name)
    with pytest.raises(targets.TargetError, match=f"uv sync --group {group}"):
        targets.get(name).place(jax.ShapeDtypeStruct((2,), jnp.float32))


def test_the_environment_keeps_what_the_user_set(monkeypatch):
    monkeypatch.setenv("TPU_ACCELERATOR_TYPE", "v6e-4")
    monkeypatch.delenv("TPU_WORKER_HOSTNAMES", raising=False)
    targets.prepare_environment()
    import os

    assert os.environ["TPU_ACCELERATOR_TYPE"] == "v6e-4"
    assert os.environ["TPU_WORKER_HOSTNAMES"] == "localhost"


@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
@pytest.mark.parametrize("name", ["tpu-v5e:2x2", "tpu-v6e:2x2", "tpu-v5p:2x2x1"])
def test_tpu_compile_tiles_layouts_and_counts_flops(name, m, k, n):
    target = require(name)
    assert len(target.devices()) == 4
    compiled = _compile(target, m, k, n)
    text = _text(compiled)
    _same_as_xla(text)
    assert ":T(8,128)" in text, "2-D f32 arrays are tiled 8x128 on TPU"
    cost = compiled.cost_analysis()
    assert cost is not None
    assert cost["flops"] >= 2 * m * k * n  # the matmul, plus the tanh
    assert cost["flops"] <= 2 * m * k * n + 8 * m * n


@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
@pytest.mark.parametrize("name", ["gpu-h100", "gpu-a100"])
def test_gpu_gemm_is_a_triton_fusion_or_cublas_when_triton_is_off(name, m, k, n):
    target = require(name)
    compiled = _compile(target, m, k, n, jnp.bfloat16)
    text = _text(compiled)
    _same_as_xla(text)
    assert compiled.cost_analysis() is None, "deviceless GPU gives no cost analysis"
    labels = [f.label for f in fusions(parse_hlo(text))]
    assert "kCustom(__triton_nested_gemm_fusion)" in labels
    off = _text(_compile(target, m, k, n, jnp.bfloat16, xla_gpu_enable_triton_gemm=False))
    _same_as_xla(off)
    assert "__cublas$lt$matmul" in off
    assert not any("triton_nested_gemm" in f.label for f in fusions(parse_hlo(off)))


@pytest.mark.parametrize(("shape", "spec"), [((2, 2), ("data", "model")), ((4, 1), ("data", None))])
@pytest.mark.parametrize("name", ["tpu-v5e:2x2", "gpu-h100"])
def test_a_sharded_argument_gives_per_device_shapes(name, shape, spec):
    target = require(name)
    mesh = target.mesh(shape, ("data", "model"))
    rows, cols = 256, 512
    x = target.place(jax.ShapeDtypeStruct((rows, cols), jnp.bfloat16), mesh, *spec)
    text = _text(jax.jit(lambda a: a * 2).lower(x).compile())
    module = parse_hlo(text)
    parameter = next(i for i in module.entry.instructions if i.opcode == "parameter")
    splits = [shape[("data", "model").index(s)] if s else 1 for s in spec]
    assert parameter.shape_info.dims == (rows // splits[0], cols // splits[1])


def test_deviceless_text_is_the_same_twice():
    target = require("tpu-v5e:2x2")
    texts = []
    for _ in range(2):  # one call site: the source lines in the metadata are the same
        texts.append(_text(_compile(target, 64, 128, 256)))
        jax.clear_caches()
    assert texts[0] == texts[1]


def test_capture_for_a_target_and_what_it_refuses():
    require("tpu-v5e:2x2")
    args = (jnp.zeros((64, 128)), jnp.zeros((128, 256)))
    held = capture(_matmul, *args, target="tpu-v5e:2x2")
    assert ":T(8,128)" in held.optimized_hlo_text
    assert held.cost_analysis["flops"] >= 2 * 64 * 128 * 256
    assert opcode_counts(parse_hlo(held.optimized_hlo_text))["parameter"] >= 2
    with pytest.raises(CaptureError, match="lowered for its own devices"):
        capture(jax.jit(_matmul).lower(*args), target="tpu-v5e:2x2")
    with pytest.raises(CaptureError, match="unknown target"):
        capture(_matmul, *args, target="tpu-v99")


def test_cli_capture_for_tpu_and_gpu_then_summary(tmp_path):
    require("tpu-v5e:2x2")
    require("gpu-h100")
    source = tmp_path / "model.py"
    source.write_text("import jax.numpy as jnp\n\ndef f(x, w):\n    return jnp.tanh(x @ w)\n")
    expect = {"tpu-v5e:2x2": ":T(8,128)", "gpu-h100": "__triton_nested_gemm_fusion"}
    for name, mark in expect.items():
        out = tmp_path / name.replace(":", "_")
        argv = [SCRIPT, "capture", "--target", name]
        argv += [f"{source}:f", "--arg", "f32[512,256]", "--arg", "f32[256,384]", "--out", str(out)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", "libtpu and the CUDA plugin stay quiet"
        assert mark in (out / "optimized_hlo.txt").read_text()
        summary = subprocess.run(
            [SCRIPT, "summary", str(out / "optimized_hlo.txt")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert summary.returncode == 0 and "fusions" in summary.stdout, summary.stderr


@pytest.mark.battery  # starts Python again in a subprocess: CI runs it once
def test_cli_refuses_an_unknown_target(tmp_path):
    argv = [SCRIPT, "capture", "--target", "tpu-v99"]
    argv += [f"{Path(__file__)}:_matmul", "--arg", "f32[2,2]", "--out", str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown target 'tpu-v99'" in done.stderr


# -- the reader on TPU/GPU text: what XLA's parser counts, on varied programs ----------------------

_PRINTED_OPCODE = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")
_ASYNC = {"kAsyncStart": "async-start", "kAsyncUpdate": "async-update", "kAsyncDone": "async-done"}


def _xla_opcode_counts(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for computation in oracles.xla_module(text).computations:
        for instruction in computation.instructions:
            opcode = _ASYNC.get(instruction.opcode)
            if opcode is None:
                printed = _PRINTED_OPCODE.search(instruction.printed)
                assert printed is not None, instruction.printed
                opcode = printed.group(1)
            counts[opcode] += 1
    return counts


def _mlp_grad(params, x, y):
    def loss(p):
        h = jax.nn.relu(x @ p[0] + p[1])
        return jnp.mean((h @ p[2] - y) ** 2)

    return jax.grad(loss)(params)


def _layers(x, ws):
    for w in ws:
        x = jax.nn.relu(x @ w)
    return x


def _attention(q, k, v):
    return jax.nn.softmax(q @ k.T / 8.0, axis=-1) @ v


def _scan_cumsum(x):
    return jax.lax.scan(lambda c, r: (c + r, jnp.sin(c)), jnp.zeros_like(x[0]), x)


def _conv(x, w):
    return jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def _sort_topk(x):
    return jnp.sort(x, axis=-1), jax.lax.top_k(x, 4)


def _program(kind: str, target: targets.Target) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A program and its arguments placed on the target (a 2x2 mesh where it is sharded)."""
    bf = jnp.bfloat16
    sds = jax.ShapeDtypeStruct
    mesh = target.mesh((2, 2), ("data", "model"))
    if kind == "mlp_grad":
        params = [target.place(sds(s, bf), mesh) for s in [(256, 512), (512,), (512, 128)]]
        batch = [target.place(sds(s, bf), mesh, "data") for s in [(128, 256), (128, 128)]]
        return _mlp_grad, (params, *batch)
    if kind == "fsdp":
        x = target.place(sds((512, 256), bf), mesh, ("data", "model"))
        ws = [target.place(sds((256, 256), bf), mesh, ("data", "model")) for _ in range(3)]
        return _layers, (x, ws)
    if kind == "attention":
        return _attention, tuple(target.place(sds((128, 64), jnp.float32)) for _ in range(3))
    if kind == "scan":
        return _scan_cumsum, (target.place(sds((16, 256), jnp.float32)),)
    if kind == "conv":
        x = target.place(sds((8, 32, 32, 16), bf))
        return _conv, (x, target.place(sds((3, 3, 16, 32), bf)))
    return _sort_topk, (target.place(sds((64, 128), jnp.float32)),)


PROGRAMS = ["mlp_grad", "fsdp", "attention", "scan", "conv", "sort"]


@pytest.mark.parametrize("kind", PROGRAMS)
@pytest.mark.parametrize("name", ["tpu-v5e:2x2", "tpu-v6e:2x2", "gpu-h100", "gpu-a100"])
def test_reader_counts_target_text_as_xla_does(name, kind):
    target = require(name)
    fn, args = _program(kind, target)
    text = _text(jax.jit(fn).lower(*args).compile())
    module = parse_hlo(text)
    assert opcode_counts(module) == _xla_opcode_counts(text)
    assert len(module.computations) == len(oracles.xla_module(text).computations)
    normalized = normalize_hlo(text)
    assert opcode_counts(parse_hlo(normalized)) == _xla_opcode_counts(normalized)
