"""Red-team wrong answers for phase 3, written from the contract only.

Round 3: predict_entry_root(program, args), one case per call. Every answer below is right on
the README's listed ROOT_CASES (or nearly all of them) and wrong on a case the contract allows;
each `why` names such a case, checked by compiling it outside the answer.
"""

from __future__ import annotations

import jax

from kata_harness.decoys import wrong

_RT3_DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt3_name(dtype) -> str:
    return _RT3_DTYPES[str(jax.numpy.dtype(dtype))]


def _rt3_shape(dtype: str, dims, braces_on_scalar: bool = False) -> str:
    dims = tuple(int(d) for d in dims)
    body = f"{dtype}[{','.join(str(d) for d in dims)}]"
    if not dims and not braces_on_scalar:
        return body
    return body + "{" + ",".join(str(i) for i in reversed(range(len(dims)))) + "}"


def _rt3_root(program: str, args, **bug) -> tuple[str, str]:
    """The ROOT as a learner derives it from the README's rules, with one rule changed by `bug`."""
    x = args[0]
    dt = _rt3_name(x.dtype)
    dims = tuple(x.shape)
    scalar_braces = bug.get("scalar_braces", False)

    def shape(d, ds):
        return _rt3_shape(d, ds, scalar_braces)

    if program in ("x * 2 + 1", "x + 1"):
        if bug.get("half_convert") and dt in ("bf16", "f16"):
            return ("convert", shape(dt, dims))
        return ("fusion", shape(dt, dims))
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        out = dt if (bug.get("keep_int") or dt != "s32") else "f32"
        if bug.get("half_convert") and dt in ("bf16", "f16"):
            return ("convert", shape(out, dims))
        return ("fusion", shape(out, dims))
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bf16" and not bug.get("cast_always_fuses"):
            return ("copy", shape("bf16", dims))
        return ("fusion", shape("bf16", dims))
    if program == "x.sum(axis=1)":
        out = "f32" if (bug.get("reduce_in_f32") and dt in ("bf16", "f16")) else dt
        return ("fusion", shape(out, dims[:1] + dims[2:]))
    if program == "x.max()":
        return ("fusion", shape(dt, ()))
    if program == "x.T":
        if len(dims) == 1 and not bug.get("vector_transpose_fuses"):
            return ("copy", shape(dt, dims))
        if bug.get("swap_last_two") and len(dims) == 3:
            return ("fusion", shape(dt, (dims[0], dims[2], dims[1])))
        return ("fusion", shape(dt, dims[::-1]))
    if program == "x itself":
        return ("copy", shape(dt, dims))
    if program == "x.reshape(2, -1, x.shape[-1])":
        total = 1
        for d in dims:
            total *= d
        if bug.get("middle_from_first") and len(dims) == 3:
            middle = dims[0] // 2
        else:
            middle = total // (2 * dims[-1])
        new = (2, middle, dims[-1])
        if middle == 1 and not bug.get("reshape_always_copy"):
            return ("fusion", shape(dt, new))
        return ("copy", shape(dt, new))
    if program == "(x * 2, x + 1)":
        return ("tuple", f"({shape(dt, dims)}, {shape(dt, dims)})")
    if program == "(x, x.sum())":
        return ("tuple", f"({shape(dt, dims)}, {shape(dt, ())})")
    if program == "(v, x)":
        v = args[1]
        first, second = (x, v) if bug.get("name_order") else (v, x)
        return (
            "tuple",
            f"({shape(_rt3_name(first.dtype), first.shape)}, "
            f"{shape(_rt3_name(second.dtype), second.shape)})",
        )
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="'a reshape of one (a free bitcast) is a copy' applied to every reshape; wrong on "
    "x.reshape(2, -1, x.shape[-1]) with x f32[2,3]: the result f32[2,1,3] has a size-1 middle "
    "dimension and XLA's ROOT is ('fusion', 'f32[2,1,3]{2,1,0}'), not a copy",
)
def rt3_reshape_always_copy(program, args):
    return _rt3_root(program, args, reshape_always_copy=True)


@wrong(
    "predict_entry_root",
    why="result dtype taken from the input ('jnp's dtype' ignored for transcendentals); wrong on "
    "jnp.sin(x) / jnp.tanh(x) with x s32[4,4]: jnp promotes to float32, ROOT "
    "('fusion', 'f32[4,4]{1,0}'), not s32",
)
def rt3_sin_keeps_int(program, args):
    return _rt3_root(program, args, keep_int=True)


@wrong(
    "predict_entry_root",
    why="every astype is a convert, so a fusion; wrong on x.astype(jnp.bfloat16) with x "
    "bf16[2,3]: the cast is a no-op and the result is the input, ROOT ('copy', 'bf16[2,3]{1,0}')",
)
def rt3_cast_always_fuses(program, args):
    return _rt3_root(program, args, cast_always_fuses=True)


@wrong(
    "predict_entry_root",
    why="x.T treated as a transpose at every rank; wrong on x.T of a vector x f32[5]: .T of a "
    "vector is the vector, ROOT ('copy', 'f32[5]{0}'), not ('fusion', ...)",
)
def rt3_vector_transpose_fuses(program, args):
    return _rt3_root(program, args, vector_transpose_fuses=True)


@wrong(
    "predict_entry_root",
    why="x.T read as swapping the last two axes (like .mT); wrong on x.T with x f32[2,3,4]: "
    "jnp's .T reverses all axes, ROOT ('fusion', 'f32[4,3,2]{2,1,0}'), not f32[2,4,3]",
)
def rt3_T_swaps_last_two(program, args):
    return _rt3_root(program, args, swap_last_two=True)


@wrong(
    "predict_entry_root",
    why="one shape format for every rank: a scalar printed with empty braces 'f32[]{}'; wrong on "
    "x.max() with x f32[8,4] (ROOT ('fusion', 'f32[]')) and on any rank-0 x, e.g. x + 1 "
    "with x f32[]",
)
def rt3_scalar_braces(program, args):
    return _rt3_root(program, args, scalar_braces=True)


@wrong(
    "predict_entry_root",
    why="(v, x) read as the order of the arguments; the function is `lambda x, v: (v, x)`, so "
    "the first result is args[1]; wrong on x f32[2,3], v f32[5]: ROOT "
    "('tuple', '(f32[5]{0}, f32[2,3]{1,0})')",
)
def rt3_pair_in_argument_order(program, args):
    return _rt3_root(program, args, name_order=True)


@wrong(
    "predict_entry_root",
    why="XLA:CPU has no bf16/f16 arithmetic, so the learner expects the float normalization's "
    "convert back to the narrow type to be the ROOT outside the fusion; wrong on x + 1 with x "
    "bf16[2,3]: the convert is fused, ROOT ('fusion', 'bf16[2,3]{1,0}')",
)
def rt3_half_precision_convert_root(program, args):
    return _rt3_root(program, args, half_convert=True)


@wrong(
    "predict_entry_root",
    why="sum of a half-precision array accumulates and returns float32; wrong on x.sum(axis=1) "
    "with x bf16[4,4]: jnp's result dtype is bfloat16, ROOT ('fusion', 'bf16[4]{0}')",
)
def rt3_half_sum_in_f32(program, args):
    return _rt3_root(program, args, reduce_in_f32=True)


@wrong(
    "predict_entry_root",
    why="the reshape's middle dimension taken as x.shape[0] // 2 (right for every matrix); "
    "wrong on x.reshape(2, -1, x.shape[-1]) with x f32[4,2,2]: the middle is 4*2/2 = 4, ROOT "
    "('copy', 'f32[2,4,2]{2,1,0}'), not f32[2,2,2]",
)
def rt3_reshape_middle_from_first(program, args):
    return _rt3_root(program, args, middle_from_first=True)
