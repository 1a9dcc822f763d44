"""What several phase-15 test files share: the phase's name, its dtypes, standard-normal arrays
drawn from a test's rng, SPD systems of entries near float32's largest, a dtype's machine
epsilon, the recorded flow listings in the forms the reading tasks read them in, and an
optimized HLO module with joined op_names.
"""

from __future__ import annotations

import functools
import itertools
import random
import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness import iree, oracles
from xla_inspect import iree_compile

PHASE = "phase15"
f32 = jnp.float32
bf16 = jnp.bfloat16


def normal(rng: random.Random, shape, dtype=f32) -> jax.Array:
    values = np.random.default_rng(rng.getrandbits(32)).standard_normal(shape)
    return jnp.asarray(values, dtype)


def eps_of(dtype) -> float:
    return float(jnp.finfo(dtype).eps) if jnp.issubdtype(dtype, jnp.floating) else 0.0


def recorded(name: str) -> str:
    return iree.recorded(PHASE, name)


def flow_listing(fn, *args) -> str:
    """IREE's flow listing of ``fn`` exported for ``args``: the export is made every time,
    IREE's compile once per exported text in this process. A test's listings are its own (the
    answer reads them), so the census's versions of a kata file, drawing the same cases under
    one ``--kata-seed``, share IREE's compile of each instead of paying it once per version."""
    return _flow_of(iree_compile.export(fn, *args).mlir_module())


_flow_of = functools.lru_cache(maxsize=128)(iree_compile.flow_listing_of)


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


_DISPATCH_INDEX = re.compile(r"(?<=\w_dispatch_)\d+(?![\d])")
_COUNTED_EXPORT = re.compile(
    r"flow\.executable\.export\s+\w+\s+@\w+?_dispatch_(\d+)_(?:batch_)?(?:matmul|matvec|vecmat)_\d"
)


def renumbered_dispatches(text: str, rng: random.Random) -> tuple[str, str]:
    """(how, listing): the dispatches renumbered as a listing of more than ten prints them: one
    executable (a static matmul, batch_matmul, matvec or vecmat one if there is one) gets a
    one-digit index p and every other one an index that starts with p (p0, p1, ...): the index
    is a label of any width, and `@main_dispatch_p` is a prefix of `@main_dispatch_p3::`."""
    old = sorted({int(i) for i in _DISPATCH_INDEX.findall(text)})
    counted = sorted({int(i) for i in _COUNTED_EXPORT.findall(text)})
    if not old:
        return "no dispatches", text
    first = rng.choice(counted or old)
    p = rng.randint(1, 9)
    rest = [i for i in old if i != first]
    rng.shuffle(rest)
    new = {first: p} | {i: p * 10 + at if at < 10 else p * 100 + at for at, i in enumerate(rest)}
    how = ", ".join(f"{i}->{new[i]}" for i in old)
    return how, _DISPATCH_INDEX.sub(lambda m: str(new[int(m[0])]), text)


def flow_forms(name: str, text: str, rng: random.Random):
    yield name, text
    word = rng.choice(["forward", "step", "f", "apply_model", "run"])
    yield f"{name} (function renamed to {word})", _renamed_function(text, word)
    yield f"{name} (executables reordered)", _reordered_executables(text, rng)
    how, renumbered = renumbered_dispatches(text, rng)
    yield f"{name} (dispatches renumbered {how})", renumbered


# ---- an optimized HLO module in another form -------------------------------------------------

_DOT_OP_NAME = re.compile(r'([\]}] dot\([^\n]*?op_name=")([^"]*)(")')
_ABSENT_OPS = ("cos", "log1p", "erf_inv", "sign", "cbrt", "atan2")


def joined_op_names(hlo_text: str, rng: random.Random) -> str | None:
    """Every dot's op_name with a second name joined in front (`"jit(f)/cos;jit(f)/dot_general"`,
    how XLA names an instruction that stands for several), of an operation the program does not
    hold; None if there is no dot or XLA's parser refuses the result."""
    absent = [op for op in _ABSENT_OPS if f"/{op}" not in hlo_text]
    name = rng.choice(absent)

    def join(match: re.Match[str]) -> str:
        prefix = match[2].split(";")[0].rsplit("/", 1)[0]
        return f"{match[1]}{prefix}/{name};{match[2]}{match[3]}"

    joined, count = _DOT_OP_NAME.subn(join, hlo_text)
    return joined if count and oracles.xla_accepts(joined) else None


def largest_entry_systems(rng: random.Random):
    """(what, a, b): two SPD f32 systems, n from 32 to 64, condition number at most 100, whose
    a is scaled so that its largest entry is 10^37.5 to 10^37.9: the contract bounds no entry's
    size, so a sum of n of a's entries (its trace, a row's sum of absolute values) leaves
    float32's range where a's largest entry does not. (Not above 2^126, 8.5e37: XLA's CPU
    compile turns a / max|a| into a times 1 / max|a|, a reciprocal below float32's smallest
    normal, flushed to 0.) b is standard normal scaled by 1e12 to 1e25, so that x's norm (about
    1e-26 to 1e-10) lies in the contract's 1e-30 to 1e30."""
    generator = np.random.default_rng(rng.getrandbits(32))
    for _ in range(2):
        n, k = rng.randint(32, 64), rng.choice([None, rng.randint(1, 4)])
        q, _ = np.linalg.qr(generator.standard_normal((n, n)))
        eigenvalues = generator.uniform(1.0, 100.0, n)
        eigenvalues[0], eigenvalues[-1] = 1.0, 100.0
        a = (q * eigenvalues) @ q.T
        a = (a + a.T) / 2
        largest = 10 ** rng.uniform(37.5, 37.9)
        a = (a * (largest / np.abs(a).max())).astype(np.float32)
        b_scale = 10 ** rng.uniform(12, 25)
        b = (generator.standard_normal((n,) if k is None else (n, k)) * b_scale).astype(np.float32)
        what = f"n={n}, b {list(b.shape)} x {b_scale:.3g}, a's largest entry {largest:.3g}"
        yield what, a, b
