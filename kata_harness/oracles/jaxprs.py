"""Phase 2's oracles: the MLP in float64 NumPy, the input and output avals ``jax.eval_shape``
gives a program, the tensor types of a lowered @main, its attributes and its module's, and the
dtype ``x + y`` gets in its jaxpr for every pair of kinds.

Each function takes the program or its inputs, never the kata's answer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from xla_inspect.jaxpr import out_avals


def np_mlp(params, x):
    """relu(x w1 + b1) w2 + b2 in float64 NumPy."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    hidden = np.maximum(np.asarray(x, np.float64) @ p["w1"] + p["b1"], 0.0)
    return hidden @ p["w2"] + p["b2"]


def expected_avals(fn, args):
    """([(shape, dtype)] of the arguments' leaves as JAX takes them (a Python scalar as an int32
    or float32 scalar), the same of fn's outputs, both by eval_shape)."""

    def describe(leaves):
        return [(tuple(v.shape), str(v.dtype)) for v in leaves]

    taken = jax.eval_shape(lambda *a: a, *args)
    return describe(jax.tree.leaves(taken)), describe(jax.tree.leaves(jax.eval_shape(fn, *args)))


MLIR_ELEMENT_TYPES = {
    "bool": "i1",
    "uint8": "ui8",
    "uint16": "ui16",
    "uint32": "ui32",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "bfloat16": "bf16",
    "float16": "f16",
    "float32": "f32",
}


def mlir_tensor_type(shape: tuple[int, ...], dtype: str) -> str:
    """How StableHLO writes an argument's type: tensor<2x3xbf16>, tensor<i32> (MLIR's builtin
    tensor type, its element types as the StableHLO spec names them)."""
    return f"tensor<{''.join(f'{d}x' for d in shape)}{MLIR_ELEMENT_TYPES[dtype]}>"


def main_signature(fn, args, reads: Sequence[int]) -> tuple[list[str], list[str]]:
    """The tensor types @main of jax.jit(fn) lowered for `args` takes and returns: those of the
    arguments at `reads` as JAX takes them (a Python int an i32, a float an f32, a bool an i1,
    by eval_shape), then those of fn's outputs (by eval_shape)."""
    taken = jax.eval_shape(lambda *a: a, *args)
    outputs = jax.tree.leaves(jax.eval_shape(fn, *args))
    return (
        [mlir_tensor_type(tuple(taken[k].shape), str(taken[k].dtype)) for k in reads],
        [mlir_tensor_type(tuple(v.shape), str(v.dtype)) for v in outputs],
    )


def jit_module(fn, args):
    """The StableHLO module jax.jit(fn) lowers for `args`: the lowered stage's MLIR module (the
    compiler's own object, not any text). Lowered once per case; :func:`module_attributes` and
    :func:`main_attributes` read it."""
    module = jax.jit(fn).trace(*args).lower().compiler_ir("stablehlo")
    assert module is not None, "this jax gives no StableHLO module for a lowered stage"
    return module


def _named(attributes) -> dict[str, str]:
    return {str(name): str(attributes[name]) for name in attributes}


def module_attributes(module) -> dict[str, str]:
    """The attributes of a module :func:`jit_module` gave (name -> printed value)."""
    return _named(module.operation.attributes)


def function_attributes(attributes) -> dict[str, str]:
    """A func.func's attributes (name -> printed value), leaving out `arg_attrs` and `res_attrs`
    when they hold only empty dictionaries: the printer writes nothing for those, so a function
    parsed from text has none."""
    named = _named(attributes)
    for name in ("arg_attrs", "res_attrs"):
        if re.fullmatch(r"\[(\{\}(, \{\})*)?\]", named.get(name, "")):
            del named[name]
    return named


def main_attributes(module) -> dict[str, str]:
    """The attributes of @main in a module :func:`jit_module` gave (function_attributes: its
    type, visibility, and its arguments' and results' attributes, such as what a donated argument
    would add)."""
    for op in module.body.operations:
        named = function_attributes(op.operation.attributes)
        if op.operation.name == "func.func" and named.get("sym_name") == '"main"':
            return named
    raise AssertionError("jax.jit's lowered module has no func.func @main")


def promotions(kinds: Sequence[str], value_of: Callable) -> dict[tuple[str, str], str]:
    """The dtype of x + y in its jaxpr, for every pair of kinds (``value_of(kind)`` makes a
    value of that kind; traced here)."""
    return {
        (a, b): out_avals(jax.make_jaxpr(jnp.add)(value_of(a), value_of(b)))[0].dtype
        for a, b in itertools.product(kinds, kinds)
    }


def describe_array(array) -> tuple[str, tuple[int, ...], bytes]:
    """An array's dtype name, shape and bytes (a NumPy array, or a jax Array read back)."""
    value = np.asarray(array)
    return str(value.dtype), tuple(value.shape), value.tobytes()
