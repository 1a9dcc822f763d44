"""The shape XLA's parser gives an instruction written without one (`ROOT y = add(x, x)`).

XLA's parser infers the result shape from the operands' shapes, the attributes and the called
computations for most opcodes (its ShapeInference), and rejects the line where it cannot. This
module infers it for the opcodes whose rule it knows; for any other opcode, or operands the rule
does not accept, `infer_shape` raises CannotInfer and the reader asks for the shape.

Shapes are texts as the reader keeps them. A result that is an operand's shape unchanged keeps
that text (its layout too, as XLA's result does); any other result is written without a layout.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xla_inspect._lexing import split_attributes
from xla_inspect.model import Shape


class CannotInfer(ValueError):
    """The shape of this instruction is not inferred here: it must be written."""


# opcodes whose result is the operand's shape (abs, real and imag take complex apart)
_SAME_AS_OPERAND = frozenset(
    """abs acos acosh asin asinh atanh cbrt ceil copy cosh cosine count-leading-zeros
    erf exponential exponential-minus-one floor imag log log-plus-one logistic negate not
    opt-barrier popcnt real reverse round-nearest-afz round-nearest-even rsqrt sign sine sinh
    sqrt tan tanh""".split()
)
_COMPONENT_TYPE = {"c64": "f32", "c128": "f64"}
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
_ELEMENTWISE_BINARY = frozenset(
    """add and atan2 complex divide maximum minimum multiply mulhi or power remainder
    shift-left shift-right-arithmetic shift-right-logical subtract xor compare""".split()
)
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_PAD_DIM = re.compile(r"(-?[0-9]+)_(-?[0-9]+)(?:_(-?[0-9]+))?")


def _array(shape: str) -> tuple[str, list[str]]:
    """The element type and dimension texts (`4`, `<=4`, `?`) of an array shape."""
    match = _ARRAY.match(shape)
    if match is None or shape.startswith("("):
        raise CannotInfer(f"an array operand, not {shape}")
    dims = match.group(2)
    return match.group(1), dims.split(",") if dims else []


def _text(dtype: str, dims: list[str]) -> str:
    return f"{dtype}[{','.join(dims)}]"


def _retype(shape: str, dtype: str) -> str:
    """`shape` (an array shape, its layout kept) with element type `dtype`."""
    return dtype + shape[shape.index("[") :]


def _size(dim: str) -> int:
    if dim == "?":
        raise CannotInfer("static or bounded dimensions, not '?'")
    return int(dim.removeprefix("<="))


def _ints(value: str | None, what: str) -> list[int]:
    if value is None:
        raise CannotInfer(f"the attribute {what}=")
    return [int(v) for v in re.findall(r"-?[0-9]+", value)]


def _unary(opcode: str, operand: str) -> str:
    dtype, dims = _array(operand)
    if opcode in ("abs", "real", "imag") and dtype in _COMPONENT_TYPE:
        return _retype(operand, _COMPONENT_TYPE[dtype])
    return operand


def _binary(opcode: str, lhs: str, rhs: str) -> str:
    left, left_dims = _array(lhs)
    right, right_dims = _array(rhs)
    if left != right:
        raise CannotInfer(f"operands of one element type, not {lhs} and {rhs}")
    # a scalar goes with any shape; dimensions of size 1 stretch to the other operand's size
    if [_size(d) for d in left_dims] == [_size(d) for d in right_dims]:
        pass
    elif not right_dims or not left_dims:
        lhs = _text(left, left_dims or right_dims)
    elif len(left_dims) == len(right_dims) and all(
        "1" in (a, b) or _size(a) == _size(b) for a, b in zip(left_dims, right_dims, strict=True)
    ):
        lhs = _text(
            left, [b if a == "1" else a for a, b in zip(left_dims, right_dims, strict=True)]
        )
    else:
        raise CannotInfer(f"operands of one shape, not {lhs} and {rhs}")
    if opcode == "compare":
        return _retype(lhs, "pred")
    if opcode == "complex":
        if left not in _COMPLEX_OF:
            raise CannotInfer(f"f32 or f64 operands, not {left}")
        return _retype(lhs, _COMPLEX_OF[left])
    return lhs


def _ternary(opcode: str, operands: list[str]) -> str:
    """select(pred, on_true, on_false) and clamp(min, operand, max): the shape of the middle
    operand, when the others match it (select's pred and clamp's bounds may be scalars); of
    select with an array predicate, the predicate's layout."""
    (first, first_dims), (dtype, dims), (last, last_dims) = map(_array, operands)
    sizes = [_size(d) for d in dims]

    def fits(other: list[str], scalar_ok: bool) -> bool:
        return (scalar_ok and not other) or [_size(d) for d in other] == sizes

    if opcode == "select":
        ok = first == "pred" and fits(first_dims, True) and last == dtype and fits(last_dims, False)
    else:
        ok = first == last == dtype and fits(first_dims, True) and fits(last_dims, True)
    if not ok:
        raise CannotInfer(f"operands that fit {opcode}, not {', '.join(operands)}")
    if opcode == "select" and first_dims:  # XLA keeps an array predicate's layout
        return _retype(operands[0], dtype)
    return operands[1]


def _transpose(operand: str, attributes: dict[str, str]) -> str:
    dtype, dims = _array(operand)
    order = _ints(attributes.get("dimensions"), "dimensions")
    if sorted(order) != list(range(len(dims))):
        raise CannotInfer(f"dimensions= a permutation of the operand's {len(dims)} dimensions")
    return _text(dtype, [dims[d] for d in order])


def _dot(lhs: str, rhs: str, attributes: dict[str, str]) -> str:
    left, left_dims = _array(lhs)
    right, right_dims = _array(rhs)
    if left != right:
        raise CannotInfer(f"operands of one element type, not {left} and {right}")
    lhs_batch = _ints(attributes.get("lhs_batch_dims", "{}"), "lhs_batch_dims")
    rhs_batch = _ints(attributes.get("rhs_batch_dims", "{}"), "rhs_batch_dims")
    lhs_contracting = _ints(attributes.get("lhs_contracting_dims", "{}"), "lhs_contracting_dims")
    rhs_contracting = _ints(attributes.get("rhs_contracting_dims", "{}"), "rhs_contracting_dims")
    for side, dims in (
        (left_dims, lhs_batch + lhs_contracting),
        (right_dims, rhs_batch + rhs_contracting),
    ):
        if any(not 0 <= d < len(side) for d in dims):
            raise CannotInfer("batch and contracting dimensions of the operands")
    if [_size(left_dims[d]) for d in lhs_batch] != [_size(right_dims[d]) for d in rhs_batch] or [
        _size(left_dims[d]) for d in lhs_contracting
    ] != [_size(right_dims[d]) for d in rhs_contracting]:
        raise CannotInfer("batch and contracting dimensions of equal sizes")
    result = [left_dims[d] for d in lhs_batch]
    result += [s for i, s in enumerate(left_dims) if i not in lhs_batch + lhs_contracting]
    result += [s for i, s in enumerate(right_dims) if i not in rhs_batch + rhs_contracting]
    return _text(left, result)


def _concatenate(operands: list[str], attributes: dict[str, str]) -> str:
    (axis,) = _ints(attributes.get("dimensions"), "dimensions") or [-1]
    arrays = [_array(o) for o in operands]
    dtype, dims = arrays[0]
    if not 0 <= axis < len(dims) or any(
        t != dtype
        or len(d) != len(dims)
        or any(
            _size(a) != _size(b) for i, (a, b) in enumerate(zip(d, dims, strict=True)) if i != axis
        )
        for t, d in arrays
    ):
        raise CannotInfer("operands that differ only in the concatenated dimension")
    total = sum(_size(d[axis]) for _, d in arrays)
    return _text(dtype, [*dims[:axis], str(total), *dims[axis + 1 :]])


def _pad(operand: str, attributes: dict[str, str]) -> str:
    dtype, dims = _array(operand)
    padding = attributes.get("padding")
    parts = padding.split("x") if padding else []
    if len(parts) != len(dims):
        raise CannotInfer("padding= with one 'low_high' or 'low_high_interior' per dimension")
    result = []
    for dim, part in zip(dims, parts, strict=True):
        match = _PAD_DIM.fullmatch(part.strip())
        if match is None:
            raise CannotInfer(f"padding= as 'low_high_interior', not '{part}'")
        low, high, interior = (int(g) if g else 0 for g in match.groups())
        size = _size(dim)
        result.append(str(low + high + size + max(size - 1, 0) * interior))
    return _text(dtype, result)


def _reduce_types(root: str, count: int) -> list[str]:
    """The element types of the scalars a reducer computation returns for `count` inputs."""
    shapes = [e.text for e in Shape(root).elements] if count > 1 else [root]
    if len(shapes) != count:
        raise CannotInfer(f"a reducer returning {count} values, not {root}")
    return [_array(s)[0] for s in shapes]


def _reduce(operands: list[str], attributes: dict[str, str], root: str) -> str:
    count = len(operands) // 2
    if count == 0 or len(operands) % 2:
        raise CannotInfer("inputs and as many initial values")
    removed = set(_ints(attributes.get("dimensions"), "dimensions"))
    _, dims = _array(operands[0])
    kept = [d for i, d in enumerate(dims) if i not in removed]
    results = [_text(t, kept) for t in _reduce_types(root, count)]
    return results[0] if count == 1 else "(" + ", ".join(results) + ")"


def _window(text: str | None, rank: int) -> dict[str, list[tuple[int, ...]]]:
    """A `window={size=3x3 stride=2x2 pad=0_1x0_1 ...}` attribute, per field and dimension."""
    if text is None:
        raise CannotInfer("the attribute window=")
    fields: dict[str, list[tuple[int, ...]]] = {}
    for key, value in re.findall(r"([a-z_]+)=([0-9x_\-]+)", text):
        fields[key] = [tuple(int(n) for n in re.findall(r"-?[0-9]+", p)) for p in value.split("x")]
    for values in fields.values():
        if len(values) != rank:
            raise CannotInfer(f"window= fields with one value per dimension ({rank})")
    return fields


def _windowed(n: int, window: dict[str, list[tuple[int, ...]]], i: int, size: int) -> int:
    """How many windows fit along dimension `i` of size `n` (`size`: the window's size there
    when window= does not give one)."""
    if "size" in window:
        size = window["size"][i][0]
    stride = window["stride"][i][0] if "stride" in window else 1
    low, high = window["pad"][i][:2] if "pad" in window else (0, 0)
    base = window["lhs_dilate"][i][0] if "lhs_dilate" in window else 1
    dilation = window["rhs_dilate"][i][0] if "rhs_dilate" in window else 1
    padded = (max(n - 1, 0) * base + 1 if n else 0) + low + high
    span = (size - 1) * dilation + 1
    return (padded - span) // stride + 1 if padded >= span else 0


def _reduce_window(operands: list[str], attributes: dict[str, str], root: str) -> str:
    count = len(operands) // 2
    if count == 0 or len(operands) % 2:
        raise CannotInfer("inputs and as many initial values")
    _, dims = _array(operands[0])
    window = _window(attributes.get("window", "{}") if dims else "{}", len(dims))
    result = [str(_windowed(_size(dim), window, i, 1)) for i, dim in enumerate(dims)]
    results = [_text(t, result) for t in _reduce_types(root, count)]
    return results[0] if count == 1 else "(" + ", ".join(results) + ")"


def _gather(operand: str, indices: str, attributes: dict[str, str]) -> str:
    dtype, _ = _array(operand)
    _, index_dims = _array(indices)
    offset = _ints(attributes.get("offset_dims", "{}"), "offset_dims")
    dropped = set(_ints(attributes.get("collapsed_slice_dims", "{}"), "collapsed_slice_dims"))
    dropped |= set(_ints(attributes.get("operand_batching_dims", "{}"), "operand_batching_dims"))
    sizes = _ints(attributes.get("slice_sizes"), "slice_sizes")
    (vector,) = _ints(attributes.get("index_vector_dim", "{}"), "index_vector_dim")[:1] or [
        len(index_dims)
    ]
    batch = [d for i, d in enumerate(index_dims) if i != vector]
    kept = [str(n) for i, n in enumerate(sizes) if i not in dropped]
    if len(kept) != len(offset):
        raise CannotInfer("offset_dims= as many as the slice dimensions kept")
    result = []
    for i in range(len(batch) + len(offset)):
        source = kept if i in offset else batch
        if not source:
            raise CannotInfer("offset_dims= within the result's rank")
        result.append(source.pop(0))
    return _text(dtype, result)


def _convolution(lhs: str, rhs: str, attributes: dict[str, str]) -> str:
    dtype, lhs_dims = _array(lhs)
    _, rhs_dims = _array(rhs)
    labels = attributes.get("dim_labels")
    parts = re.fullmatch(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)", labels or "")
    if parts is None:
        raise CannotInfer("dim_labels= as 'b01f_01io->b01f'")
    lhs_labels, rhs_labels, out_labels = parts.groups()
    if len(lhs_labels) != len(lhs_dims) or len(rhs_labels) != len(rhs_dims):
        raise CannotInfer("dim_labels= with one label per operand dimension")
    spatial = len(lhs_labels) - 2
    window = _window(attributes.get("window", "{}") if spatial else "{}", spatial)
    groups = _ints(attributes.get("batch_group_count", "1"), "batch_group_count")[0]
    sizes: dict[str, int] = {
        "b": _size(lhs_dims[lhs_labels.index("b")]) // max(groups, 1),
        "f": _size(rhs_dims[rhs_labels.index("o")]),
    }
    for i in range(spatial):
        n = _size(lhs_dims[lhs_labels.index(str(i))])
        kernel = _size(rhs_dims[rhs_labels.index(str(i))])
        sizes[str(i)] = _windowed(n, window, i, kernel)
    return _text(dtype, [str(sizes[label]) for label in out_labels])


def _fft(operand: str, attributes: dict[str, str]) -> str:
    dtype, dims = _array(operand)
    kind = attributes.get("fft_type", "FFT")
    lengths = _ints(attributes.get("fft_length"), "fft_length")
    if kind in ("FFT", "IFFT"):
        return operand
    if not lengths or len(lengths) > len(dims):
        raise CannotInfer("fft_length= with one length per transformed dimension")
    if kind == "RFFT" and dtype in _COMPLEX_OF:
        return _text(_COMPLEX_OF[dtype], [*dims[:-1], str(lengths[-1] // 2 + 1)])
    if kind == "IRFFT" and dtype in _COMPONENT_TYPE:
        return _text(_COMPONENT_TYPE[dtype], [*dims[: -len(lengths)], *map(str, lengths)])
    raise CannotInfer(f"fft_type= FFT, IFFT, RFFT or IRFFT for a {dtype} operand")


def _element(operand: str, attributes: dict[str, str]) -> str:
    (index,) = _ints(attributes.get("index"), "index")[:1] or [-1]
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
    if opcode in _SAME_AS_OPERAND and count == 1:
        return _unary(opcode, operands[0])
    if opcode == "is-finite" and count == 1:
        return _array(operands[0]) and _retype(operands[0], "pred")
    if opcode in _ELEMENTWISE_BINARY and count == 2:
        return _binary(opcode, operands[0], operands[1])
    if opcode in ("select", "clamp") and count == 3:
        return _ternary(opcode, operands)
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
        dtype, dims = _array(operands[0])
        (k,) = _ints(attributes.get("k"), "k")[:1] or [-1]
        if not dims or k < 0:
            raise CannotInfer("k= and an operand of rank 1 or more")
        return f"({_text(dtype, [*dims[:-1], str(k)])}, {_text('s32', [*dims[:-1], str(k)])})"
    if opcode == "fft" and count == 1:
        return _fft(operands[0], attributes)
    if opcode == "scatter" and count >= 3 and count % 2:
        inputs = operands[: count // 2]
        return inputs[0] if len(inputs) == 1 else "(" + ", ".join(inputs) + ")"
    if opcode == "gather" and count == 2:
        return _gather(operands[0], operands[1], attributes)
    if opcode == "convolution" and count == 2:
        return _convolution(operands[0], operands[1], attributes)
    if opcode == "cholesky" and count == 1:
        return _array(operands[0]) and operands[0]
    if opcode == "triangular-solve" and count == 2:
        return _array(operands[1]) and operands[1]
    if opcode == "select-and-scatter" and count == 3:
        return _array(operands[0]) and operands[0]
    if opcode == "batch-norm-inference" and count == 5:
        return _array(operands[0]) and operands[0]
    if opcode in ("batch-norm-training", "batch-norm-grad") and count in (3, 5):
        dtype, dims = _array(operands[0])
        (feature,) = _ints(attributes.get("feature_index"), "feature_index")[:1] or [-1]
        if not 0 <= feature < len(dims):
            raise CannotInfer("feature_index= a dimension of the operand")
        scale = _text(dtype, [dims[feature]])
        return f"({_text(dtype, dims)}, {scale}, {scale})"
    if opcode == "broadcast" and count == 1:
        # XLA's inference for a broadcast without a shape reads dimensions= as the sizes of
        # new major dimensions ahead of the operand's (the older form of broadcast)
        dtype, dims = _array(operands[0])
        # (a scalar operand may leave dimensions= out: none)
        sizes = _ints(attributes.get("dimensions", None if dims else "{}"), "dimensions")
        return _text(dtype, [*map(str, sizes), *dims])
    if opcode == "transpose" and count == 1:
        return _transpose(operands[0], attributes)
    if opcode == "dot" and count == 2:
        return _dot(operands[0], operands[1], attributes)
    if opcode == "concatenate" and count:
        return _concatenate(operands, attributes)
    if opcode == "pad" and count == 2:
        return _pad(operands[0], attributes)
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
            return _reduce(operands, attributes, root)
        if opcode == "reduce-window":
            return _reduce_window(operands, attributes, root)
        if opcode == "map":
            return _text(_array(root)[0], _array(operands[0])[1]) if operands else root
        return root
    raise CannotInfer(f"no shape inference here for '{opcode}'")
