"""What phase 8's export tests export and how they read an export back: the exported
functions with their specs, NumPy oracles and value makers, a blob the tests export themselves,
and helpers that fail the test (never crash it) when an export or a call goes wrong."""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kata_harness.oracles import stablehlo as facts
from katas.phase8.programs import (
    BF16,
    mlp,
    mlp_specs,
    mlp_values,
    pair,
    scalar_mean,
    scale_shift,
    sines,
    spec,
    sum_and_difference,
)

# name: (function, specs, NumPy oracle of the outputs, value maker)
EXPORTS = {
    "bf16_and_int": (
        scale_shift,
        (spec((3, 5), jnp.bfloat16), spec((5,), jnp.int32)),
        lambda x, y: (x.astype(np.float32) * y, (y + 1).sum()),
        lambda rng: (
            rng.normal(size=(3, 5)).astype(BF16),
            rng.integers(-4, 5, size=5).astype(np.int32),
        ),
    ),
    "f16_dict": (
        pair,
        (spec((1, 7), jnp.float16), spec((1, 7), jnp.float16)),
        lambda x, y: {"sum": x + y, "max": np.maximum(x, y)},
        lambda rng: tuple(rng.normal(size=(1, 7)).astype(np.float16) for _ in "xy"),
    ),
    "scalar_out": (
        scalar_mean,
        (spec((2, 3, 5)),),
        lambda x: np.mean(x),
        lambda rng: (rng.normal(size=(2, 3, 5)).astype(np.float32),),
    ),
    "i32_list": (
        sum_and_difference,
        (spec((4,), jnp.int32), spec((4,), jnp.int32)),
        lambda x, y: [x + y, x - y],
        lambda rng: tuple(rng.integers(-9, 9, size=4).astype(np.int32) for _ in "xy"),
    ),
    "one_tuple": (
        sines,
        (spec((2, 3)),),
        lambda x: (np.sin(x),),
        lambda rng: (rng.normal(size=(2, 3)).astype(np.float32),),
    ),
    "mlp": (mlp, mlp_specs(), facts.np_mlp, lambda rng: mlp_values(8, int(rng.integers(99)))),
}


@cache
def exported_blob(name: str = "mlp") -> bytes:
    fn, specs, _, _ = EXPORTS[name]
    return bytes(jax.export.export(jax.jit(fn))(*specs).serialize())


def deserialize(blob, what: str):
    assert isinstance(blob, bytes | bytearray), f"{what}: expected bytes, got {type(blob)}"
    try:
        return jax.export.deserialize(bytearray(blob))
    except Exception as error:  # noqa: BLE001  (anything here means the bytes are not an export)
        pytest.fail(f"{what}: jax.export.deserialize rejected the bytes: {error!r:.200}")


def run(exported, values, what: str):
    """Call a deserialized export; an export that cannot take these arguments fails the test."""
    try:
        return exported.call(*values)
    except Exception as error:  # noqa: BLE001  (a wrong export rejects valid arguments)
        pytest.fail(
            f"{what}: the export rejected arguments of shapes "
            f"{[np.shape(v) for v in values]}: {error!r:.300}"
        )


def exported_by(kata, fn, *specs, what: str) -> bytes:
    """The kata's export_bytes of valid specs; an export that raises fails the test."""
    try:
        return kata.export_bytes(fn, *specs)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (valid specs refused: they are not arrays)
        pytest.fail(f"exporting for the specs {what} raised {error!r:.300}")


def called(kata, blob: bytes, *values, what: str):
    """The kata's call_exported of arguments the export takes; a refusal fails the test."""
    try:
        return kata.call_exported(blob, *values)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (a valid call refused: the wrong blob ran)
        pytest.fail(f"{what}: a valid call raised {error!r:.300}")


def close(got, want, what: str) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert np.allclose(got, want, rtol=2e-2, atol=2e-2), f"{what}: {got} != {want}"


def avals(avals) -> list[tuple[tuple, str]]:
    """(shape, dtype) of each aval; a symbolic dimension as its name (symbols of two scopes do
    not compare)."""
    return [
        (tuple(d if isinstance(d, int) else str(d) for d in a.shape), np.dtype(a.dtype).name)
        for a in avals
    ]
