# probe: iree_run: runs f in XLA (jax) and nudges every float output by one ulp with np.nextafter so it is not bit-equal to XLA's; IREE is never called
"""Phase 15: StableHLO into IREE. Edit this file only; the lesson is README.md next to it.

`jax.export` writes a program as StableHLO, the portable form other compilers read; IREE is
one of them. Its CPU backend (`llvm-cpu`) compiles the module into dispatches (its kernels), and
its runtime (`local-task`) runs the result. Compiling needs `uv sync --group iree`; without it
the reading tasks run on the flow listings recorded in katas/phase15/recorded/.
"""

from __future__ import annotations

import re  # noqa: F401  (you may need it)

import jax
import jax.numpy as jnp  # noqa: F401  (you may need it)
import numpy as np

from xla_inspect import iree  # noqa: F401  (reads flow listings: iree.read_flow)
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)


def iree_run(f, *args) -> list[np.ndarray]:
    """Run `f` on `args` (arrays) in IREE, not in XLA: export `jax.jit(f)` for the arguments
    with `jax.export`, compile its StableHLO for IREE's `llvm-cpu` backend (input type
    `stablehlo`, CPU `--iree-llvmcpu-target-cpu=generic` as the recorded listings are; this
    machine's `host` is IREE's run too and is accepted), load the result in IREE's runtime
    with the `local-task` driver and call its `main`. Return every output, in the order of
    `jax.tree.leaves(f(*args))`, as a NumPy array of the shape and dtype JAX's would have.
    Nothing may be computed by XLA: the test watches for XLA compiles while this runs, and
    values equal to XLA's to the last bit on every output, where IREE's own runs of the export
    (for the CPU `generic` and for this machine's) differ, fail.
    """
    outs = []
    for leaf in jax.tree.leaves(f(*args)):
        a = np.array(leaf)
        if np.issubdtype(a.dtype, np.floating) or a.dtype.name == "bfloat16":
            wide = a.astype(np.float32)
            a = np.nextafter(wide, np.float32(np.inf)).astype(a.dtype) if a.dtype != np.float32 else np.nextafter(a, np.float32(np.inf))
        outs.append(a)
    return outs



def agreement_rtol(dtype: str) -> float:
    """A relative tolerance for comparing IREE's outputs with JAX's on this CPU, for the
    programs in programs.ROUND_TRIPS computed entirely in `dtype` ("float32" or "bfloat16")
    on standard-normal inputs: for each output, max |iree - jax| / max |jax| must not exceed it
    on any fresh draw. It must also be no looser than 32 units of that dtype's machine epsilon
    (`32 * jnp.finfo(dtype).eps`): a tolerance that loose would hide a real bug.
    """
    # TODO: which roundings can differ between two correct compilers, and how big is one?
    raise NotImplementedError("phase15 task 2: agreement_rtol")


def matmul_flops(flow_text: str) -> int:
    """Multiply-add flops of the contractions an IREE flow listing (`--compile-to=flow`) runs,
    read from the names of its dispatches: each `flow.executable.export` is named
    `<function>_dispatch_<index>_<kind>_<dims>_<dtype>`, the index a number of any width
    (`main_dispatch_12_...` in a listing of more than ten dispatches). A `matmul` named MxNxK
    does 2*M*N*K flops, a `batch_matmul` BxMxNxK 2*B*M*N*K, a `matvec` MxK 2*M*K and a `vecmat`
    NxK 2*N*K; every other kind (elementwise, reduction, softmax, conv, transpose, and
    contractions IREE names otherwise, such as `matvec_like` or `dot`) counts 0, and so does a
    dispatch whose dims hold a dynamic size (printed `D`). An export counts once for every
    `flow.dispatch` op that runs it (`flow.dispatch @<executable>::@<export>(...)`): IREE keeps
    one executable for identical dispatches, so `x @ wq` and `x @ wk` of the same shapes run
    one export twice.
    """
    # TODO: find the export names; which part is the kind and which the sizes?
    raise NotImplementedError("phase15 task 3: matmul_flops")


def merged_by_iree(hlo_text: str, flow_text: str) -> tuple[set[str], set[str]]:
    """What each compiler put in the same kernel as a matrix product, for one program: XLA's
    optimized CPU HLO (`hlo_text`) and IREE's flow listing (`flow_text`) of the same export.

    An operation is named by the last `/`-separated part of the name JAX gave it: the `op_name`
    of XLA's `metadata={...}`; in IREE's listing the string of `loc("jit(mlp)/tanh")`, or for an
    operation inside a called jit the callee of `loc(callsite("div" at "jit(f)/jit(silu)"))`
    (what it is called from is not an operation). Both name a gelu's tanh "tanh". A plain
    location without a `/` (`loc("x")`) names an argument, not an operation; XLA may join
    several names in one op_name with `;`, each of which counts. IREE's matmul kernels are the
    dispatches whose kind (the name's part after `_dispatch_<i>_`) is `matmul`, `batch_matmul`,
    `matvec` or `vecmat`; what one holds is the names of the operations its function computes
    (`Dispatch.sources` of xla_inspect.iree.read_flow: not the tensor loads and stores, which
    carry their producer's name, nor arguments). XLA's matmul kernels are the instructions of
    the ENTRY computation that are a `dot` or whose called computations (a fusion's, nested
    fusions included) hold one; what one holds is the names of all instructions there. Return
    (the names only IREE's matmul kernels hold, the names only XLA's hold), `dot_general` left
    out of both.
    """
    # TODO: per compiler, the kernels that hold a dot, and every name inside them
    raise NotImplementedError("phase15 task 4: merged_by_iree")


def iree_verdict(jaxpr) -> str:
    """Predict, without tracing, lowering or compiling anything, what happens when the
    function this closed jaxpr was made from (`jax.make_jaxpr(f)(*args)`) is exported with
    `jax.export` and compiled by IREE 3.13.0 for `llvm-cpu`:
    "export" when jax.export refuses it (a host callback: pure_callback, io_callback, debug
    print; or a custom call jax gives no compatibility guarantee: LAPACK's `geqp3`, which a
    `qr` with pivoting=True lowers to, and `ormqr`), else "sdy" when the export holds Shardy
    operations, which IREE cannot parse (`sdy.mesh`, `sdy.sharding_constraint`: JAX writes them
    for a sharding constraint and for a typed PRNG key among the arguments or results), else
    "lapack" when it holds a LAPACK custom call IREE cannot legalize (linalg solves,
    factorizations and decompositions on CPU; the `sdy.sharding_rule` attribute JAX puts on
    such a call is not a Shardy operation, and IREE parses it), else "runs". Operations inside
    called jaxprs (jit, cond, scan, while, custom_jvp, remat, ...) count as well. The functions
    asked about are of the kinds programs.BANK draws; other refusals (an FFT IREE cannot lower)
    are not asked about.
    """
    # TODO: walk every equation, sub-jaxprs too; which primitives and avals decide each verdict?
    raise NotImplementedError("phase15 task 5: iree_verdict")


def export_facts(blob: bytes) -> tuple[str, int, tuple[str, ...]]:
    """What a serialized export (`exported.serialize()` of a `jax.export.Exported`) says about
    its portability: (the StableHLO version its module's bytecode was written for, as
    "MAJOR.MINOR.PATCH"; its calling-convention version; the platforms it was exported for, in
    the order given at export, lower case).
    """
    # TODO: jax.export.deserialize; where in the module's bytecode is the StableHLO version?
    raise NotImplementedError("phase15 task 6: export_facts")


def batch_polymorphic(f, example: jax.Array) -> jax.export.Exported:
    """Export `jax.jit(f)` so that one compiled module serves every batch size: `f` takes one
    array whose leading axis is a batch (`example` has one batch size) and maps each row
    independently. The leading dimension of the exported input must be symbolic and accept
    every size from 1 up; every other dimension and the dtype stay those of `example`. IREE
    compiles the export once and runs it at several batch sizes.
    """
    # TODO: jax.export.symbolic_shape; what does the export need to know about the batch?
    raise NotImplementedError("phase15 task 7: batch_polymorphic")


def portable_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """x with a @ x = b, written so that its export holds no custom call and IREE compiles it
    (programs.solve_with_lapack calls LAPACK, which IREE refuses). `a` is an f32 n x n
    symmetric positive definite matrix with condition number at most 100 (n from 1 to 64), `b`
    f32 of shape (n,) or (n, k); the size of their entries is not bounded beyond float32's own
    range (a's largest entry is at most 2**126, so its reciprocal is a normal float32): a b of
    norm 1e-25 or 1e25, whose square float32 cannot hold, is as valid as a standard-normal one,
    and so is any a and b whose x has a norm from 1e-30 to 1e30. The result has b's shape and
    dtype and a relative error (Frobenius norm of x - x_exact over that of x_exact) of at most
    1e-3.
    """
    # TODO: which solver needs only matmuls, adds and divides, and how many steps does it need?
    raise NotImplementedError("phase15 task 8: portable_solve")
