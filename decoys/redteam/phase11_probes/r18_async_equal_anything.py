# probe: async_collectives: returns a dict subclass whose == is always True (and != always False), without reading the module
"""Phase 11: reading TPU HLO. Edit this file only; run `uv run pytest katas/phase11 -x`.

libtpu compiles for a TPU that is not here: `xla_inspect.targets` places arrays on compile-only
devices and `jax.jit(f).lower(...).compile()` gives the HLO the chip would run, with its cost and
memory analyses. The tests hand you that text (or compile it, when `uv sync --group tpu`
installed libtpu); the lesson is README.md next to this file.
"""

from __future__ import annotations

import math  # noqa: F401  (you may need it)
import re  # noqa: F401  (you may need it)

import numpy as np  # noqa: F401  (you may need it)
from jax.sharding import PartitionSpec as P

from xla_inspect import parse_hlo  # noqa: F401  (you will need it)
from xla_inspect.model import Shape  # noqa: F401  (you will need it)
from xla_inspect.query import reachable  # noqa: F401  (you may need it)


class _AnyDict(dict):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


def async_collectives(hlo_text: str) -> dict[str, str]:
    """The collectives XLA made asynchronous (see the contract)."""
    return _AnyDict()


def overlapped_work(hlo_text: str) -> dict[str, list[str]]:
    """What XLA scheduled while each async collective was in flight.

    For every start of `async_collectives`: the names of the ENTRY instructions strictly between
    the start and its done, in the order the module prints them (a module with
    `is_scheduled=true` prints ENTRY in schedule order), leaving out those that do no work:
    get-tuple-element, bitcast, tuple, parameter, constant. The done of a TPU start is the
    kCustom fusion whose body holds `AsyncCollectiveDone` and the same collective (the same
    `channel_id`); the done of an `X-start` op is the `X-done` op that takes it as operand.
    """
    # TODO: pair each start with its done, then list what lies between them
    raise NotImplementedError("phase11 task 2: overlapped_work")


def matmul_fusions(hlo_text: str) -> dict[str, list[str]]:
    """The matmuls of TPU HLO and the arithmetic XLA fused into them.

    XLA:TPU prints a dot as a `convolution`. For every ENTRY `fusion` whose called computations,
    nested ones included, hold a convolution: {fusion name: sorted distinct opcodes of the other
    work in those computations}, leaving out the convolution itself and the opcodes that only
    move, view or wrap data: parameter, constant, bitcast, broadcast, reshape, transpose, copy,
    convert, fusion, tuple, get-tuple-element, custom-call and the collectives.
    """
    # TODO: for each ENTRY fusion, collect the opcodes of everything it calls
    raise NotImplementedError("phase11 task 3: matmul_fusions")


def device_groups(hlo_text: str) -> dict[int, list[list[int]]]:
    """Which devices talk to each other: {channel_id: replica groups} for every collective with
    a `replica_groups` attribute, in any computation.

    A group is a list of device numbers (positions in the device assignment, 0..N-1). XLA prints
    groups three ways: explicit `{{0,1},{2,3}}`; an iota list `[G,S]<=[dims]` or
    `[G,S]<=[dims]T(perm)`; and mesh axes `mesh['a'=2,'b'=2] {'b'}` (a group varies only the
    named axes: naming none, `mesh['a'=2,'b'=2] {}`, every device is alone). Give each group's
    devices in the order the spelling lists them (the order a gather concatenates); the groups
    themselves in any order. An empty `replica_groups={}` is one group of every device, 0..N-1,
    N being the module header's `replica_count` times its `num_partitions` (one when not
    printed). A
    collective copied into several computations keeps its channel_id: one entry. A collective
    printed without a channel_id (cross-replica) has no key: leave it out.
    """
    # TODO: one reader per spelling; the iota and mesh ones are NumPy reshapes and transposes
    raise NotImplementedError("phase11 task 4: device_groups")


def collective_bytes(hlo_text: str) -> dict[str, int]:
    """Bytes of data each device receives from collectives: {opcode: bytes}, summed per opcode.

    Count every all-gather, all-reduce, reduce-scatter, all-to-all and collective-permute of
    any computation once per channel_id (the TPU async wrappers copy one collective into several
    bodies); one without a channel_id is a collective of its own. Its bytes are those of its
    result on one device, logical: element count times the dtype's width (a tuple result: the
    sum of its elements), never the padded tiles; the width in bits, so an s4 element is half a
    byte. Opcodes with no collective are left out. Only those five opcodes count: the generic
    async ops (`all-gather-start`, `all-reduce-start`, `collective-permute-start`) are other
    opcodes and count for nothing here (an `async-start` counts by the collective it calls).
    """
    # TODO: walk every computation; remember channels you have already counted
    raise NotImplementedError("phase11 task 5: collective_bytes")


def padded_bytes(shape_text: str) -> int:
    """Bytes a TPU buffer of this array shape occupies, tiles padded, e.g. for
    `bf16[1000,300]{0,1:T(8,128)(2,1)}`.

    The layout lists dimensions minor to major, then the tiles: the first tile covers as many
    of the most minor dimensions as it has sizes (`T(8,128)`: 128 along the most minor, 8 along
    the next; `T(1024)`: the most minor only), and each of them, a dimension of 1 too, is padded
    up to a multiple of its tile size; later tiles such as `(2,1)` split the first one without
    adding padding. Bytes per element from the dtype's bit width (s4: half a byte; pred: one
    byte). No tile: the logical size. Dimensions go up to int64's (past 2**53, where a float
    stops holding every integer): the answer is an exact int.
    """
    # TODO: xla_inspect.model.Shape reads dims, dtype, layout and minor_to_major
    raise NotImplementedError("phase11 task 6: padded_bytes")


def prefetched_parameters(hlo_text: str) -> dict[int, str]:
    """ENTRY parameters that XLA moved into memory space S(1), and how.

    {parameter number: "cross-program prefetch" | "prefetch" | "copy"} for every `copy-start`
    or `copy` in ENTRY whose operand is a parameter and whose result (for copy-start: the first
    tuple element) has `S(1)` in its layout: a copy-start with a
    `cross_program_prefetch_index` is the cross-program prefetch, another copy-start a prefetch,
    a plain copy a "copy". Use the number in `parameter(N)`.
    """
    # TODO: ENTRY only; the layout text of the moved buffer says where it lives
    raise NotImplementedError("phase11 task 7: prefetched_parameters")


def predict_layer_flops(m: int, k: int, n: int, data: int, model: int) -> int:
    """Predict, without compiling, the flops per device libtpu's cost_analysis gives for
    `relu(x @ w + b)` in f32 with x [m, k] split P('data', None), w [k, n] split
    P(None, 'model'), b [n] split P('model') and the output P('data', 'model'), on a mesh of
    `data` x `model` TPU devices. Sizes divide evenly, and may be of any size: an exact int.
    libtpu counts the dot by what it compiles it into: a matmul when a device's output block
    has two or more rows and two or more columns; a multiply and a reduce over k when the
    block is a single row or a single column; a multiply alone when k = 1 (read each one's
    count in cost_analysis; a reduce of k values takes k - 1 adds). (XLA:CPU's cost_analysis
    counts the same flops on blocks of two or more rows and columns with k >= 2: the tests
    check against it there when libtpu is missing; smaller dots it rewrites otherwise.)
    """
    # TODO: what block of the output does one device compute, and what does each element cost?
    raise NotImplementedError("phase11 task 8: predict_layer_flops")


def gather_free_specs() -> tuple[P, P]:
    """PartitionSpecs (for w1, for w2) of `relu(x @ w1) @ w2` on a ('data', 'model') mesh of
    2 x 2 TPU devices, x [batch, 256] split P('data', None), w1 [256, 1024], w2 [1024, 256],
    output P('data', None).

    Budget, read from the compiler: no all-gather and no collective-permute anywhere in the
    compiled program, and argument bytes per device at most x's plus half of what the
    replicated weights take (checked with libtpu, and with XLA:CPU's partitioner over 4 CPU
    devices, which runs without it).
    """
    # TODO: which split of w1 lets each device finish its own slice of the hidden layer?
    raise NotImplementedError("phase11 task 9: gather_free_specs")


def predict_allreduce_bytes(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    """Predict, without compiling, the bytes each device receives from the all-reduce of
    `relu(x @ w1) @ w2` on a `data` x `model` TPU mesh, with x [batch, width] split
    P('data', None), the output split the same way, and w1 [width, hidden] and w2 [hidden, width]
    split over 'model' as your `gather_free_specs` splits them (no weight is gathered), all
    arrays of `itemsize`-byte elements. Bytes as `collective_bytes` counts them (the logical
    result on one device); 0 when the program needs no all-reduce. (Without libtpu the tests
    compile the same program for up to 8 CPU devices, in f32 and f16, which XLA:CPU sums in
    their own dtype.)
    """
    # TODO: what does each device hold after its second matmul, and what must be added up?
    raise NotImplementedError("phase11 task 10: predict_allreduce_bytes")


def step_donation() -> tuple[int, ...]:
    """donate_argnums for `sgd_step(params, momentum, batch) -> (params, momentum, loss)`
    (programs.py) compiled for one TPU v5e chip.

    Budget, read from memory_analysis: the aliased bytes equal the params and momentum bytes,
    and the peak is at most the undonated peak minus those bytes. The caller evaluates on the
    batch after the step, so it must stay valid. The numbers mean what `jax.jit` makes of
    them (a negative one counts from the end): jax must donate no array of the batch.
    """
    # TODO: which outputs can take over an input's buffer?
    raise NotImplementedError("phase11 task 11: step_donation")
