"""Phase 15 tests: JAX programs exported as StableHLO, compiled and run by IREE.

The reading tasks run on IREE flow listings recorded with the ``iree`` group
(katas/phase15/recorded/, programs.FLOWS; tests/harness/test_iree_recordings.py keeps them
current) and, with the group, on listings of freshly drawn programs compiled now. A listing is
also read with its dispatches' function renamed and its executables in another order (what IREE
prints for a module whose function has another name; MLIR does not order symbols). Expected
values come from other sources than the listing's names: flops from the dot_generals of the
program's jaxpr, XLA's kernels from XLA's own parser, IREE's verdicts from IREE (recorded in
programs.VERDICTS, compiled again for fresh cases with the group), versions from the bytecode's
producer string and from what the test asked jax.export for. The decide tasks are checked by
running what they return: through IREE with the group, through JAX and jax.export without it.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import iree, metamorphic, oracles
from kata_harness.predict import BACKEND_COMPILE, compiler_refused
from katas.phase15.programs import (
    BANK,
    FLOWS,
    ROUND_TRIPS,
    VERDICTS,
    Flow,
    attention,
    layernorm_softmax,
    mlp,
    spd_system,
    train_step,
)
from xla_inspect import iree_compile
from xla_inspect.iree import read_flow

PHASE = "phase15"
f32 = jnp.float32
bf16 = jnp.bfloat16


def _recorded(name: str) -> str:
    return iree.recorded(PHASE, name)


def _normal(rng: random.Random, shape, dtype=f32) -> jax.Array:
    values = np.random.default_rng(rng.getrandbits(32)).standard_normal(shape)
    return jnp.asarray(values, dtype)


# ---- flow listings in other forms ----------------------------------------------------------

_EXECUTABLE_START = re.compile(r"^  flow\.executable ", re.MULTILINE)


def _renamed_function(text: str, word: str) -> str:
    """The listing IREE prints when the module's public function is called `word`."""
    return re.sub(r"\bmain(?=_dispatch_\d)", word, text).replace("@main(", f"@{word}(")


def _reordered_executables(text: str, rng: random.Random) -> str:
    """The flow.executable blocks in another order (each kept whole, in the same place)."""
    lines = text.split("\n")
    blocks, at = [], 0
    while at < len(lines):
        if _EXECUTABLE_START.match(lines[at]):
            end = next(i for i in range(at, len(lines)) if lines[i].startswith("  }"))
            blocks.append((at, end))
            at = end + 1
        else:
            at += 1
    if len(blocks) < 2:
        return text
    first, last = blocks[0][0], blocks[-1][1]
    assert all(lines[b[1] + 1 : n[0]] == [] for b, n in itertools.pairwise(blocks)), (
        "flow.executables are not adjacent"
    )
    shuffled = [lines[s : e + 1] for s, e in blocks]
    rng.shuffle(shuffled)
    return "\n".join(lines[:first] + [x for b in shuffled for x in b] + lines[last + 1 :])


def _flow_forms(name: str, text: str, rng: random.Random):
    yield name, text
    word = rng.choice(["forward", "step", "f", "apply_model", "run"])
    yield f"{name} (function renamed to {word})", _renamed_function(text, word)
    yield f"{name} (executables reordered)", _reordered_executables(text, rng)


# ---- iree_run (decide) ---------------------------------------------------------------------


@contextmanager
def _xla_compiles_counted():
    """A list that receives one entry per XLA backend compile while the block runs. XLA's
    in-memory caches are emptied first and its persistent cache is off: a program XLA ran
    before (the test's own expected values, an eager op of the same shape) runs again only
    after compiling again, so computing anything with XLA is seen."""
    seen: list[str] = []
    jax.clear_caches()
    persistent = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)

    def listener(event: str, duration_secs: float, **_: str | int) -> None:
        if event == BACKEND_COMPILE:
            seen.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        jax.config.update("jax_enable_compilation_cache", persistent)


def _run_cases(rng: random.Random):
    """(what, function, args): fresh programs, several outputs, pytrees, int and bf16."""
    n, d, h, o = rng.randint(2, 24), rng.randint(2, 40), rng.randint(2, 48), rng.randint(1, 12)
    mlp_args = [_normal(rng, s) for s in [(n, d), (d, h), (h,), (h, o), (o,)]]
    yield f"mlp {n}x{d}x{h}x{o}", mlp, mlp_args
    yield "layernorm_softmax", layernorm_softmax, [_normal(rng, s) for s in [(n, h), (h,), (h,)]]
    yield "train_step", train_step, [*mlp_args[1:], mlp_args[0], _normal(rng, (n, o))]
    scale = rng.uniform(0.5, 3.0)

    def pytree_out(x, y):
        return {"sum": (x * scale).sum(0), "both": (jnp.tanh(x), y.T @ x)}

    yield "dict of outputs", pytree_out, [_normal(rng, (n, d)), _normal(rng, (n, o))]
    k = rng.randint(2, 30)
    ints = np.random.default_rng(rng.getrandbits(32)).integers(-9, 9, size=(n, k))
    yield "int32", (lambda a: (a @ a.T + 3, a.max(1))), [jnp.asarray(ints, jnp.int32)]
    yield "bf16", (lambda x: jax.nn.relu(x) * 2), [_normal(rng, (n, d), bf16)]


@pytest.mark.timeout(180)
@pytest.mark.task("iree_run")
def test_iree_run_matches_jax(kata, fresh):
    iree.require()
    for what, fn, args in _run_cases(fresh):
        want = [np.asarray(w) for w in jax.tree.leaves(fn(*args))]
        with _xla_compiles_counted() as compiles:
            got = kata.iree_run(fn, *args)
        where = f"{what} ({fresh.where()})"
        assert not compiles, f"{where}: XLA compiled {len(compiles)} time(s): JAX ran it, not IREE"
        assert isinstance(got, list), f"{where}: expected a list, got {type(got).__name__}"
        assert len(got) == len(want), f"{where}: {len(got)} outputs, f returns {len(want)}"
        for i, (mine, theirs) in enumerate(zip(got, want, strict=True)):
            assert isinstance(mine, np.ndarray), f"{where} output {i}: not a NumPy array"
            assert (mine.shape, mine.dtype) == (theirs.shape, theirs.dtype), (
                f"{where} output {i}: {mine.dtype}{list(mine.shape)}, JAX gives "
                f"{theirs.dtype}{list(theirs.shape)}"
            )
            exact = np.asarray(theirs, np.float64)
            error = np.abs(np.asarray(mine, np.float64) - exact).max() / max(
                np.abs(exact).max(), 1.0
            )
            # Ints exactly; floats within 1e-4 (a train step's gradients sum 50-odd products in
            # another order) or 4 roundings of a coarser dtype: far below what a wrong output
            # order or a wrong program would give.
            bound = max(1e-4, 4 * _eps(theirs.dtype)) if _eps(theirs.dtype) else 0.0
            assert error <= bound, f"{where} output {i}: off by {error:.3g}"


def _eps(dtype) -> float:
    return float(jnp.finfo(dtype).eps) if jnp.issubdtype(dtype, jnp.floating) else 0.0


# ---- agreement_rtol (decide) ---------------------------------------------------------------

DTYPES = ("float32", "bfloat16")


@pytest.mark.task("agreement_rtol")
def test_agreement_rtol_is_no_looser_than_32_eps(kata):
    for dtype in DTYPES:
        got = kata.agreement_rtol(dtype)
        assert isinstance(got, float), f"{dtype}: expected a float, got {type(got).__name__}"
        bound = 32 * float(jnp.finfo(dtype).eps)
        assert 0 < got <= bound, f"{dtype}: {got} is looser than 32 eps ({bound:.3g})"


@pytest.mark.task("agreement_rtol")
def test_agreement_rtol_covers_recorded_draws(kata):
    """The worst disagreement measured on seeded draws (recorded/agreement.txt)."""
    table = iree.read_agreement(
        iree.recorded_path(PHASE, "agreement").with_suffix(".txt").read_text()
    )
    assert {d for d, _ in table} == set(DTYPES) and {n for _, n in table} == set(ROUND_TRIPS)
    for (dtype, name), worst in sorted(table.items()):
        got = kata.agreement_rtol(dtype)
        with check:
            assert got >= worst, f"{dtype}: IREE and JAX differ by {worst:.3g} on {name}: {got}"


@pytest.mark.timeout(240)
@pytest.mark.task("agreement_rtol")
def test_agreement_rtol_covers_fresh_draws(kata, fresh):
    iree.require()
    start = fresh.getrandbits(30)
    for dtype in DTYPES:
        got = kata.agreement_rtol(dtype)
        for name, program in sorted(ROUND_TRIPS.items()):
            worst = iree.agreement(program, dtype, range(start, start + 3))
            with check:
                assert got >= worst, (
                    f"{dtype} {name} ({fresh.where()}): IREE and JAX differ by {worst:.3g}, "
                    f"beyond {got}"
                )


# ---- matmul_flops (read) -------------------------------------------------------------------


def _jaxpr_dot_flops(fn, args) -> int:
    """2 * output elements * contracted size for every dot_general of fn's jaxpr (sub-jaxprs
    included): the program's matmul work, known without IREE."""
    total = 0
    pending = [jax.make_jaxpr(fn)(*args).jaxpr]
    while pending:
        jaxpr = pending.pop()
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                (contract, _), _ = eqn.params["dimension_numbers"]
                lhs = getattr(eqn.invars[0].aval, "shape")  # noqa: B009  (AbstractValue in stubs)
                out = getattr(eqn.outvars[0].aval, "shape")  # noqa: B009
                dims = [*out, *(lhs[d] for d in contract)]
                if all(isinstance(d, int) for d in dims):  # a symbolic size: no known work
                    total += 2 * math.prod(dims)
            for value in eqn.params.values():
                for inner in value if isinstance(value, list | tuple) else [value]:
                    sub = getattr(inner, "jaxpr", inner)
                    if hasattr(sub, "eqns"):
                        pending.append(sub)
    return total


@pytest.mark.task("matmul_flops")
def test_matmul_flops_of_recorded_listings(kata):
    rng = random.Random(15)
    for name, program in sorted(FLOWS.items()):
        expected = _jaxpr_dot_flops(program.fn, program.args())
        for what, text in _flow_forms(name, _recorded(name), rng):
            got = kata.matmul_flops(text)
            assert isinstance(got, int), f"{what}: expected an int, got {type(got).__name__}"
            with check:
                assert got == expected, (
                    f"{what}: the program's dot_generals do {expected}, got {got}"
                )


def _fresh_contractions(rng: random.Random) -> list[tuple[str, Flow]]:
    m, n, k, b = (rng.randint(2, 96) for _ in range(4))
    q, kv, d = rng.randint(2, 40), rng.randint(2, 40), rng.randint(2, 64)
    dtype = rng.choice([f32, bf16])
    return [
        (
            "mlp",
            Flow(
                "mlp", mlp, (((m, k), f32), ((k, n), f32), ((n,), f32), ((n, b), f32), ((b,), f32))
            ),
        ),
        (
            "attention",
            Flow(
                "attention",
                attention,
                (((b % 7 + 2, q, d), f32), ((b % 7 + 2, kv, d), f32), ((b % 7 + 2, kv, d), f32)),
            ),
        ),
        ("matvec", Flow("m @ v", lambda a, v: a @ v, (((m, k), dtype), ((k,), dtype)))),
        ("vecmat", Flow("v @ a", lambda v, a: v @ a, (((k,), f32), ((k, n), f32)))),
        (
            "mixed",
            Flow(
                "bf16 matmul into f32",
                lambda a, c: jnp.dot(a, c, preferred_element_type=f32),
                (((m, k), bf16), ((k, n), bf16)),
            ),
        ),
    ]


@pytest.mark.timeout(120)
@pytest.mark.task("matmul_flops")
def test_matmul_flops_of_fresh_programs(kata, fresh):
    iree.require()
    for name, program in _fresh_contractions(fresh):
        args = program.args()
        text = iree_compile.flow_listing(program.fn, *args)
        expected = _jaxpr_dot_flops(program.fn, args)
        shapes = [f"{a.dtype}{list(a.shape)}" for a in args]
        got = kata.matmul_flops(text)
        with check:
            assert got == expected, (
                f"{name} {shapes} ({fresh.where()}): expected {expected}, got {got}"
            )


def _batch_polymorphic_contractions(rng: random.Random):
    """(what, f, args): matmuls on a symbolic batch (IREE names their dispatches with a `D`)
    next to matmuls of static sizes, in one program."""
    (batch,) = jax.export.symbolic_shape("batch")
    d, h, o = rng.randint(2, 96), rng.randint(2, 96), rng.randint(2, 48)

    def dense_and_static(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2, w1 @ w2

    yield (
        f"f32[batch,{d}] @ [{d},{h}] @ [{h},{o}], and [{d},{h}] @ [{h},{o}]",
        dense_and_static,
        [jax.ShapeDtypeStruct(s, f32) for s in [(batch, d), (d, h), (h, o)]],
    )
    # (x @ v for a vector v on a symbolic batch: IREE 3.13.0 refuses its `tensor<?x1xf32>`
    # reshape, so there is no dynamic matvec here.)


@pytest.mark.timeout(120)
@pytest.mark.task("matmul_flops")
def test_matmul_flops_with_a_symbolic_batch(kata, fresh):
    iree.require()
    for what, fn, args in _batch_polymorphic_contractions(fresh):
        text = iree_compile.flow_listing(fn, *args)
        expected = _jaxpr_dot_flops(fn, args)
        got = kata.matmul_flops(text)
        with check:
            assert got == expected, (
                f"{what} ({fresh.where()}): a dispatch with a dynamic size counts 0; the static "
                f"ones do {expected}, got {got}"
            )


@pytest.mark.task("matmul_flops")
def test_matmul_flops_counts_no_other_kind(kata):
    text = _recorded("layernorm_softmax")
    assert kata.matmul_flops(text) == 0, "reductions and softmax do no matmul work"


# ---- merged_by_iree (read) -----------------------------------------------------------------

_CALLS = re.compile(r"\b(?:calls|to_apply|body|condition)=\{?%?([\w.-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_OP_NAMES = re.compile(r'op_name="([^"]*)"')


def _last_parts(joined: list[str]) -> set[str]:
    return {n.rsplit("/", 1)[1] for j in joined for n in j.split(";") if "/" in n}


def _xla_dot_kernel_names(hlo_text: str) -> set[str]:
    """Names held by XLA's kernels that hold a dot, read through XLA's own parser."""
    module = oracles.xla_parsed(hlo_text)
    computations = {c.name: c for c in module.computations()}
    entry = re.search(r"^ENTRY %?([\w.-]+)", hlo_text, re.MULTILINE)
    assert entry is not None
    names: set[str] = set()
    for instruction in computations[entry[1]].instructions():
        printed = [instruction.to_string()]
        pending = _called(printed[0])
        seen: set[str] = set()
        while pending:
            callee = pending.pop()
            if callee in seen or callee not in computations:
                continue
            seen.add(callee)
            for inner in computations[callee].instructions():
                printed.append(inner.to_string())
                pending.extend(_called(printed[-1]))
        if any(re.search(r"\] dot\(|\} dot\(", p) for p in printed):
            names |= _last_parts([m for p in printed for m in _OP_NAMES.findall(p)])
    return names


def _called(printed: str) -> list[str]:
    found = _CALLS.findall(printed)
    for branches in _BRANCHES.findall(printed):
        found.extend(b.strip().lstrip("%") for b in branches.split(","))
    return found


def _iree_matmul_names(flow_text: str) -> set[str]:
    contractions = {"matmul", "batch_matmul", "matvec", "vecmat"}
    return {n for d in read_flow(flow_text) if d.kind in contractions for n in d.sources}


def _merged(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    ours, theirs = _iree_matmul_names(flow_text), _xla_dot_kernel_names(hlo_text)
    ours.discard("dot_general")
    theirs.discard("dot_general")
    return ours - theirs, theirs - ours


def _xla_cpu(program: Flow) -> str:
    text = jax.jit(program.fn).lower(*program.args()).compile().as_text()
    assert text is not None
    return text


@pytest.mark.task("merged_by_iree")
def test_merged_by_iree_on_recorded_listings(kata):
    rng = random.Random(27)
    for name, program in sorted(FLOWS.items()):
        hlo = _xla_cpu(program)
        variants = [("as printed", hlo)] + [
            (v.kind, v.text) for v in metamorphic.variants(hlo, seed=rng.getrandbits(16))
        ]
        for (hlo_form, hlo_text), (flow_form, flow_text) in zip(
            variants, _flow_forms(name, _recorded(name), rng), strict=False
        ):
            expected = _merged(hlo_text, flow_text)
            got = kata.merged_by_iree(hlo_text, flow_text)
            assert isinstance(got, tuple) and len(got) == 2, f"{name}: expected a pair of sets"
            with check:
                assert (set(got[0]), set(got[1])) == expected, (
                    f"{name} (HLO {hlo_form}, listing {flow_form}): got {got}"
                )


def _fresh_layers(rng: random.Random):
    activations = {
        "gelu": jax.nn.gelu,
        "relu": jax.nn.relu,
        "tanh": jnp.tanh,
        "silu": jax.nn.silu,
        "sigmoid": jax.nn.sigmoid,
        "exp": jnp.exp,
    }
    for _ in range(3):
        act_name = rng.choice(sorted(activations))
        act = activations[act_name]
        bias, second = rng.random() < 0.5, rng.random() < 0.5
        m, k, n = rng.randint(4, 64), rng.randint(4, 64), rng.randint(4, 64)

        def layer(x, w, b, w2, act=act, bias=bias, second=second):
            y = x @ w
            y = act(y + b if bias else y)
            return y @ w2 if second else y

        shapes = (((m, k), f32), ((k, n), f32), ((n,), f32), ((n, 8), f32))
        yield f"{act_name} bias={bias} second={second} {m}x{k}x{n}", Flow("layer", layer, shapes)


@pytest.mark.timeout(120)
@pytest.mark.task("merged_by_iree")
def test_merged_by_iree_on_fresh_layers(kata, fresh):
    iree.require()
    for what, program in _fresh_layers(fresh):
        flow_text = iree_compile.flow_listing(program.fn, *program.args())
        hlo = _xla_cpu(program)
        expected = _merged(hlo, flow_text)
        got = kata.merged_by_iree(hlo, flow_text)
        with check:
            assert (set(got[0]), set(got[1])) == expected, f"{what} ({fresh.where()}): got {got}"


# ---- iree_verdict (predict) ----------------------------------------------------------------

_PRECEDENCE = ("export", "sdy", "lapack", "runs")


@contextmanager
def _iree_refused():
    """IREE's compile entry points raise while the prediction runs (when IREE is installed)."""
    if iree.missing() is not None:
        yield
        return
    import iree.compiler as compiler  # pyright: ignore[reportMissingImports]  (the iree group)

    def refuse(*_: object, **__: object):
        raise AssertionError("iree_verdict is a prediction: it may not compile with IREE")

    saved = {name: getattr(compiler, name) for name in ("compile_str", "compile_file")}
    for name in saved:
        setattr(compiler, name, refuse)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(compiler, name, value)


def _wrapped(fn, how: str):
    if how == "jit":
        return jax.jit(fn)
    if how == "checkpoint":
        return jax.checkpoint(fn)
    if how == "cond":

        def in_cond(*args):
            return jax.lax.cond(True, lambda a: fn(*a), lambda a: fn(*a), args)

        return in_cond
    return fn


def _verdict_cases(rng: random.Random):
    """(what, function, args, expected verdict without IREE): one draw of every family, each
    wrapped one way, then pairs of families in one function."""
    generator = np.random.default_rng(rng.getrandbits(32))
    names = sorted(BANK)
    for name in names:
        how = rng.choice(["plain", "jit", "checkpoint", "cond"])
        if name in ("typed_key", "key_result") and how == "cond":
            how = "jit"  # a key through a cond's operands is the same verdict, but keep it simple
        fn, args = BANK[name](generator)
        yield f"{name} ({how})", _wrapped(fn, how), args, VERDICTS[name]
    # Pairs that decide between two refusals, always; then pairs drawn.
    pairs = [("solve", "typed_key"), ("sharding_constraint", "host_callback"), ("eigh", "scan")]
    pairs += [("key_result", "cholesky")]  # a typed key among the results only
    pairs += [tuple(rng.sample(names, 2)) for _ in range(3)]
    for first, second in pairs:
        f1, a1 = BANK[first](generator)
        f2, a2 = BANK[second](generator)
        split = len(a1)

        def both(*args, f1=f1, f2=f2, split=split):
            return f1(*args[:split]), f2(*args[split:])

        expected = min(VERDICTS[first], VERDICTS[second], key=_PRECEDENCE.index)
        yield f"{first} with {second}", both, (*a1, *a2), expected


@pytest.mark.timeout(180)
@pytest.mark.task("iree_verdict")
def test_iree_verdict(kata, fresh):
    live = iree.missing() is None
    for what, fn, args, expected in _verdict_cases(fresh):
        if live:
            expected = iree.verdict(fn, args)
            assert expected in _PRECEDENCE, f"{what}: IREE did something unforeseen: {expected}"
        jaxpr = jax.make_jaxpr(fn)(*args)
        with compiler_refused("iree_verdict"), _iree_refused():
            got = kata.iree_verdict(jaxpr)
        with check:
            assert got == expected, f"{what} ({fresh.where()}): predicted {got!r}"


# ---- export_facts (read) -------------------------------------------------------------------


def _producer(module_bytecode: bytes) -> str:
    """The producer string of MLIR bytecode: after the magic and a prefix varint version."""
    assert module_bytecode[:4] == b"ML\xefR", "not MLIR bytecode"
    first = module_bytecode[4]
    width = (first & -first).bit_length()  # trailing zeros + 1 bytes hold the version
    end = module_bytecode.index(b"\0", 4 + width)
    return module_bytecode[4 + width : end].decode()


_PLATFORMS = ("cpu", "cuda", "tpu")


@pytest.mark.task("export_facts")
def test_export_facts(kata, fresh):
    low = jax.export.minimum_supported_calling_convention_version
    high = jax.export.maximum_supported_calling_convention_version
    before = jax.config.jax_export_calling_convention_version
    functions = [jnp.sin, lambda x: x @ x.T, lambda x: jax.nn.softmax(x, -1), jnp.cumsum]
    try:
        for version in range(low, high + 1):
            for drawn in range(3):
                size = 2 if drawn == 0 else fresh.randint(1, 3)
                platforms = tuple(fresh.sample(_PLATFORMS, size))
                if drawn == 0 and platforms == tuple(sorted(platforms)):
                    platforms = platforms[::-1]  # one case is never in alphabetical order
                fn = fresh.choice(functions)
                shape = (fresh.randint(1, 9), fresh.randint(1, 9))
                jax.config.update("jax_export_calling_convention_version", version)
                exported = jax.export.export(jax.jit(fn), platforms=platforms)(
                    jax.ShapeDtypeStruct(shape, f32)
                )
                blob = bytes(exported.serialize())
                producer = _producer(exported.mlir_module_serialized)
                assert producer.startswith("StableHLO_v"), producer
                expected = (producer.removeprefix("StableHLO_v"), version, platforms)
                got = kata.export_facts(blob)
                with check:
                    assert tuple(got) == expected, (
                        f"exported for {platforms}, calling convention {version} "
                        f"({fresh.where()}): got {got}"
                    )
    finally:
        jax.config.update("jax_export_calling_convention_version", before)


# ---- batch_polymorphic (decide) ------------------------------------------------------------


def _row_functions(rng: random.Random, broadcasts: bool = True):
    """(what, f, example): row-wise functions and an example of one batch size. With a
    symbolic batch, IREE 3.13.0 refuses a row statistic broadcast back over the row (softmax,
    x - mean: "failed to legalize operation 'stablehlo.dynamic_broadcast_in_dim'"), so the IREE
    test leaves those out (``broadcasts=False``)."""
    batch = rng.randint(2, 9)
    features = rng.randint(2, 24)
    hidden = rng.randint(2, 24)
    w = _normal(rng, (features, hidden))
    b = _normal(rng, (hidden,))
    yield "dense+tanh", (lambda x: jnp.tanh(x @ w)), _normal(rng, (batch, features))
    yield "dense+bias+relu", (lambda x: jax.nn.relu(x @ w + b)), _normal(rng, (batch, features))
    rest = (rng.randint(2, 6), rng.randint(2, 6))
    yield (
        "bf16 row sums 3-d",
        (lambda x: jnp.abs(x).sum((1, 2))),
        _normal(rng, (batch, *rest), bf16),
    )
    if broadcasts:
        yield "softmax", (lambda x: jax.nn.softmax(x, axis=-1)), _normal(rng, (batch, features))
        yield (
            "normalize 3-d",
            (lambda x: x / (1 + jnp.abs(x).sum((1, 2), keepdims=True))),
            _normal(rng, (batch, *rest)),
        )


def _assert_close(got, want, what: str) -> None:
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: {got.dtype}, f gives {want.dtype}"
    tolerance = 4 * _eps(want.dtype) if want.dtype == bf16 else 1e-5
    np.testing.assert_allclose(
        np.asarray(got, np.float64),
        np.asarray(want, np.float64),
        rtol=tolerance,
        atol=tolerance,
        err_msg=what,
    )


def _batches(rng: random.Random) -> list[int]:
    return [1, rng.randint(2, 8), rng.randint(20, 70)]


def _polymorphic_export(kata, what: str, fn, example: jax.Array) -> jax.export.Exported:
    """The answer's export of `fn`, checked: one input, only its leading dimension symbolic, the
    others and the dtype the example's. What a wrong export raises becomes a failure saying so."""
    shown = f"{example.dtype}{list(example.shape)}"
    try:
        exported = kata.batch_polymorphic(fn, example)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001  (jax.export raises several types on a wrong spec)
        pytest.fail(
            f"batch_polymorphic: {what} on an example {shown}: exporting raised "
            f"{type(exc).__name__}: {str(exc)[:300]}",
            pytrace=False,
        )
    assert isinstance(exported, jax.export.Exported), f"{what}: not a jax.export.Exported"
    assert len(exported.in_avals) == 1, f"{what}: {len(exported.in_avals)} inputs, f takes 1"
    (aval,) = exported.in_avals
    shape = tuple(aval.shape)
    assert len(shape) == example.ndim, f"{what}: exported for rank {len(shape)}, example {shown}"
    assert not isinstance(shape[0], int), f"{what}: the batch dimension is {shape[0]}"
    symbolic = [i for i, d in enumerate(shape[1:], 1) if not isinstance(d, int)]
    assert not symbolic, (
        f"{what}: dimension(s) {symbolic} are symbolic too ({shape}); only the batch may be"
    )
    assert shape[1:] == example.shape[1:] and aval.dtype == example.dtype, (
        f"{what}: exported for {aval.dtype}{list(shape)}, example is {shown}"
    )
    return exported


@pytest.mark.task("batch_polymorphic")
def test_batch_polymorphic_export(kata, fresh):
    for what, fn, example in _row_functions(fresh):
        exported = _polymorphic_export(kata, what, fn, example)
        for batch in _batches(fresh):
            x = _normal(fresh, (batch, *example.shape[1:]), example.dtype)
            try:
                got = np.asarray(exported.call(x))
            except Exception as exc:  # noqa: BLE001  (shape assertions raise several types)
                raise AssertionError(f"{what}: the export refuses batch {batch}: {exc}") from exc
            _assert_close(got, fn(x), f"{what} at batch {batch}")


@pytest.mark.timeout(120)
@pytest.mark.task("batch_polymorphic")
def test_batch_polymorphic_one_iree_module(kata, fresh):
    iree.require()
    for what, fn, example in _row_functions(fresh, broadcasts=False):
        exported = _polymorphic_export(kata, what, fn, example)
        vmfb = iree_compile.compile_vmfb(exported.mlir_module())
        for batch in _batches(fresh):
            x = _normal(fresh, (batch, *example.shape[1:]), example.dtype)
            try:
                (got,) = iree.run(vmfb, x)
            except Exception as exc:  # noqa: BLE001  (IREE's runtime raises its own types)
                raise AssertionError(f"{what}: IREE could not run batch {batch}: {exc}") from exc
            _assert_close(got, fn(x), f"{what} at batch {batch}")


# ---- portable_solve (decide) ---------------------------------------------------------------


def _systems(rng: random.Random):
    generator = np.random.default_rng(rng.getrandbits(32))
    sizes = [1, rng.randint(2, 8), rng.randint(9, 40), 64]
    for n in sizes:
        k = rng.choice([None, rng.randint(1, 5)])
        yield n, k, *spd_system(generator, n, k)


def _relative_error(got, a, b) -> float:
    exact = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    return float(np.linalg.norm(np.asarray(got, np.float64) - exact) / np.linalg.norm(exact))


@pytest.mark.task("portable_solve")
def test_portable_solve_values(kata, fresh):
    for n, _, a, b in _systems(fresh):
        got = kata.portable_solve(jnp.asarray(a), jnp.asarray(b))
        where = f"n={n}, b {list(b.shape)} ({fresh.where()})"
        assert (got.shape, got.dtype) == (b.shape, b.dtype), f"{where}: {got.dtype}{got.shape}"
        error = _relative_error(got, a, b)
        assert error <= 1e-3, f"{where}: relative error {error:.3g}"


def _misleading_system(rng: np.random.Generator, n: int, k: int | None):
    """An SPD f32 a of condition number 100 and a b almost all along eigenvectors of a's largest
    eigenvalue (100), the rest (1e-4 to 9e-4 of b's norm, per column) along eigenvectors of
    eigenvalues in [1, 2]. That small rest is most of x's error budget: leaving it unsolved
    leaves a relative residual under 1e-3 but a relative error of at least 5e-3."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    top, low = int(rng.integers(1, n // 4 + 2)), int(rng.integers(1, n // 4 + 2))
    top, low = min(top, n - 2), min(low, n - 1 - min(top, n - 2))
    eigenvalues = rng.uniform(1.0, 100.0, n)
    eigenvalues[:top] = 100.0
    eigenvalues[top : top + low] = rng.uniform(1.0, 2.0, low)
    eigenvalues[top] = 1.0
    a = (q * eigenvalues) @ q.T
    columns = 1 if k is None else k
    large = q[:, :top] @ rng.standard_normal((top, columns))
    small = q[:, top : top + low] @ rng.standard_normal((low, columns))
    small *= (
        rng.uniform(1e-4, 9e-4, columns)
        * np.linalg.norm(large, axis=0)
        / np.linalg.norm(small, axis=0)
    )
    b = large + small
    return ((a + a.T) / 2).astype(np.float32), (b[:, 0] if k is None else b).astype(np.float32)


@pytest.mark.task("portable_solve")
def test_portable_solve_where_a_small_residual_misleads(kata, fresh):
    generator = np.random.default_rng(fresh.getrandbits(32))
    for n in [fresh.randint(4, 12), fresh.randint(13, 40), 64]:
        k = fresh.choice([None, fresh.randint(1, 5)])
        a, b = _misleading_system(generator, n, k)
        got = kata.portable_solve(jnp.asarray(a), jnp.asarray(b))
        where = f"n={n}, b {list(b.shape)}, cond(a) = 100 ({fresh.where()})"
        assert (got.shape, got.dtype) == (b.shape, b.dtype), f"{where}: {got.dtype}{got.shape}"
        error = _relative_error(got, a, b)
        assert error <= 1e-3, (
            f"{where}: relative error {error:.3g}; a residual below 1e-3 of b can hide an error "
            "up to cond(a) = 100 times larger"
        )


@pytest.mark.task("portable_solve")
def test_portable_solve_exports_without_custom_calls(kata, fresh):
    for n, _, a, b in _systems(fresh):
        where = f"n={n}, b {list(b.shape)} ({fresh.where()})"
        try:
            exported = jax.export.export(jax.jit(kata.portable_solve))(a, b)
        except NotImplementedError as exc:
            raise AssertionError(f"{where}: jax.export refuses it: {exc}") from exc
        targets = re.findall(r"custom_call @(\w+)", exported.mlir_module())
        assert not targets, f"{where}: the export calls {sorted(set(targets))}"


@pytest.mark.timeout(120)
@pytest.mark.task("portable_solve")
def test_portable_solve_runs_in_iree(kata, fresh):
    iree.require()
    for n, _, a, b in _systems(fresh):
        where = f"n={n}, b {list(b.shape)} ({fresh.where()})"
        module = jax.export.export(jax.jit(kata.portable_solve))(a, b).mlir_module()
        try:
            vmfb = iree_compile.compile_vmfb(module)
        except iree_compile.IreeCompileError as exc:
            raise AssertionError(f"{where}: {exc}") from exc
        (got,) = iree.run(vmfb, a, b)
        error = _relative_error(got, a, b)
        assert error <= 1e-3, f"{where}: IREE's result is off by {error:.3g}"
