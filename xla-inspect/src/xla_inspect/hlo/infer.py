"""`infer_shape`: the result shape XLA infers for an instruction whose shape is left out
(the short form), by the rules in infer_rules.
"""

from __future__ import annotations

from collections.abc import Callable

from xla_inspect.hlo.infer_rules import (
    ELEMENTWISE_BINARY,
    SAME_AS_OPERAND,
    CannotInfer,
    array,
    binary,
    concatenate,
    convolution,
    dot,
    fft,
    gather,
    ints,
    pad,
    reduce,
    reduce_window,
    retype,
    shape_text,
    ternary,
    transpose,
    unary,
)
from xla_inspect.hlo.lexical import split_attributes
from xla_inspect.hlo.model import Shape


def _element(operand: str, attributes: dict[str, str]) -> str:
    (index,) = ints(attributes.get("index"), "index")[:1] or [-1]
    elements = Shape(operand).elements
    if not 0 <= index < len(elements):
        raise CannotInfer(f"index= an element of the operand's shape {operand}")
    return elements[index].text


def _called(attributes: dict[str, str], *keys: str) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return value.strip("{} ").split(",")[0].strip().removeprefix("%")
    return None


def infer_shape(
    opcode: str,
    operands: list[str],
    attributes_text: str,
    root_shape: Callable[[str], str | None],
) -> str:
    """The shape XLA's parser infers for `opcode` with operands of shapes `operands`, the
    attribute list `attributes_text` and `root_shape(name)`, the root shape of the computation
    `name` read so far (None when none is). Raises CannotInfer when it is not inferred here."""
    attributes = dict(split_attributes(attributes_text)) if attributes_text else {}
    count = len(operands)
    if opcode in SAME_AS_OPERAND and count == 1:
        return unary(opcode, operands[0])
    if opcode == "is-finite" and count == 1:
        return array(operands[0]) and retype(operands[0], "pred")
    if opcode in ELEMENTWISE_BINARY and count == 2:
        return binary(opcode, operands[0], operands[1])
    if opcode in ("select", "clamp") and count == 3:
        return ternary(opcode, operands)
    if opcode == "tuple":
        return "(" + ", ".join(operands) + ")"
    if opcode == "get-tuple-element" and count == 1:
        return _element(operands[0], attributes)
    if opcode == "after-all":
        return "token[]"
    if opcode == "while" and count == 1:
        return operands[0]
    if opcode == "sort" and count:
        return operands[0] if count == 1 else "(" + ", ".join(operands) + ")"
    if opcode == "topk" and count == 1:
        dtype, dims = array(operands[0])
        (k,) = ints(attributes.get("k"), "k")[:1] or [-1]
        if not dims or k < 0:
            raise CannotInfer("k= and an operand of rank 1 or more")
        kept = [*dims[:-1], str(k)]
        return f"({shape_text(dtype, kept)}, {shape_text('s32', kept)})"
    if opcode == "fft" and count == 1:
        return fft(operands[0], attributes)
    if opcode == "scatter" and count >= 3 and count % 2:
        inputs = operands[: count // 2]
        return inputs[0] if len(inputs) == 1 else "(" + ", ".join(inputs) + ")"
    if opcode == "gather" and count == 2:
        return gather(operands[0], operands[1], attributes)
    if opcode == "convolution" and count == 2:
        return convolution(operands[0], operands[1], attributes)
    if opcode == "cholesky" and count == 1:
        return array(operands[0]) and operands[0]
    if opcode == "triangular-solve" and count == 2:
        return array(operands[1]) and operands[1]
    if opcode == "select-and-scatter" and count == 3:
        return array(operands[0]) and operands[0]
    if opcode == "batch-norm-inference" and count == 5:
        return array(operands[0]) and operands[0]
    if opcode in ("batch-norm-training", "batch-norm-grad") and count in (3, 5):
        dtype, dims = array(operands[0])
        (feature,) = ints(attributes.get("feature_index"), "feature_index")[:1] or [-1]
        if not 0 <= feature < len(dims):
            raise CannotInfer("feature_index= a dimension of the operand")
        scale = shape_text(dtype, [dims[feature]])
        return f"({shape_text(dtype, dims)}, {scale}, {scale})"
    if opcode == "broadcast" and count == 1:
        # XLA's inference for a broadcast without a shape reads dimensions= as the sizes of
        # new major dimensions ahead of the operand's (the older form of broadcast)
        dtype, dims = array(operands[0])
        # (a scalar operand may leave dimensions= out: none)
        sizes = ints(attributes.get("dimensions", None if dims else "{}"), "dimensions")
        return shape_text(dtype, [*map(str, sizes), *dims])
    if opcode == "transpose" and count == 1:
        return transpose(operands[0], attributes)
    if opcode == "dot" and count == 2:
        return dot(operands[0], operands[1], attributes)
    if opcode == "concatenate" and count:
        return concatenate(operands, attributes)
    if opcode == "pad" and count == 2:
        return pad(operands[0], attributes)
    called = {
        "call": ("to_apply",),
        "conditional": ("branch_computations", "true_computation"),
        "reduce": ("to_apply",),
        "reduce-window": ("to_apply",),
        "map": ("to_apply",),
    }.get(opcode)
    if called is not None:
        name = _called(attributes, *called)
        root = root_shape(name) if name is not None else None
        if root is None:
            raise CannotInfer(f"{' or '.join(called)}= naming a computation defined before")
        if opcode == "reduce":
            return reduce(operands, attributes, root)
        if opcode == "reduce-window":
            return reduce_window(operands, attributes, root)
        if opcode == "map":
            return shape_text(array(root)[0], array(operands[0])[1]) if operands else root
        return root
    raise CannotInfer(f"no shape inference here for '{opcode}'")
