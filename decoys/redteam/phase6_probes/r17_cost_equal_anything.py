# probe: cost_of: returns floats of a subclass whose == is always True (and whose approx/isclose comparisons succeed), without compiling anything
"""Phase 6: cost and memory. Edit this file only; run `uv run pytest katas/phase6 -x` until green.

XLA does not only optimize your program, it also accounts for it: `compiled.cost_analysis()`
estimates flops and bytes moved, `compiled.memory_analysis()` reports the buffers it planned.
Reading both tells you whether a program is bound by arithmetic or by memory traffic, and what
fusion and donation saved.
"""

from __future__ import annotations

import math  # noqa: F401  (you may need it)
import time  # noqa: F401  (you will need it)
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax  # noqa: F401  (you will need it)

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


@dataclass(frozen=True)
class Timing:
    eager_s: float  # mean seconds per timed eager call
    jit_s: float  # mean seconds per timed call of the compiled function
    repeats: int  # timed calls of each kind
    ratio: float  # eager_s / jit_s


class _Any(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def __sub__(self, other):
        return _Any(0.0)

    def __rsub__(self, other):
        return _Any(0.0)

    def __abs__(self):
        return _Any(0.0)

    def __lt__(self, other):
        return True

    def __le__(self, other):
        return True

    def __gt__(self, other):
        return True

    def __ge__(self, other):
        return True


def cost_of(f, *args) -> dict[str, float]:
    """XLA's cost estimate (see the contract)."""
    return {"flops": _Any(0.0), "transcendentals": _Any(0.0), "bytes_accessed": _Any(0.0)}


def fusion_traffic(steps: Sequence[Callable], x) -> dict[str, float]:
    """Bytes accessed by running `steps` one after another on `x`, op by op and fused.

    "op_by_op": the sum of bytes accessed over the steps, each compiled as its own program and
    fed the previous step's output (as an eager runtime would run them).
    "fused": bytes accessed by one compiled program that applies all the steps in order.
    A step may hold several ops, change the shape or change the dtype; each step's program is
    compiled for the previous step's output, shape and dtype both.
    """
    # TODO: cost each step separately (mind that shapes change), then the composition
    raise NotImplementedError("phase6 task 2: fusion_traffic")


def memory_report(f, *args, donate_argnums: tuple[int, ...] = ()) -> dict[str, int]:
    """Buffer sizes XLA planned for jax.jit(f, donate_argnums=...) compiled for `args`.

    Return {"argument": ..., "output": ..., "temp": ..., "alias": ...} in bytes, exactly as
    XLA planned them (not from the arrays' nbytes: a tuple output also holds a small table of
    pointers, and a donated buffer that no output can use is not aliased, even when another
    donated buffer of the same call is).
    """
    # TODO: compiled.memory_analysis() has one *_size_in_bytes field per entry
    raise NotImplementedError("phase6 task 3: memory_report")


def aliased_parameters(hlo_text: str) -> dict[int, tuple[int, ...]]:
    """Read donation from optimized HLO: {parameter number: output shape index}.

    The module header carries `input_output_alias={ {1}: (3, {}, may-alias), ... }`: output
    index {1} reuses parameter 3's buffer (the second braces are an index *inside* parameter 3,
    not the output's; the kind may be may-alias or must-alias). Use the numbers the header
    states, never an entry's position: parameters need not be 0, 1, ... and outputs need not be
    in order. An array output's index is {} (give ()). No header entry means no aliasing:
    return {}.
    """
    # TODO: parse_hlo(text).attributes holds the header's attributes as raw text
    raise NotImplementedError("phase6 task 4: aliased_parameters")


def naive_temp_bytes(hlo_text: str) -> int:
    """Bytes the ENTRY computation's intermediates would need if none shared a buffer.

    Sum the result sizes of the ENTRY instructions, except: parameters (the arguments), the ROOT
    and, when the ROOT is a `tuple`, the instructions it gathers (those are the outputs),
    constants (the opcode `constant`: literals, not intermediates) and instructions that only
    re-view a buffer (the opcodes bitcast, tuple, get-tuple-element; every other opcode counts:
    slices, and dynamic-update-slice, scatter and custom-calls that XLA may run in place, write
    results of their own here). Instructions inside called computations (fusion bodies, while
    bodies and conditions, reducers) get no buffers: do not count them. The ROOT is the
    instruction marked ROOT, wherever its line is. A result's size is its element count times
    the bytes per element of its dtype, read from the dtype's bit width rounded up to a whole
    byte (f32: 32 bits, bf16: 16, s8: 8, c64: 64, c128: 128, f8e5m2: 8; s4: 4 bits, one byte;
    pred: 1 byte), unless its layout packs the elements: `E(n)` in the layout stores n bits an
    element, the buffer rounded up to a whole byte: `s4[9]{0:E(4)}` 36 bits, 5 bytes;
    `s2[9]{0:E(2)}` 18 bits, 3 bytes (XLA:CPU packs 2- and 4-bit types so). That holds whatever
    the dtype (`u8[9]{0:E(4)}` 5 bytes, `pred[9]{0:E(1)}` 2) and wherever E(n) stands in the
    layout (after a tile, before a memory space: `s4[9]{0:T(3)E(4)S(1)}` 5 bytes). A tile
    T(...) pads nothing here, even one that divides no dimension (`f32[3,5]{1,0:T(8,128)}` is
    60 bytes: count the elements the dimensions give, not whole tiles). A
    tuple-shaped result (a multi-output fusion, a while loop, an opt-barrier) counts the sizes
    of its elements, each by its own layout, and an element that is a tuple counts the sizes of
    its own, at any depth. Compare with
    memory_analysis' temp size to see buffer reuse.
    """
    # TODO: walk parse_hlo(text).entry; instruction.shape_info has .dtype, .dims, .is_tuple
    raise NotImplementedError("phase6 task 5: naive_temp_bytes")


def eager_vs_jit(f, args: tuple, repeats: int) -> Timing:
    """Time f(*args) run eagerly against jax.jit(f)(*args).

    One warm-up call of each (not timed), then `repeats` timed calls of each, read with
    time.perf_counter(). Block on every result with `.block_until_ready()`: JAX dispatches
    asynchronously. Return a Timing whose eager_s and jit_s are MEAN seconds per timed call and
    ratio = eager_s / jit_s.
    """
    # TODO: time.perf_counter around each timed loop; the jit warm-up is the compile
    raise NotImplementedError("phase6 task 6: eager_vs_jit")


def predict_chain_temp(rows: int, width: int, depth: int, itemsize: int) -> int:
    """Predict, without compiling, the temp bytes XLA:CPU plans for a chain of matmuls.

    The program is `matmul_chain(depth)` of katas/phase6/programs.py: `x @ w` applied `depth`
    times, with x of shape (rows, width), w of shape (width, width), both of a dtype whose
    elements take `itemsize` bytes (1, 2, 4 or 8: int8 or uint8, int16 or uint16, int32 or
    float32, complex64; not the 16-bit floats: XLA:CPU may run their dots in float32 with
    buffers of its own, and float16's chain plans 49,152 bytes at 64 x 64 at every depth from 1
    to 4). Return what
    `memory_analysis().temp_size_in_bytes` of the compiled program will say. Work it out from
    the shapes and the chain: which products are intermediates, which of them are alive at the
    same time, and which allocation besides temp can hold one of them. The tests compile the
    chains themselves; your function must not. They draw chains of any depth, depth 0 (no
    product: x is returned as is) and 1 included, and of any shape whose x
    takes a multiple of 64 bytes (XLA:CPU aligns each temp buffer to 64 bytes; these shapes
    leave no padding between buffers).
    """
    # TODO: list the products in order; which buffer can each one go to?
    raise NotImplementedError("phase6 task 7: predict_chain_temp")


def predict_bytes_accessed(program: str, x: jax.ShapeDtypeStruct) -> int:
    """Predict the compiled `bytes accessed` of BYTES_BANK[program], from x's shape and dtype.

    BYTES_BANK (katas/phase6/programs.py) maps a name to (function, what it takes besides x:
    y, an array like x, or b, a vector of x's dtype with one element per column of x; the dtypes
    x may have). x (a jax.ShapeDtypeStruct: .shape, .dtype) is a matrix whose every dimension is
    one of BYTES_DIMS. Return what `cost_analysis()["bytes accessed"]` of the program compiled
    for those arguments will say. Work from what a fused kernel reads and writes, what each
    dtype costs per element, and which programs need more than one kernel. The tests compile
    the program themselves; your function must not.
    """
    # TODO: which arrays does each kernel read and write, at how many bytes an element?
    raise NotImplementedError("phase6 task 8: predict_bytes_accessed")
