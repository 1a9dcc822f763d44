"""Red team, phase 5, round 16: a squeezed prediction, tangents and cotangents reshaped or
transposed to the wrong layout, a guarded contracted size, a squeezed single output, a relu
re-written with a tie-breaking `>=`, a direction split across devices, an HVP replicated on
every device, a symmetrized HVP over budget at n = 9, and a lax.map over directions that leaves a
while loop in the compiled module."""

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


@wrong(
    "mlp_grad",
    why="Clause 'the gradient of `mse_loss`': squeezes the prediction before subtracting y (to "
    "'drop the trailing output axis'); with one output (out = 1, batch > 1) the (batch,) "
    "prediction minus the (batch, 1) y broadcasts to (batch, batch), a different loss: e.g. "
    "mlp_data(4, 0, (5, 7, 1)) gives a different gradient.",
)
def _rt16_mlp_grad_squeezed_prediction(params: dict, x, y) -> dict:
    def loss(p):
        pred = jnp.squeeze(jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
        return jnp.mean((pred - y) ** 2)

    return jax.grad(loss)(params)


@wrong(
    "jvp_tangent",
    why="Clause 'J @ v ... shaped and typed like f(x)': reshapes the tangent to v's shape ('the "
    "tangent lives where v lives') whenever the sizes agree; wrong when f keeps the size but "
    "changes the shape, e.g. f(x) = x.T * sum(x) with x of shape (2, 3): the tangent should be "
    "(3, 2), this returns (2, 3) with the entries in the wrong places.",
)
def _rt16_jvp_tangent_tangent_like_v(f, x, v) -> tuple:
    y, t = jax.jvp(f, (x,), (v,))
    if t.size == jnp.size(v):
        t = t.reshape(jnp.shape(v))
    return y, t


@wrong(
    "vjp_cotangent",
    why="Clause 'ct @ J (that is J.T @ ct, ct shaped like f(x))': transposes ct first, "
    "thinking of it as the row vector of ct @ J; a no-op for vector outputs, but for a square "
    "matrix output it pulls back ct.T: e.g. f(x) = outer(tanh(x), x) with x in R^3 and a "
    "non-symmetric (3, 3) ct.",
)
def _rt16_vjp_cotangent_ct_transposed(f, x, ct) -> jax.Array:
    _, pull = jax.vjp(f, x)
    return pull(jnp.asarray(ct).T)[0]


def _rt16_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt16_subjaxprs(item)


def _rt16_eqns(jaxpr):
    jaxpr = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in _rt16_subjaxprs(value):
                yield from _rt16_eqns(sub)


@wrong(
    "dot_flops",
    why="Clause 'a contracted axis of size 0 leaves no multiply-adds: 0 flops': guards the "
    "contracted size with `or 1` (as if an empty product meant 'nothing contracted'), so a "
    "dot contracting an axis of size 0 counts as an outer product: (3, 0) @ (0, 4) counts 24, "
    "not 0.",
)
def _rt16_dot_flops_k_or_one(jaxpr) -> int:
    total = 0
    for eqn in _rt16_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, _), _ = eqn.params["dimension_numbers"]
        lhs = eqn.invars[0].aval.shape
        k = 1
        for d in lc:
            k *= int(lhs[d])
        k = k or 1
        out = 1
        for d in eqn.outvars[0].aval.shape:
            out *= int(d)
        total += 2 * out * k
    return int(total)


@wrong(
    "directional_derivative",
    why="Clause 'J @ v ... for f: R^n -> R^m' (shape (m,)): squeezes the tangent ('a single "
    "output is a number'); for m = 1 (f(x) = w2 @ tanh(w1 @ x) with w2 of shape (1, h)) it "
    "returns shape () instead of (1,).",
)
def _rt16_dd_squeezed_single_output(f, x, v) -> jax.Array:
    return jnp.squeeze(jax.jvp(f, (x,), (v,))[1])


@wrong(
    "per_example_grads",
    why="Clause 'the gradient of `example_loss`' (relu's derivative at 0 is 0): re-writes the "
    "per-example loss with relu as jnp.where(h >= 0, h, 0.0), whose derivative at an exact 0 "
    "pre-activation is 1; wrong on mlp_ties (an all-zero first example and zero hidden biases).",
)
def _rt16_per_example_grads_where_ge_relu(params: dict, xs, ys) -> dict:
    def loss(p, x, y):
        h = x @ p["w1"] + p["b1"]
        h = jnp.where(h >= 0, h, jnp.zeros_like(h))
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)


def _rt16_mesh():
    devs = jax.devices()
    size = 1 << (len(devs).bit_length() - 1)
    return jax.sharding.Mesh(np.array(devs[:size]), ("d",))


@wrong(
    "directional_derivative",
    why="Clause 'Work spread over several devices ... is counted on each device that runs it': "
    "splits v into one masked piece per device (J v = sum_k J v_k, by linearity) and runs one "
    "jvp per device in a shard_map, psum'ed: 8 jvps on the tests' 8 devices, over a quarter of "
    "jacfwd's cost at n = 16 (and 9, 32); values are right.",
)
def _rt16_dd_direction_split_over_devices(f, x, v) -> jax.Array:
    mesh = _rt16_mesh()
    d = mesh.devices.size
    n = x.shape[0]
    owner = jnp.arange(n) % d
    pieces = jnp.where(owner[None, :] == jnp.arange(d)[:, None], v[None, :], 0).astype(v.dtype)

    def body(piece):
        t = jax.jvp(f, (x,), (piece[0],))[1]
        return jax.lax.psum(t, "d")

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=jax.sharding.PartitionSpec("d"),
        out_specs=jax.sharding.PartitionSpec(),
        check_vma=False,
    )(pieces)


@wrong(
    "hessian_vector_product",
    why="Clause 'counted on each device that runs it': computes the forward-over-reverse HVP "
    "replicated on every device of the mesh (shard_map with everything replicated, 'so the "
    "result is already everywhere'): 8 copies of an HVP on 8 devices exceed a quarter of the "
    "Hessian program at n = 9 and 16; values are right.",
)
def _rt16_hvp_replicated_on_every_device(g, x, v) -> jax.Array:
    mesh = _rt16_mesh()

    def body(x, v):
        return jax.jvp(jax.grad(g), (x,), (v,))[1]

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(jax.sharding.PartitionSpec(), jax.sharding.PartitionSpec()),
        out_specs=jax.sharding.PartitionSpec(),
        check_vma=False,
    )(x, v)


@wrong(
    "hessian_vector_product",
    why="Clause 'at most a quarter of that program's flops at every size': symmetrizes the "
    "product, 0.5 * (jvp of grad(g) along v + vjp of grad(g) with v), 'since autodiff's H is "
    "only symmetric to rounding'; two second-order passes: right values, but over a quarter of "
    "hessian(g)(x) @ v at n = 9 (layer_energy of tanh_pair(9, 13, 5)).",
)
def _rt16_hvp_symmetrized(g, x, v) -> jax.Array:
    grad_g = jax.grad(g)
    fwd = jax.jvp(grad_g, (x,), (v,))[1]
    rev = jax.vjp(grad_g, x)[1](v)[0]
    return 0.5 * (fwd + rev)
