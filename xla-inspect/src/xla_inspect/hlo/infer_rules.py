"""Shape inference rules, one function per opcode family (elementwise, dot, concatenate,
pad, reduce, windows, gather, convolution, fft): what XLA's ShapeInference gives, as text.
"""

from __future__ import annotations

import re

from xla_inspect.hlo.model import Shape


class CannotInfer(ValueError):
    """The shape of this instruction is not inferred here: it must be written."""


# opcodes whose result is the operand's shape (abs, real and imag take complex apart)
SAME_AS_OPERAND = frozenset(
    """abs acos acosh asin asinh atanh cbrt ceil copy cosh cosine count-leading-zeros
    erf exponential exponential-minus-one floor imag log log-plus-one logistic negate not
    opt-barrier popcnt real reverse round-nearest-afz round-nearest-even rsqrt sign sine sinh
    sqrt tan tanh""".split()
)


_COMPONENT_TYPE = {"c64": "f32", "c128": "f64"}


_COMPLEX_OF = {"f32": "c64", "f64": "c128"}


ELEMENTWISE_BINARY = frozenset(
    """add and atan2 complex divide maximum minimum multiply mulhi or power remainder
    shift-left shift-right-arithmetic shift-right-logical subtract xor compare""".split()
)


_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")


_PAD_DIM = re.compile(r"(-?[0-9]+)_(-?[0-9]+)(?:_(-?[0-9]+))?")


def array(shape: str) -> tuple[str, list[str]]:
    """The element type and dimension texts (`4`, `<=4`, `?`) of an array shape."""
    match = _ARRAY.match(shape)
    if match is None or shape.startswith("("):
        raise CannotInfer(f"an array operand, not {shape}")
    dims = match.group(2)
    return match.group(1), dims.split(",") if dims else []


def shape_text(dtype: str, dims: list[str]) -> str:
    return f"{dtype}[{','.join(dims)}]"


def retype(shape: str, dtype: str) -> str:
    """`shape` (an array shape, its layout kept) with element type `dtype`."""
    return dtype + shape[shape.index("[") :]


def _size(dim: str) -> int:
    if dim == "?":
        raise CannotInfer("static or bounded dimensions, not '?'")
    return int(dim.removeprefix("<="))


def ints(value: str | None, what: str) -> list[int]:
    if value is None:
        raise CannotInfer(f"the attribute {what}=")
    return [int(v) for v in re.findall(r"-?[0-9]+", value)]


def unary(opcode: str, operand: str) -> str:
    dtype, dims = array(operand)
    if opcode in ("abs", "real", "imag") and dtype in _COMPONENT_TYPE:
        return retype(operand, _COMPONENT_TYPE[dtype])
    return operand


def binary(opcode: str, lhs: str, rhs: str) -> str:
    left, left_dims = array(lhs)
    right, right_dims = array(rhs)
    if left != right:
        raise CannotInfer(f"operands of one element type, not {lhs} and {rhs}")
    # a scalar goes with any shape; dimensions of size 1 stretch to the other operand's size
    if [_size(d) for d in left_dims] == [_size(d) for d in right_dims]:
        pass
    elif not right_dims or not left_dims:
        lhs = shape_text(left, left_dims or right_dims)
    elif len(left_dims) == len(right_dims) and all(
        "1" in (a, b) or _size(a) == _size(b) for a, b in zip(left_dims, right_dims, strict=True)
    ):
        lhs = shape_text(
            left, [b if a == "1" else a for a, b in zip(left_dims, right_dims, strict=True)]
        )
    else:
        raise CannotInfer(f"operands of one shape, not {lhs} and {rhs}")
    if opcode == "compare":
        return retype(lhs, "pred")
    if opcode == "complex":
        if left not in _COMPLEX_OF:
            raise CannotInfer(f"f32 or f64 operands, not {left}")
        return retype(lhs, _COMPLEX_OF[left])
    return lhs


def ternary(opcode: str, operands: list[str]) -> str:
    """select(pred, on_true, on_false) and clamp(min, operand, max): the shape of the middle
    operand, when the others match it (select's pred and clamp's bounds may be scalars); of
    select with an array predicate, the predicate's layout."""
    (first, first_dims), (dtype, dims), (last, last_dims) = map(array, operands)
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
        return retype(operands[0], dtype)
    return operands[1]


def transpose(operand: str, attributes: dict[str, str]) -> str:
    dtype, dims = array(operand)
    order = ints(attributes.get("dimensions"), "dimensions")
    if sorted(order) != list(range(len(dims))):
        raise CannotInfer(f"dimensions= a permutation of the operand's {len(dims)} dimensions")
    return shape_text(dtype, [dims[d] for d in order])


def dot(lhs: str, rhs: str, attributes: dict[str, str]) -> str:
    left, left_dims = array(lhs)
    right, right_dims = array(rhs)
    if left != right:
        raise CannotInfer(f"operands of one element type, not {left} and {right}")
    lhs_batch = ints(attributes.get("lhs_batch_dims", "{}"), "lhs_batch_dims")
    rhs_batch = ints(attributes.get("rhs_batch_dims", "{}"), "rhs_batch_dims")
    lhs_contracting = ints(attributes.get("lhs_contracting_dims", "{}"), "lhs_contracting_dims")
    rhs_contracting = ints(attributes.get("rhs_contracting_dims", "{}"), "rhs_contracting_dims")
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
    return shape_text(left, result)


def concatenate(operands: list[str], attributes: dict[str, str]) -> str:
    (axis,) = ints(attributes.get("dimensions"), "dimensions") or [-1]
    arrays = [array(o) for o in operands]
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
    return shape_text(dtype, [*dims[:axis], str(total), *dims[axis + 1 :]])


def pad(operand: str, attributes: dict[str, str]) -> str:
    dtype, dims = array(operand)
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
    return shape_text(dtype, result)


def _reduce_types(root: str, count: int) -> list[str]:
    """The element types of the scalars a reducer computation returns for `count` inputs."""
    shapes = [e.text for e in Shape(root).elements] if count > 1 else [root]
    if len(shapes) != count:
        raise CannotInfer(f"a reducer returning {count} values, not {root}")
    return [array(s)[0] for s in shapes]


def reduce(operands: list[str], attributes: dict[str, str], root: str) -> str:
    count = len(operands) // 2
    if count == 0 or len(operands) % 2:
        raise CannotInfer("inputs and as many initial values")
    removed = set(ints(attributes.get("dimensions"), "dimensions"))
    _, dims = array(operands[0])
    kept = [d for i, d in enumerate(dims) if i not in removed]
    results = [shape_text(t, kept) for t in _reduce_types(root, count)]
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


def reduce_window(operands: list[str], attributes: dict[str, str], root: str) -> str:
    count = len(operands) // 2
    if count == 0 or len(operands) % 2:
        raise CannotInfer("inputs and as many initial values")
    _, dims = array(operands[0])
    window = _window(attributes.get("window", "{}") if dims else "{}", len(dims))
    result = [str(_windowed(_size(dim), window, i, 1)) for i, dim in enumerate(dims)]
    results = [shape_text(t, result) for t in _reduce_types(root, count)]
    return results[0] if count == 1 else "(" + ", ".join(results) + ")"


def gather(operand: str, indices: str, attributes: dict[str, str]) -> str:
    dtype, _ = array(operand)
    _, index_dims = array(indices)
    offset = ints(attributes.get("offset_dims", "{}"), "offset_dims")
    dropped = set(ints(attributes.get("collapsed_slice_dims", "{}"), "collapsed_slice_dims"))
    dropped |= set(ints(attributes.get("operand_batching_dims", "{}"), "operand_batching_dims"))
    sizes = ints(attributes.get("slice_sizes"), "slice_sizes")
    (vector,) = ints(attributes.get("index_vector_dim", "{}"), "index_vector_dim")[:1] or [
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
    return shape_text(dtype, result)


def convolution(lhs: str, rhs: str, attributes: dict[str, str]) -> str:
    dtype, lhs_dims = array(lhs)
    _, rhs_dims = array(rhs)
    labels = attributes.get("dim_labels")
    parts = re.fullmatch(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)", labels or "")
    if parts is None:
        raise CannotInfer("dim_labels= as 'b01f_01io->b01f'")
    lhs_labels, rhs_labels, out_labels = parts.groups()
    if len(lhs_labels) != len(lhs_dims) or len(rhs_labels) != len(rhs_dims):
        raise CannotInfer("dim_labels= with one label per operand dimension")
    spatial = len(lhs_labels) - 2
    window = _window(attributes.get("window", "{}") if spatial else "{}", spatial)
    groups = ints(attributes.get("batch_group_count", "1"), "batch_group_count")[0]
    sizes: dict[str, int] = {
        "b": _size(lhs_dims[lhs_labels.index("b")]) // max(groups, 1),
        "f": _size(rhs_dims[rhs_labels.index("o")]),
    }
    for i in range(spatial):
        n = _size(lhs_dims[lhs_labels.index(str(i))])
        kernel = _size(rhs_dims[rhs_labels.index(str(i))])
        sizes[str(i)] = _windowed(n, window, i, kernel)
    return shape_text(dtype, [str(sizes[label]) for label in out_labels])


def fft(operand: str, attributes: dict[str, str]) -> str:
    dtype, dims = array(operand)
    kind = attributes.get("fft_type", "FFT")
    lengths = ints(attributes.get("fft_length"), "fft_length")
    if kind in ("FFT", "IFFT"):
        return operand
    if not lengths or len(lengths) > len(dims):
        raise CannotInfer("fft_length= with one length per transformed dimension")
    if kind == "RFFT" and dtype in _COMPLEX_OF:
        return shape_text(_COMPLEX_OF[dtype], [*dims[:-1], str(lengths[-1] // 2 + 1)])
    if kind == "IRFFT" and dtype in _COMPONENT_TYPE:
        return shape_text(_COMPONENT_TYPE[dtype], [*dims[: -len(lengths)], *map(str, lengths)])
    raise CannotInfer(f"fft_type= FFT, IFFT, RFFT or IRFFT for a {dtype} operand")
