"""kata_harness.oracles.autodiff: a flops figure is the work of every device the program runs on
(the phase 5 probe r12_shard_jacobian_columns: the whole Jacobian built, its basis split over an
8-device shard_map, so that XLA's cost analysis of the compiled module, of the lowered one, and
the dots an eager call executes each reported one device's share, an eighth of the work)."""

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec

from kata_harness.oracles import autodiff

ROWS, INNER, COLUMNS = 64, 32, 16
WORK = 2 * ROWS * INNER * COLUMNS  # one (64, 32) @ (32, 16), wherever its rows are computed


def _mesh() -> jax.sharding.Mesh:
    if jax.device_count() < 8:
        pytest.skip("needs the 8 CPU devices the harness sets up")
    return jax.sharding.Mesh(np.array(jax.devices()[:8]), ("rows",))


def _split_over_shard_map(a, b):
    rows = PartitionSpec("rows")
    return jax.shard_map(lambda u: u @ b, mesh=_mesh(), in_specs=rows, out_specs=rows)(a)


def _split_over_pmap(a, b):
    _mesh()
    return jax.pmap(lambda u: u @ b)(a.reshape(8, ROWS // 8, INNER)).reshape(ROWS, COLUMNS)


def _one_device(a, b):
    return a @ b


@pytest.mark.parametrize(
    "program", [_split_over_shard_map, _split_over_pmap, _one_device], ids=lambda p: p.__name__
)
def test_work_split_over_devices_is_counted_on_every_device(program):
    draw = np.random.default_rng(0)
    a = draw.normal(size=(ROWS, INNER)).astype(np.float32)
    b = draw.normal(size=(INNER, COLUMNS)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(program(a, b)), a @ b, rtol=1e-4, atol=1e-4)
    figures = {
        "compiled": autodiff.compiled_cost(program, a, b)[0],
        "lowered": autodiff.lowered_flops(program, a, b),
        "lowered on constants": autodiff.lowered_flops_of_constants(program, a, b),
        "eager": autodiff.eager_dot_flops(program, a, b),
    }
    # cost analysis may count a few elementwise flops beside the dot (here, none or a handful)
    for name, flops in figures.items():
        assert WORK * 0.99 <= flops <= WORK * 1.01, (
            f"{program.__name__}: the {name} figure is {flops}, the work is {WORK} "
            f"(one device's share would be {WORK // 8})"
        )
