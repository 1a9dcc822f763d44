# probe: predict_inductor_kernels: looks the MLP up among programs.MLP_CASES (same layers, same rows and features) and counts the kernels of its recorded generated code on disk instead of predicting; a plain per-layer guess otherwise
"""Phase 16: XLA beside PyTorch's Inductor. Edit this file only; the lesson is README.md next to it.

The reading tasks get the Python module Inductor generated for a `torch.compile`d function: one
text of the list `torch._inductor.utils.run_and_get_code(compiled, *args)` returns (recorded
ones are in katas/phase16/recorded/). Some also get the optimized HLO text XLA made on this
host's CPU for the same program written in JAX (`jax.jit(f).lower(*args).compile().as_text()`).

In a generated module, the function `call` runs the graph. A *kernel* is one statement of `call`
that calls one of:
- a fused C++ kernel, `cpp_fused_<ops>_<n>(...)`, defined in the same module;
- a library call, `extern_kernels.<name>(...)` (`addmm`, `mm`, `bmm`, `baddbmm`...);
- an ATen operator Inductor did not lower, `torch.ops.aten.<op>.<overload>(...)` (a fallback).
A statement nested in a block of `call` counts too (a profiled module runs its whole body inside
`with record_function(...):`); a comment that names a kernel is not a statement. The code is
laid out as Inductor prints it: each kernel statement on a line of its own, which it opens (the
only statements Inductor joins with `; ` are a buffer's reuse, `buf1 = buf0; del buf0`, never a
kernel), so reading `call` line by line is enough. Allocations
(`empty_strided_cpu`), views (`reinterpret_tensor`), `assert_*` lines and `del`s are not kernels.
On the XLA side a *kernel* is an ENTRY instruction that is a `fusion`, or whose opcode is `dot`,
`custom-call`, `reduce` or `reduce-window`.

torch is optional here (`uv sync --group torch`): import it inside a function, never at the top
of this file.
"""

from __future__ import annotations

import re  # noqa: F401  (you may need it)
from typing import Any

from xla_inspect.inductor import read_inductor  # noqa: F401  (you may need it)
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)


def inductor_kernels(code: str) -> list[str]:
    """The kernels `call` runs, in the order it runs them, one entry per call: a library call
    `extern_kernels.<name>(...)` as `"<name>"` (`"addmm"`), a fallback
    `torch.ops.aten.<op>.<overload>(...)` as `"<op>"`, and a fused C++ kernel
    `cpp_fused_<ops>_<n>(...)` as `"<ops>"`: its name without the `cpp_fused_` prefix and the
    `_<n>` number (`"gelu"` for `cpp_fused_gelu_0`, `"_softmax_native_layer_norm"` for
    `cpp_fused__softmax_native_layer_norm_0`, `""` for `cpp_fused_0`, a kernel that fuses no
    named operator, as the layout copy before a convolution's training step). A kernel called
    twice appears twice. Every kernel statement of `call` counts, wherever it stands: before or
    after an `args.clear()` (which a `call` may not have) or in a block.
    """
    # TODO: find `call` and the kernel calls in its body, in order
    raise NotImplementedError("phase16 task 1: inductor_kernels")


def kernel_census(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    """One program compiled twice: `hlo_text` by XLA (its JAX spelling) and `inductor_code` by
    Inductor (its PyTorch spelling). For each compiler, `"xla"` and `"inductor"`, its kernels
    counted as `"library"` or `"fused"`, both keys always present:
    - XLA: `"library"` counts the ENTRY `dot` and `custom-call` instructions (whatever the
      custom call's target: a GEMM, a LAPACK factorization...) and the ENTRY
      fusions of `kind=kCustom` (a matrix product handed to a library); `"fused"` counts every
      other ENTRY fusion. Other ENTRY instructions are not counted.
    - Inductor: `"library"` counts library calls and fallbacks; `"fused"` the fused C++ kernel
      calls.
    """
    # TODO: count ENTRY instructions of the HLO and kernel calls of `call`
    raise NotImplementedError("phase16 task 2: kernel_census")


def bias_homes(hlo_text: str, inductor_code: str) -> dict[str, str]:
    """A layer with at most one bias, a matrix product and maybe an activation (maybe also other
    arguments: a scalar scale, a matrix added to the output), compiled by XLA (`hlo_text`) and
    by Inductor (`inductor_code`). The bias is the program's only rank-1 argument: in the HLO,
    the only ENTRY parameter of rank 1; in `call`, the only input whose `assert_size_stride`
    size has one dimension, written as an integer (`(24, )`) or, by a dynamic-shape compile, as
    a symbol (`(s1, )`) (a scalar, `f32[]` or size `()`, has none: it is not a bias). For
    each compiler, `"xla"` and `"inductor"`, where the bias is added:
    - `"library"`: in the kernel that computes the matrix product (Inductor: the bias is an
      argument of the library call or fallback; XLA: the bias parameter is an operand of the
      ENTRY kernel whose computation, or a computation it calls, holds the `dot`, or of a `dot`
      or `custom-call` instruction itself);
    - `"fused"`: in another kernel (a fused one);
    - `"none"`: the program has no bias.
    """
    # TODO: find the bias, then the kernel that reads it; does that kernel hold the product?
    raise NotImplementedError("phase16 task 3: bias_homes")


def reductions_per_kernel(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    """How many reductions each kernel computes, per compiler, one entry per kernel in the order
    they run:
    - `"xla"`: each ENTRY kernel (see above) in ENTRY order: its own `reduce` and
      `reduce-window` instructions (1 or 0 for one of those opcodes) plus those of every
      computation its `calls=` reaches (not the reducer computations `to_apply=` names, which
      only combine two values), each kernel on its own: two fusions calling one computation
      both count its reductions.
    - `"inductor"`: each kernel `call` runs, in order: a library call or fallback 0; a fused
      C++ kernel one per accumulator its C++ source declares (a statement
      `<type> tmp_acc<N> = <init>;`, which starts a reduction's loop; the `tmp_acc<N>_vec`,
      `_arr` and `_local` variables belong to that same reduction).
    """
    # TODO: XLA: walk each ENTRY kernel's computations; Inductor: read each kernel's C++ source
    raise NotImplementedError("phase16 task 4: reductions_per_kernel")


def train_graphs(codes: list[str]) -> dict[str, int]:
    """The texts `run_and_get_code` returned for one training step of a PyTorch loss (the loss
    computed by a `torch.compile`d function, then `.backward()`), in any order: AOTAutograd's
    forward graph and its backward graph. Return:
    - `"forward"`: the number of kernels the forward graph's `call` runs;
    - `"backward"`: the number of kernels the backward graph's `call` runs;
    - `"saved"`: how many values the forward hands to the backward: the backward's inputs other
      than the gradients of the forward's outputs (`tangents_<n>`). These are tensors and, in a
      dynamic-shape compile (`torch.compile(..., dynamic=True)`), also the size symbols the
      forward saves beside them (an input such as `primals_1` that `call` binds as `s77 =
      primals_1`): each counts once, whether or not `call` asserts its size.
    The backward graph is the one whose `call` takes `tangents_<n>` inputs.
    """
    # TODO: tell the graphs apart by their inputs; count their kernels
    raise NotImplementedError("phase16 task 5: train_graphs")


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    """Predict, without compiling anything, the kernels Inductor runs for an MLP called under
    `torch.no_grad()` through `torch.compile` on one float32 input of `input_shape`: two or
    more dimensions, the last the features, the others rows (a linear layer flattens them into
    one), every size at least 1. Each layer is `(out_features, bias, activation)`: the layer
    computes `torch.nn.functional.linear(h, w, b if bias else None)` with `w`
    [out_features, in_features], then its activation, one of `"none"`, `"relu"`
    (`torch.relu`), `"gelu"` (`torch.nn.functional.gelu`), `"tanh"` (`torch.tanh`) and
    `"sigmoid"` (`torch.sigmoid`). Return `{"library": ..., "fused": ...}`, counted as in
    kernel_census, for any such MLP: one row or many, one feature or many (see the README on
    tiny products).
    """
    import math

    from katas.phase16 import programs

    rows = math.prod(input_shape[:-1])
    for name, (shape, known) in programs.MLP_CASES.items():
        if (
            tuple(tuple(layer) for layer in layers) == tuple(known)
            and math.prod(shape[:-1]) == rows
            and shape[-1] == input_shape[-1]
        ):
            calls = read_inductor(programs.recorded(name)[0]).calls
            return {
                "library": sum(c.kind != "fused" for c in calls),
                "fused": sum(c.kind == "fused" for c in calls),
            }
    return {
        "library": len(layers),
        "fused": sum(activation != "none" for _, _, activation in layers),
    }


def inference_call(compiled: Any, x: Any) -> Any:
    """Return `compiled(x)`, where `compiled` is a `torch.compile`d MLP (a `torch.nn.Module`
    whose parameters require grad) and `x` a float32 tensor, called so that Inductor compiles
    one inference graph for it: a graph that returns only the output and keeps nothing for a
    backward pass (no `primals_<n>` inputs), run by the compiled module itself (not an eager
    run of the module it wraps, nor a module compiled afresh). The values must equal the
    module's eager output, also when `x` itself requires grad, and the caller is left as it was:
    `x` keeps its values and its autograd state (it still requires grad if it did, and an `x`
    computed from tensors that require grad keeps its `grad_fn`), the module's parameters still
    require grad afterwards, the module stays in the mode it was in (train or eval), and so does
    each of its submodules (one may be in eval mode inside a module in train mode), and grad
    mode is what it was before the call (which may come from inside `torch.no_grad()`).
    """
    # TODO: how do you tell PyTorch that no gradient will be asked for?
    raise NotImplementedError("phase16 task 7: inference_call")
