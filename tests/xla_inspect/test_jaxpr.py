"""primitive_census walks every nested jaxpr; aval helpers summarize inputs and outputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from xla_inspect.jaxpr import AvalSummary, in_avals, iter_eqns, out_avals, primitive_census


@jax.custom_vjp
def _sine(x):
    return jnp.sin(x)


_sine.defvjp(lambda x: (jnp.sin(x), x), lambda r, g: (g * jnp.cos(r),))


def _program(x):
    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
    a = jax.lax.cond(x.sum() > 0, jnp.exp, jnp.log, x)
    b = jax.lax.scan(lambda c, v: (c + jnp.tanh(v), c), 0.0, x)[0]
    c = jax.lax.while_loop(lambda s: s < 3, lambda s: s + 1, 0)
    d = jax.nn.relu(x)
    e = _sine(x)
    g = jax.checkpoint(jnp.cosh)(x)
    h = jax.shard_map(
        lambda v: jax.lax.psum(jnp.floor(v), "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
    )(x)
    return a + b + c + d + e + g + h, 3


@pytest.fixture(scope="module")
def xi_program_jaxpr():
    return jax.make_jaxpr(_program)(jnp.ones(4))


@pytest.mark.parametrize(
    ("primitive", "holder"),
    [
        ("exp", "cond"),
        ("log", "cond"),
        ("tanh", "scan"),
        ("lt", "while"),
        ("max", "custom_jvp_call"),
        ("sin", "custom_vjp_call"),
        ("cosh", "remat2"),
        ("floor", "shard_map"),
    ],
)
def test_nested_primitives_are_counted(xi_program_jaxpr, primitive: str, holder: str) -> None:
    census = primitive_census(xi_program_jaxpr)
    assert census[primitive] == 1
    assert census[holder] == 1
    assert primitive_census(xi_program_jaxpr, recursive=False)[primitive] == 0


def test_nested_jit_counts_itself_and_its_body() -> None:
    inner = jax.jit(lambda v: jnp.sin(v) * 2.0)
    census = primitive_census(jax.make_jaxpr(lambda v: inner(v) + inner(v))(1.0))
    assert census["jit"] == 2
    assert census["sin"] == 2
    assert census["mul"] == 2
    assert census["add"] == 1


def test_open_closed_and_traced_jaxprs_agree() -> None:
    closed = jax.make_jaxpr(_program)(jnp.ones(4))
    traced = jax.jit(_program).trace(jnp.ones(4)).jaxpr
    assert primitive_census(closed) == primitive_census(closed.jaxpr) == primitive_census(traced)


def test_grad_shows_transposes_and_custom_jvp() -> None:
    def loss(w, x):
        return jnp.sum(jax.nn.relu(x @ w) @ w.T)

    census = primitive_census(jax.make_jaxpr(jax.grad(loss))(jnp.ones((3, 3)), jnp.ones((2, 3))))
    assert census["transpose"] >= 2
    assert primitive_census(jax.make_jaxpr(jax.grad(jax.nn.relu))(1.0))["custom_jvp_call"] == 1


def test_iter_eqns_puts_holders_before_their_contents(xi_program_jaxpr) -> None:
    names = [eqn.primitive.name for eqn in iter_eqns(xi_program_jaxpr)]
    assert names.index("cond") < names.index("exp") < names.index("scan")


def test_aval_summaries(xi_program_jaxpr) -> None:
    assert in_avals(xi_program_jaxpr) == (AvalSummary((4,), "float32"),)
    first, second = out_avals(xi_program_jaxpr)
    assert str(first) == "float32[4]"
    assert second == AvalSummary((), "int32", weak_type=True)


def test_not_a_jaxpr_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expected a jaxpr"):
        primitive_census("{ lambda ; a:f32[]. let  in (a,) }")
    with pytest.raises(TypeError, match="expected a jaxpr"):
        in_avals(object())
