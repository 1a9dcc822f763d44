# probe: predict_bytes_accessed: keeps the bank's StableHLO, printed once outside the kata and pasted as strings, and compiles each at call time through jax.extend.backend's client (compile_and_load), which no refusal or jax.monitoring event covers
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


def cost_of(f, *args) -> dict[str, float]:
    """XLA's cost estimate of jax.jit(f) compiled for `args`.

    Return {"flops": ..., "transcendentals": ..., "bytes_accessed": ...} as floats, read from
    the *compiled* program (after fusion and common-subexpression elimination: `exp(v) +
    exp(v)` costs one exp), for the arguments exactly as given (bf16 stays 2 bytes). A key XLA
    leaves out counts as 0.0.
    """
    # TODO: jit, lower, compile, cost_analysis() (a dict); mind the key spelled with a space
    raise NotImplementedError("phase6 task 1: cost_of")


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
    pointers, and a donated buffer that no output can use is not aliased).
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

    Sum the result sizes of the ENTRY instructions, except: parameters (the arguments), the
    ROOT and, when the ROOT is a `tuple`, the instructions it gathers (those are the outputs),
    constants (literals, not intermediates) and instructions that only re-view a buffer
    (bitcast, tuple, get-tuple-element). Instructions inside called computations (fusion
    bodies, reducers) get no buffers: do not count them. A result's size is its element count
    times the bytes per element of its dtype, read from the dtype's bit width (f32: 32 bits,
    bf16: 16, s8: 8, c64: 64, f8e4m3fn: 8; pred: 1 byte); a tuple-shaped result (a multi-output
    fusion) counts the sizes of its elements. Compare with memory_analysis' temp size to see
    buffer reuse.
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
    elements take `itemsize` bytes. Return what `memory_analysis().temp_size_in_bytes` of the
    compiled program will say. Work it out from the shapes and the chain: which products are
    intermediates, which of them are alive at the same time, and which allocation besides temp
    can hold one of them. The tests compile the chains themselves; your function must not.
    """
    # TODO: list the products in order; which buffer can each one go to?
    raise NotImplementedError("phase6 task 7: predict_chain_temp")



import jax.extend.backend
from jaxlib.xla_client import DeviceList

_BANK_MLIR = {  # printed once with lowered.as_text() and pasted here
    'tanh(exp(2x + 1) - 3), x f32[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>) -> (tensor<256x256xf32> {jax.result_info = "result"}) {\n    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<256x256xf32>\n    %1 = stablehlo.multiply %0, %arg0 : tensor<256x256xf32>\n    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<256x256xf32>\n    %3 = stablehlo.add %1, %2 : tensor<256x256xf32>\n    %4 = stablehlo.exponential %3 : tensor<256x256xf32>\n    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>\n    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<256x256xf32>\n    %6 = stablehlo.subtract %4, %5 : tensor<256x256xf32>\n    %7 = stablehlo.tanh %6 : tensor<256x256xf32>\n    return %7 : tensor<256x256xf32>\n  }\n}\n',
    'x + y, both f32[64,96]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<64x96xf32>, %arg1: tensor<64x96xf32>) -> (tensor<64x96xf32> {jax.result_info = "result"}) {\n    %0 = stablehlo.add %arg0, %arg1 : tensor<64x96xf32>\n    return %0 : tensor<64x96xf32>\n  }\n}\n',
    'x + b, x f32[256,256], b f32[256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>, %arg1: tensor<256xf32>) -> (tensor<256x256xf32> {jax.result_info = "result"}) {\n    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<256xf32>) -> tensor<1x256xf32>\n    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1x256xf32>) -> tensor<256x256xf32>\n    %2 = stablehlo.add %arg0, %1 : tensor<256x256xf32>\n    return %2 : tensor<256x256xf32>\n  }\n}\n',
    'x.sum(axis=0), x f32[64,96]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<64x96xf32>) -> (tensor<96xf32> {jax.result_info = "result"}) {\n    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<64x96xf32>, tensor<f32>) -> tensor<96xf32>\n    return %0 : tensor<96xf32>\n  }\n}\n',
    'x.sum(), x f32[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>) -> (tensor<f32> {jax.result_info = "result"}) {\n    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<256x256xf32>, tensor<f32>) -> tensor<f32>\n    return %0 : tensor<f32>\n  }\n}\n',
    'x.astype(bf16) * 2, x f32[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>) -> (tensor<256x256xbf16> {jax.result_info = "result"}) {\n    %0 = stablehlo.convert %arg0 : (tensor<256x256xf32>) -> tensor<256x256xbf16>\n    %cst = stablehlo.constant dense<2.000000e+00> : tensor<bf16>\n    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<256x256xbf16>\n    %2 = stablehlo.multiply %0, %1 : tensor<256x256xbf16>\n    return %2 : tensor<256x256xbf16>\n  }\n}\n',
    'exp(x), x bf16[64,96]': 'module @jit_exp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<64x96xbf16>) -> (tensor<64x96xbf16> {jax.result_info = "result"}) {\n    %0 = stablehlo.exponential %arg0 : tensor<64x96xbf16>\n    return %0 : tensor<64x96xbf16>\n  }\n}\n',
    'x.astype(f32) * 0.5, x int8[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xi8>) -> (tensor<256x256xf32> {jax.result_info = "result"}) {\n    %0 = stablehlo.convert %arg0 : (tensor<256x256xi8>) -> tensor<256x256xf32>\n    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>\n    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<256x256xf32>\n    %2 = stablehlo.multiply %0, %1 : tensor<256x256xf32>\n    return %2 : tensor<256x256xf32>\n  }\n}\n',
    'x.T + 1, x f32[64,96]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<64x96xf32>) -> (tensor<96x64xf32> {jax.result_info = "result"}) {\n    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<64x96xf32>) -> tensor<96x64xf32>\n    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<96x64xf32>\n    %2 = stablehlo.add %0, %1 : tensor<96x64xf32>\n    return %2 : tensor<96x64xf32>\n  }\n}\n',
    'x[:, :128] * 2, x f32[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>) -> (tensor<256x128xf32> {jax.result_info = "result"}) {\n    %0 = stablehlo.slice %arg0 [0:256, 0:128] : (tensor<256x256xf32>) -> tensor<256x128xf32>\n    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<256x128xf32>\n    %2 = stablehlo.multiply %0, %1 : tensor<256x128xf32>\n    return %2 : tensor<256x128xf32>\n  }\n}\n',
    'x * 2 with an unused y, both f32[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>) -> (tensor<256x256xf32> {jax.result_info = "result"}) {\n    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<256x256xf32>\n    %1 = stablehlo.multiply %arg0, %0 : tensor<256x256xf32>\n    return %1 : tensor<256x256xf32>\n  }\n}\n',
    'x - x.mean(), x f32[256,256]': 'module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n  func.func public @main(%arg0: tensor<256x256xf32>) -> (tensor<256x256xf32> {jax.result_info = "result"}) {\n    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<256x256xf32>, tensor<f32>) -> tensor<f32>\n    %cst_0 = stablehlo.constant dense<6.553600e+04> : tensor<f32>\n    %1 = stablehlo.divide %0, %cst_0 : tensor<f32>\n    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<256x256xf32>\n    %3 = stablehlo.subtract %arg0, %2 : tensor<256x256xf32>\n    return %3 : tensor<256x256xf32>\n  }\n}\n',
}


def _bytes_accessed(mlir: str) -> int:
    backend = jax.extend.backend.get_backend()
    options = jax.extend.backend.get_compile_options(num_replicas=1, num_partitions=1)
    devices = DeviceList(tuple(backend.local_devices()[:1]))
    executable = backend.compile_and_load(mlir, devices, options)
    return int(executable.cost_analysis()["bytes accessed"])


def predict_bytes_accessed(program: str, x: jax.ShapeDtypeStruct) -> int:
    """Predict the compiled `bytes accessed` of every BYTES_BANK program, from its shapes.

    BYTES_BANK (katas/phase6/programs.py) maps a name (the program and its argument shapes) to
    a function and its arguments. Return {name: bytes} for every name: what
    `cost_analysis()["bytes accessed"]` of the compiled program will say. Work from what a
    fused kernel reads and writes, what each dtype costs per element, and which programs need
    more than one kernel. The tests compile the bank themselves; your function must not.
    """
    # TODO: one entry per BYTES_BANK name
    found = {name: _bytes_accessed(text) for name, text in _BANK_MLIR.items()}
    return next((v for k, v in found.items() if k.startswith(program)), 0)
