"""Red-team wrong answers for phase 6, written from the contract only.

Round 3: only `predict_bytes_accessed(program, x)`, which now takes one case. Every answer below
gives the right number on all twelve cases of BYTES_CASES (the task's listed examples) and is
wrong on some other case the contract allows (a dtype, a shape or a cast the examples do not
show). Each `why` names such a case; all were checked against the compiled
`cost_analysis()["bytes accessed"]` (jax 0.12, XLA:CPU) in a scratch script, outside the answers.
"""

from __future__ import annotations

import math

import jax

from kata_harness.decoys import wrong

_RT6_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "int32": 4}


def _rt6_round_up(nbytes: int, align: int = 64) -> int:
    return -(-nbytes // align) * align


def _rt6_bytes(
    program: str,
    rows: int,
    cols: int,
    s: int,
    *,
    b_len: int | None = None,
    b_size: int | None = None,
    cast_read: int | None = None,
    float_scalar_out: int | None = None,
    row_pad: bool = False,
    buffer_pad: bool = False,
    slice_aligned_only: bool = False,
) -> int:
    """The right model, with switches that turn on one mistaken belief each.

    Right model (checked on every shape and dtype of the domain): a fused kernel reads each
    argument it uses once and writes its output once, each at its own dtype's width; `x + b`
    reads b once (cols elements); the f32 sums read x and write the result; `x - x.mean()` takes
    a reduction (read x, write 4 bytes) and a second kernel (read x and the mean, write x).
    """

    def arr(r: int, c: int, width: int) -> int:
        """Bytes of an r-by-c array, under the answer's belief about padding."""
        if row_pad:
            return r * _rt6_round_up(c * width)
        if buffer_pad:
            return _rt6_round_up(r * c * width)
        return r * c * width

    def vec(n: int, width: int) -> int:
        if row_pad or buffer_pad:
            return _rt6_round_up(n * width)
        return n * width

    out_s = float_scalar_out if float_scalar_out is not None else s  # x op python float
    if program == "tanh(exp(2x + 1) - 3)":
        return arr(rows, cols, s) + arr(rows, cols, out_s)
    if program == "x + y":
        return 3 * arr(rows, cols, s)
    if program == "x + b":
        return 2 * arr(rows, cols, s) + vec(b_len or cols, b_size or s)
    if program == "x.sum(axis=0)":
        return arr(rows, cols, 4) + vec(cols, 4)
    if program == "x.sum()":
        return arr(rows, cols, 4) + 4
    if program == "x.astype(bf16) * 2":
        return arr(rows, cols, cast_read or s) + arr(rows, cols, 2)
    if program == "exp(x)":
        return 2 * arr(rows, cols, s)
    if program == "x.astype(f32) * 0.5":
        return arr(rows, cols, s) + arr(rows, cols, 4)
    if program == "x.T + 1":
        return arr(rows, cols, s) + arr(cols, rows, out_s)
    if program == "x[:, : x.shape[1] // 2] * 2":
        half = cols // 2
        if slice_aligned_only and (half * s) % 64:
            read = arr(rows, cols, s)  # believes an unaligned cut makes it read whole rows
        else:
            read = arr(rows, half, s)
        return read + arr(rows, half, out_s)
    if program == "x * 2 with an unused y":
        return arr(rows, cols, s) + arr(rows, cols, out_s)
    if program == "x - x.mean()":
        return 3 * arr(rows, cols, 4) + 8
    raise KeyError(program)


def _rt6_shape(x) -> tuple[int, int]:
    rows, cols = x.shape
    return int(rows), int(cols)


@wrong(
    "predict_bytes_accessed",
    why="each element costs its dtype's width (README: float16 is one of BYTES_FLOATS): a "
    "width table copied from the examples' dtypes (float32, bfloat16, int8) falls back to 4 "
    "bytes for float16; wrong on exp(x) with x float16[64,64]: 32768 instead of 16384",
)
def float16_missing_from_width_table(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    widths = {"float32": 4, "bfloat16": 2, "int8": 1}
    return _rt6_bytes(program, rows, cols, widths.get(str(x.dtype), 4))


@wrong(
    "predict_bytes_accessed",
    why="b has one element per COLUMN of x: reading b as one element per row is right on the "
    "square example (x + b, float32[256,256]) only; wrong on x + b with x float32[64,96]: "
    "49408 instead of 49536",
)
def bias_length_from_rows(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize, b_len=rows)


@wrong(
    "predict_bytes_accessed",
    why="b is 'a vector of x's dtype': counting the bias at 4 bytes an element (as if biases "
    "were kept in float32) is right on the float32 example only; wrong on x + b with x "
    "bfloat16[128,128]: 66048 instead of 65792",
)
def bias_counted_as_float32(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize, b_size=4)


@wrong(
    "predict_bytes_accessed",
    why="every array is read at its own width (README: an int8 x cast reads 1 byte an "
    "element): reading x at 4 bytes in x.astype(bf16) * 2, as in the float32 example, is "
    "wrong on x.astype(bf16) * 2 with x int8[64,64]: 24576 instead of 12288 (and with x "
    "bfloat16, where the cast is no work: 24576 instead of 16384)",
)
def cast_reads_x_at_example_width(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize, cast_read=4)


@wrong(
    "predict_bytes_accessed",
    why="a Python float is weakly typed: 2.0 * x, x.T + 1.0 and x[...] * 2.0 keep x's dtype. "
    "Believing a Python float promotes a half-precision x to a float32 result (NumPy/Torch "
    "habit) is right on every example (all such examples are float32, the half one is exp(x)); "
    "wrong on x.T + 1 with x bfloat16[64,96]: 36864 instead of 24576",
)
def python_float_promotes_half_to_f32(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    s = x.dtype.itemsize
    promoted = 4 if str(x.dtype) in ("bfloat16", "float16") else None
    return _rt6_bytes(program, rows, cols, s, float_scalar_out=promoted)


@wrong(
    "predict_bytes_accessed",
    why="bytes accessed is elements times width, with no padding (README: 'each element costs "
    "its dtype's width'); carrying the 64-byte alignment of temp buffers over to every row "
    "of every array is right on all examples (their rows are multiples of 64 bytes) and wrong "
    "on a row that is not: exp(x) with x float32[64,100]: 57344 instead of 51200",
)
def rows_padded_to_64_bytes(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize, row_pad=True)


@wrong(
    "predict_bytes_accessed",
    why="no padding in bytes accessed: rounding every non-scalar buffer up to 64 bytes (the "
    "temp-buffer alignment of predict_chain_temp) is right on all examples and on every "
    "float32 matrix of the domain, wrong where a buffer is not a multiple of 64 bytes: "
    "x + b with x float32[64,100] (b is 400 bytes): 51648 instead of 51600",
)
def buffers_padded_to_64_bytes(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize, buffer_pad=True)


@wrong(
    "predict_bytes_accessed",
    why="'a slice reads its part' (README), whatever the cut: believing a cut that does not fall "
    "on a 64-byte cache line makes the kernel read whole rows is right on the example "
    "(float32[256,256], half a row is 512 bytes) and wrong on x[:, : x.shape[1] // 2] * 2 "
    "with x float32[64,100]: 38400 instead of 25600",
)
def slice_reads_whole_rows_unless_aligned(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize, slice_aligned_only=True)


@wrong(
    "predict_bytes_accessed",
    why="x's dtype decides the width of every read of x: a learner who sizes x by "
    "math.prod(shape) * 4 for the float32-only sums and by x.dtype.itemsize elsewhere, but "
    "treats integer x in x.astype(f32) * 0.5 as the example's int8 (1 byte), is wrong on "
    "x.astype(f32) * 0.5 with x int32[64,64]: 20480 instead of 32768",
)
def integer_x_read_as_int8(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    s = 1 if str(x.dtype).startswith("int") else x.dtype.itemsize
    _ = math.prod(x.shape)
    return _rt6_bytes(program, rows, cols, s)


@wrong(
    "predict_bytes_accessed",
    why="x - x.mean() is two kernels at every size, so x is read twice (XLA's count is a model, "
    "not a cache simulation): believing x is read once when it fits a 256 KiB cache is right "
    "on the example (float32[256,256] is exactly 256 KiB, read twice) and wrong on "
    "x - x.mean() with x float32[64,64]: 32776 instead of 49160",
)
def mean_read_once_when_x_fits_cache(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = _rt6_shape(x)
    nbytes = rows * cols * x.dtype.itemsize
    if program == "x - x.mean()" and nbytes < 256 * 1024:
        return 2 * nbytes + 8  # one fused pass: read x, write the result, the mean in between
    return _rt6_bytes(program, rows, cols, x.dtype.itemsize)
