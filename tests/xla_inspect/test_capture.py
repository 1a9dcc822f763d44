"""capture(): every IR stage of a function, dumps through compiler options only (every way of
compiling: test_capture_forms.py)."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from xla_inspect.capture import Capture, CaptureError, capture, dump_options
from xla_inspect.errors import InspectError
from xla_inspect.jaxpr import in_avals


def mlp(x, w1, b1, w2, b2):
    return jnp.dot(jax.nn.relu(jnp.dot(x, w1) + b1), w2) + b2


MLP_ARGS = tuple(
    jax.ShapeDtypeStruct(shape, jnp.float32) for shape in [(8, 16), (16, 32), (32,), (32, 4), (4,)]
)


@pytest.fixture(scope="module")
def xi_mlp(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return capture(mlp, *MLP_ARGS, dump_dir=tmp_path_factory.mktemp("mlp_dump"), dump_passes=True)


def test_every_stage_is_captured(xi_mlp: Capture) -> None:
    assert xi_mlp.jaxpr is not None
    primitives = [eqn.primitive.name for eqn in xi_mlp.jaxpr.eqns]
    assert primitives.count("dot_general") == 2
    assert "stablehlo.dot_general" in xi_mlp.stablehlo_text
    assert xi_mlp.stablehlo_module.operation.name == "builtin.module"
    assert xi_mlp.hlo_text.startswith("HloModule jit_mlp")
    assert "%" not in xi_mlp.hlo_text
    assert " fusion(" in xi_mlp.optimized_hlo_text
    assert "kind=kCustom" in xi_mlp.optimized_hlo_text


def test_cost_and_memory_are_plain_dicts(xi_mlp: Capture) -> None:
    assert xi_mlp.cost_analysis["flops"] == 10784
    assert type(xi_mlp.memory_analysis) is dict
    assert xi_mlp.memory_analysis["argument_size_in_bytes"] == 4 * (8 * 16 + 16 * 32 + 32 + 128 + 4)
    assert xi_mlp.memory_analysis["output_size_in_bytes"] == 4 * 8 * 4
    assert all(type(value) is int for value in xi_mlp.memory_analysis.values())


def test_dump_goes_to_dump_dir_with_one_file_per_pass(xi_mlp: Capture) -> None:
    assert xi_mlp.dump_dir is not None
    assert xi_mlp.dump_module is not None
    assert xi_mlp.dump_module.startswith("module_")
    assert xi_mlp.dump_module.endswith(".jit_mlp")
    names = [path.name for path in xi_mlp.dump_files()]
    assert any(name.endswith("after_optimizations.txt") for name in names)
    assert any(".after_" in name and ".before_" in name for name in names)


def test_dump_options_never_touch_xla_flags(tmp_path: Path) -> None:
    before = os.environ.get("XLA_FLAGS")
    captured = capture(lambda x: x * 2.0 + 1.0, jnp.ones(4), dump_dir=tmp_path)
    assert os.environ.get("XLA_FLAGS") == before
    assert captured.dump_files()
    names = [path.name for path in tmp_path.iterdir()]
    assert not any(".after_" in name and ".before_" in name for name in names)
    assert dump_options(tmp_path) == {"xla_dump_to": str(tmp_path), "xla_dump_hlo_as_text": True}
    assert dump_options(tmp_path, passes=True)["xla_dump_hlo_pass_re"] == ".*"


def test_without_dump_dir_there_are_no_dump_files() -> None:
    captured = capture(jnp.sin, jax.ShapeDtypeStruct((3,), jnp.float32))
    assert captured.dump_dir is None
    assert captured.dump_module is None
    assert captured.dump_files() == []


def test_pytree_args_and_static_argnums() -> None:
    def scaled(params, n):
        return params["w"] * n

    captured = capture(
        scaled, {"w": jax.ShapeDtypeStruct((2, 3), jnp.bfloat16)}, 3, static_argnums=(1,)
    )
    assert "bf16[2,3]" in captured.hlo_text
    assert captured.jaxpr is not None
    assert [a.shape for a in in_avals(captured.jaxpr)] == [(2, 3)]


def test_donated_argument_aliases_the_output() -> None:
    captured = capture(lambda x: x + 1.0, jnp.ones((4, 4)), donate_argnums=0)
    assert "input_output_alias" in captured.optimized_hlo_text


def test_jitted_function_is_used_as_is() -> None:
    jitted = jax.jit(lambda x, n: x * n, static_argnums=1)
    captured = capture(jitted, jnp.ones(3), 2.0)
    assert "multiply" in captured.optimized_hlo_text
    with pytest.raises(CaptureError, match="already jit-wrapped: pass static_argnums to its jit"):
        capture(jitted, jnp.ones(3), 2.0, static_argnums=1)


def test_compiler_options_reach_xla() -> None:
    captured = capture(
        mlp, *MLP_ARGS, compiler_options={"xla_cpu_experimental_ynn_fusion_type": ""}
    )
    assert "__ynn_fusion" not in captured.optimized_hlo_text


def test_bad_usage_raises_capture_errors(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="needs a dump_dir"):
        capture(jnp.sin, jnp.ones(2), dump_passes=True)
    with pytest.raises(CaptureError, match="compiling failed"):
        capture(jnp.sin, jnp.ones(2), compiler_options={"xla_no_such_option": True})
    with pytest.raises(InspectError, match="tracing or lowering failed"):
        capture(lambda x, y: x @ y, jnp.ones((2, 3)), jnp.ones((2, 3)))


def test_tracer_errors_are_wrapped_with_their_cause() -> None:
    def branchy(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(CaptureError, match="TracerBoolConversionError") as info:
        capture(branchy, jnp.ones(2))
    assert isinstance(info.value.__cause__, jax.errors.TracerBoolConversionError)
