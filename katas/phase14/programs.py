"""The programs phase 14's tests profile, the profiles recorded from them, and what `katas show`
compiles per task.

Every program here is plain JAX. The tests profile them with `xla_inspect.profile`
(`capture_profile(fn, *args, steps=N)` for a plain step loop, `trace_events(body)` for a loop of
their own) and hand the kata functions the events (`TraceEvent`s) and the optimized HLO text of
the executable that ran. `PROFILES` are such profiles kept, trimmed, in `recorded/` (rewritten
with `uv run pytest tests/harness/test_profile_recordings.py --impl=reference
--snapshot-update`).

`args_for(name, seed)` builds NumPy arguments: the sizes are drawn from the seed, so every run of
the tests profiles programs of other shapes. `drawn_program(seed)` draws a whole program (name,
loops, trip counts) that no other task runs, for the predict task. Nothing here touches a device
at import.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.programs import Recipe, given
from xla_inspect.profile import Profile, capture_profile
from xla_inspect.profile_query import COMPILE_EVENTS

STEP_NAME = "train"
RECORDED = Path(__file__).resolve().parent / "recorded"


# ---- the bank ------------------------------------------------------------------------------------


def mlp_grad(params, x, y):
    """value_and_grad of a two-layer MLP's squared error: matmuls (kCustom fusions or dots) and
    small elementwise kLoop fusions."""

    def loss(params):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        return jnp.mean((h @ w2 + b2 - y) ** 2)

    return jax.value_and_grad(loss)(params)


def looped(x, w):
    """Two loops with a known trip count: a `lax.scan` of 4 trips and a `lax.fori_loop` of 3
    (each a `while` whose body instructions run nested in the while's event, once per trip)."""

    def body(c, _):
        return jnp.tanh(c @ w) + 1.0, c.sum()

    c, sums = jax.lax.scan(body, x, None, length=4)
    c = jax.lax.fori_loop(0, 3, lambda i, a: a * 0.5 + jnp.sin(a), c)
    return c, sums


def branchy(x, w):
    """A `lax.cond` (a `conditional` whose event holds the taken branch's events) inside a
    `lax.fori_loop` of 2 trips, then a matmul."""

    def body(i, c):
        return jax.lax.cond(c.sum() > 0, lambda a: jnp.tanh(a) * 2.0, lambda a: a - 1.0, c)

    return jax.lax.fori_loop(0, 2, body, x) @ w


def reshaping(x, w):
    """Views and copies: a transpose, reshapes (bitcasts), slices and a tuple of outputs."""
    y = (x @ w).reshape(-1)
    half = y.shape[0] // 2
    return y[:half] * 2.0, y[half:].reshape(2, -1), x.T, jnp.cumsum(y)


def layered(params, x):
    """value_and_grad of a residual MLP whose layer i runs under `jax.named_scope(f"layer_{i}")`;
    the loss is outside every scope."""

    def loss(params):
        h = x
        for i, (w1, w2) in enumerate(params):
            with jax.named_scope(f"layer_{i}"):
                h = h + jnp.tanh(h @ w1) @ w2
        return jnp.mean(h**2)

    return jax.value_and_grad(loss)(params)


def heavy_line(x, w, v):
    """One big matmul on one line, small elementwise work on the others."""
    big = x @ w
    small = jnp.sin(v) * 2.0
    return big, small + 1.0


def nested(x, w):
    """A `lax.scan` of 3 trips whose body holds a `lax.fori_loop` of 2: a while event holding a
    while event holding the inner body's events."""

    def body(c, _):
        c = jax.lax.fori_loop(0, 2, lambda i, a: jnp.sin(a) @ w, c)
        return c * 0.5, None

    return jax.lax.scan(body, x, None, length=3)[0]


def rooted(x, w):
    """One array out: the module's ROOT is the last matmul (work), not a tuple."""
    return jax.lax.fori_loop(0, 2, lambda i, a: jnp.tanh(a @ w), x) @ w


def spread(x, w):
    """Calls written over several lines: a source location spans them (its `line` is where the
    call starts, its `end_line` where it closes)."""
    y = jnp.matmul(
        x,
        w,
    )
    return jnp.tanh(
        y * 0.5,
    ) + jnp.sin(x)


def solving(x, w):
    """Library calls XLA:CPU runs as `custom-call`s: a Cholesky factor (LAPACK's potrf) and a
    top_k (a TopK call, which calls a comparator computation of its own), then a matmul."""
    n = x.shape[0]
    factor = jnp.linalg.cholesky(x @ x.T + n * jnp.eye(n, dtype=x.dtype))
    return jnp.tanh(factor @ w) + jax.lax.top_k(w, 2)[0].sum()


def scoped(params, x):
    """layered with its scopes named by the keys of `params` (a dict: scope name -> (w1, w2)),
    names as people write them (`block.0`, `enc-1`, `attn 2`, `res:3`); the layers run in the
    keys' sorted order, JAX's order for a dict."""

    def loss(params):
        h = x
        for name, (w1, w2) in params.items():
            with jax.named_scope(name):
                h = h + jnp.tanh(h @ w1) @ w2
        return jnp.mean(h**2)

    return jax.value_and_grad(loss)(params)


_SCOPE_WORDS = ("block", "enc", "dec", "attn", "mlp", "layer", "res", "stage")
_SCOPE_MARKS = (".", "-", " ", ":", "_", "")


def scope_names(rng: np.random.Generator, count: int) -> list[str]:
    """`count` distinct scope names drawn as people write them: a word, a mark (a dot, a dash, a
    space, a colon, an underscore or none) and a number, the first name's mark never a word
    character, then maybe a second word (`stage_1.mlp`); never a `/`, `;` or parenthesis."""
    names: list[str] = []
    while len(names) < count:
        marks = _SCOPE_MARKS[:4] if not names else _SCOPE_MARKS
        word, mark = (str(rng.choice(_SCOPE_WORDS)), str(rng.choice(marks)))
        name = f"{word}{mark}{len(names)}"
        if rng.random() < 0.3:
            name += str(rng.choice((".", "-", " "))) + str(rng.choice(_SCOPE_WORDS))
        if name not in names:
            names.append(name)
    return names


def _normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.normal(size=shape) / np.sqrt(shape[0])).astype(np.float32)


def args_for(name: str, seed: int) -> tuple[Any, ...]:
    """NumPy arguments for program `name` of PROGRAMS, sizes drawn from `seed`."""
    rng = np.random.default_rng(seed)
    if name == "mlp_grad":
        batch, width, hidden, out = (int(v) for v in rng.integers(4, 40, size=4))
        params = (
            _normal(rng, width, hidden),
            _normal(rng, hidden),
            _normal(rng, hidden, out),
            _normal(rng, out),
        )
        return params, _normal(rng, batch, width), _normal(rng, batch, out)
    if name in ("looped", "reshaping", "branchy", "nested", "rooted", "spread", "solving"):
        n = 2 * int(rng.integers(2, 24))
        return _normal(rng, n, n), _normal(rng, n, n)
    if name == "layered":
        layers = int(rng.integers(2, 5))
        width = int(rng.integers(8, 48))
        params = [
            (_normal(rng, width, 2 * width), _normal(rng, 2 * width, width)) for _ in range(layers)
        ]
        return params, _normal(rng, int(rng.integers(8, 64)), width)
    if name == "scoped":
        layers = int(rng.integers(2, 5))
        width = int(rng.integers(8, 48))
        params = {
            scope: (_normal(rng, width, 2 * width), _normal(rng, 2 * width, width))
            for scope in scope_names(rng, layers)
        }
        return params, _normal(rng, int(rng.integers(8, 64)), width)
    if name == "heavy_line":
        n = int(rng.integers(192, 320))
        return _normal(rng, n, n), _normal(rng, n, n), _normal(rng, int(rng.integers(4, 16)))
    raise KeyError(f"no program {name!r}; known: {sorted(PROGRAMS)}")


# ---- drawn programs (expected_counts) ------------------------------------------------------------

_STAGES = (
    "matmul",
    "elementwise",
    "view",
    "reshape",
    "unfused",
    "scan",
    "fori",
    "nested",
    "stride",
)
_UNFUSED = ("sort", "fft", "convolution")  # what XLA:CPU runs as an instruction of its own
_RESHAPES = ("wide", "tall", "batch")
_LOOPS = ("scan", "fori", "nested", "stride")
_WORDS = ("encode", "mix", "refine", "update", "propagate", "smooth", "blend", "block")


def drawn_program(
    seed: int, with_stages: tuple[str, ...] = ()
) -> tuple[Callable[..., Any], tuple[Any, ...], str]:
    """A program no other task runs, drawn from `seed`: its name (so its module's, `jit_<name>`),
    2 to 4 stages (a matmul, elementwise work, views and copies, a matmul of the array seen
    with other dims (`bitcast`s; alone or in a scan), an op XLA:CPU leaves unfused, an
    instruction of its own of an opcode no other stage prints (a sort, an FFT or a convolution;
    alone or in a scan), a `lax.scan`, a `lax.fori_loop`, a scan holding a fori_loop, a
    `lax.while_loop` whose counter starts anywhere and steps by 2 or 3, so its condition's
    bound is not its trip count), at least one of them a loop (`with_stages` always among
    them), trip counts from 2 to 8 but one loop's from 10 to 17 (a trip count of two digits),
    one array or a tuple out. A stage only `with_stages` brings: "compared", a top_k (a TopK
    `custom-call` whose called computation, its comparator, is no fusion; alone or in a scan).
    Returns (fn, args, what it is)."""
    rng = random.Random(seed)
    n = 2 * rng.randint(2, 20)
    trips = [rng.randint(2, 7) for _ in range(3)]
    strides = [(rng.randint(0, 9), rng.choice((2, 3)), rng.randint(1, 2)) for _ in range(3)]
    reshapes = [(rng.choice(_RESHAPES), rng.random() < 0.5) for _ in range(3)]
    unfused = [(rng.choice(_UNFUSED), rng.random() < 0.5) for _ in range(3)]
    stages = [rng.choice(_STAGES) for _ in range(rng.randint(2, 4))]
    if not set(_LOOPS) & set(stages):
        stages[rng.randrange(len(stages))] = rng.choice(_LOOPS)
    for with_stage in with_stages:  # in place of a stage, not of the only loop nor of one
        # placed before
        if with_stage in stages:
            continue
        loops = [i for i, stage in enumerate(stages) if stage in _LOOPS]
        spare = [
            i
            for i in range(len(stages))
            if (with_stage in _LOOPS or loops != [i]) and stages[i] not in with_stages
        ]
        if not spare:
            stages.append(with_stage)
        else:
            stages[rng.choice(spare)] = with_stage
    long = rng.choice([i for i, stage in enumerate(stages) if stage in _LOOPS])
    trips[long % 3] = rng.randint(10, 16)  # a nested stage's inner loop runs one more trip
    tupled = rng.random() < 0.5
    # drawn last, so that a program without it is the one an earlier version drew
    compared = [(rng.randint(1, 4), rng.random() < 0.5) for _ in range(3)]

    def program(x, w):
        h = x
        for i, stage in enumerate(stages):
            t = trips[i % 3]
            if stage == "matmul":
                h = jnp.tanh(h @ w)
            elif stage == "elementwise":
                h = jnp.sin(h) * 0.5 + 1.0
            elif stage == "view":
                halves = (h[: n // 2].T.reshape(n, n // 2), h[n // 2 :].T.reshape(n, n // 2))
                h = jnp.concatenate(halves, axis=1)
            elif stage == "reshape":  # bitcasts of other dims around a matmul, maybe in a scan
                form, looped = reshapes[i % 3]
                step = functools.partial(_reshaped_matmul, form=form, w=w)
                if looped:
                    h = jax.lax.scan(lambda c, _, step=step: (step(c), None), h, None, t)[0]
                else:
                    h = step(h)
            elif stage == "unfused":  # its own instruction, maybe in a scan's body
                op, looped = unfused[i % 3]
                step = functools.partial(_unfused_op, op=op, w=w)
                if looped:
                    h = jax.lax.scan(lambda c, _, step=step: (step(c), None), h, None, t)[0]
                else:
                    h = step(h)
            elif stage == "compared":  # a call of a computation no fusion calls, maybe looped
                k, looped = compared[i % 3]
                step = functools.partial(_top_k_added, k=k)
                if looped:
                    h = jax.lax.scan(lambda c, _, step=step: (step(c), None), h, None, t)[0]
                else:
                    h = step(h)
            elif stage == "scan":
                h = jax.lax.scan(lambda c, _: (jnp.tanh(c @ w) + 1.0, c.sum()), h, None, t)[0]
            elif stage == "fori":
                h = jax.lax.fori_loop(0, t, lambda _, a: a * 0.5 + jnp.cos(a), h)
            elif stage == "stride":  # t trips: lo, lo + by, ..., lo + by * (t - 1) < stop
                lo, by, past = strides[i % 3]
                stop = lo + by * (t - 1) + past
                h = jax.lax.while_loop(
                    lambda c, stop=stop: c[0] < stop,
                    lambda c, by=by: (c[0] + by, jnp.sin(c[1]) @ w),
                    (jnp.int32(lo), h),
                )[1]
            else:
                inner = t + 1

                def body(c, _, inner=inner):
                    return jax.lax.fori_loop(0, inner, lambda _, a: jnp.sin(a) @ w, c) * 0.5, None

                h = jax.lax.scan(body, h, None, t)[0]
        return (h, h.sum()) if tupled else h

    name = f"{rng.choice(_WORDS)}_{rng.randrange(1000)}"
    program.__name__ = program.__qualname__ = name
    data = np.random.default_rng(seed)
    args = (_normal(data, n, n) / np.float32(np.sqrt(n)), _normal(data, n, n))
    out = "a tuple" if tupled else "one array"
    shown = [
        f"reshape({reshapes[i % 3][0]}{', in a scan' if reshapes[i % 3][1] else ''})"
        if stage == "reshape"
        else f"unfused({unfused[i % 3][0]}{', in a scan' if unfused[i % 3][1] else ''})"
        if stage == "unfused"
        else f"top_k({compared[i % 3][0]}{', in a scan' if compared[i % 3][1] else ''})"
        if stage == "compared"
        else stage
        for i, stage in enumerate(stages)
    ]
    return program, args, f"{name}: {'+'.join(shown)}, trips {trips}, f32[{n},{n}], {out}"


def _unfused_op(h, *, op: str, w):
    """h [n, n] through an op XLA:CPU does not fuse (measured on jax 0.12: `sort`, `fft`,
    `convolution` in the optimized module, each an event of its own), then elementwise work."""
    if op == "sort":
        return jnp.sort(h, axis=0) * 0.5 + 1.0
    if op == "fft":
        return jnp.tanh(jnp.fft.fft(h).real)
    window = w[None, None, :3, :3]  # "convolution"
    return jnp.tanh(jax.lax.conv(h[None, None], window, (1, 1), "SAME")[0, 0])


def _top_k_added(h, *, k: int):
    """h [n, n] plus the sum of each row's k largest: XLA:CPU prints a `custom-call` to TopK
    whose `called_computations` is its comparator (one event; the comparator leaves none)."""
    return jnp.tanh(h + jax.lax.top_k(h, k)[0].sum(axis=1, keepdims=True))


def _reshaped_matmul(h, *, form: str, w):
    """h [n, n] seen with other dims around a matmul, the product seen as [n, n] again: XLA
    writes each reshape as a `bitcast` of other printed dims (same rank or not), no kernel."""
    n = h.shape[0]
    if form == "wide":  # [n/2, 2n] @ [2n, 2n]
        return (h.reshape(n // 2, 2 * n) @ jnp.tile(w, (2, 2))).reshape(n, n)
    if form == "tall":  # [2n, n/2] @ [n/2, n/2]
        return (h.reshape(2 * n, n // 2) @ w[: n // 2, : n // 2]).reshape(n, n)
    # "batch": [2, n/2, n] @ [2, n, n] (rank 3)
    return jnp.matmul(h.reshape(2, n // 2, n), jnp.stack([w, w.T])).reshape(n, n)


PROGRAMS: dict[str, Callable[..., Any]] = {
    "mlp_grad": mlp_grad,
    "looped": looped,
    "branchy": branchy,
    "reshaping": reshaping,
    "layered": layered,
    "heavy_line": heavy_line,
    "nested": nested,
    "rooted": rooted,
    "spread": spread,
    "scoped": scoped,
    "solving": solving,
}

#: name -> (program, seed, steps, cold): the profiles kept in recorded/<name>.json, trimmed to
#: the execute thread, the step events, the PjitFunction calls and the compile events.
PROFILES: dict[str, tuple[str, int, int, bool]] = {
    "mlp_grad_cold": ("mlp_grad", 0, 3, True),
    "looped_warm": ("looped", 1, 2, False),
    "layered_warm": ("layered", 2, 3, False),
}

_FILE_NAME_ROW = re.compile(r'^(\d+ )"(?:[^"]*/)?([^"/]*)"$', re.MULTILINE)


def record_profile(name: str) -> Profile:
    """Capture PROFILES[name] again, trimmed as recorded/ keeps it: the execute threads, the step
    events, the PjitFunction calls and COMPILE_EVENTS; the directories of FileNames cut."""
    import jax

    program, seed, steps, cold = PROFILES[name]
    profile = capture_profile(PROGRAMS[program], *args_for(program, seed), steps=steps, cold=cold)
    text = _FILE_NAME_ROW.sub(r'\1"\2"', profile.hlo_text)
    kind = "cold" if cold else "warm"
    about = f"{program}, seed {seed}, {steps} steps, {kind}; jax {jax.__version__}"
    trimmed = profile.trimmed(COMPILE_EVENTS)
    return Profile(trimmed.events, text, profile.module, profile.step_name, about)


def recorded_profile(name: str) -> Profile:
    """The profile kept in recorded/<name>.json."""
    from xla_inspect.profile import load_profile

    return load_profile(RECORDED / f"{name}.json")


# ---- the train-loop task ------------------------------------------------------------------------


def sgd_step(state, batch):
    """One SGD step of a linear model: (new state, loss). state = (w, b); batch = (x, y)."""
    w, b = state
    x, y = batch

    def loss(w, b):
        return jnp.mean((x @ w + b - y) ** 2)

    value, (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1))(w, b)
    return (w - 0.1 * gw, b - 0.1 * gb), value


def _spec(*shape: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32)


SHOWN = {
    "step_instructions": given(
        mlp_grad,
        ((_spec(16, 32), _spec(32), _spec(32, 8), _spec(8)), _spec(12, 16), _spec(12, 8)),
        "the MLP gradient step the tests profile (mlp_grad)",
    ),
    "expected_counts": given(looped, (_spec(16, 16), _spec(16, 16)), "a scan and a cond (looped)"),
    "kind_shares": given(
        mlp_grad,
        ((_spec(16, 32), _spec(32), _spec(32, 8), _spec(8)), _spec(12, 16), _spec(12, 8)),
        "the MLP gradient step (mlp_grad)",
    ),
    "scope_shares": given(
        layered,
        ([(_spec(16, 32), _spec(32, 16))] * 3, _spec(24, 16)),
        "the 3-layer residual MLP under named scopes (layered)",
    ),
    "line_shares": given(
        heavy_line,
        (_spec(256, 256), _spec(256, 256), _spec(8)),
        "one big matmul on one line (heavy_line)",
    ),
    "train_loop": Recipe(
        lambda _m: (sgd_step, ((_spec(8, 1), _spec(1)), (_spec(32, 8), _spec(32, 1)))),
        "the SGD step train_loop runs (sgd_step)",
        given=True,
    ),
}
