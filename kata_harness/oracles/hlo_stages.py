"""Phase 3's oracles: what jax.stages says of a program (its StableHLO census, its HLO before and
after optimization, the layouts it asked for its inputs, the shapes of its results), XLA:CPU's cost
analysis of a program (the MLP at a shape, and its exact count where the float32 report rounds),
and XLA's reading of the ENTRY ROOT of a program compiled at given argument shapes.

Each function takes a program, its compiled form or a parsed module, never the kata's answer.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.layout import Format

from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions
from xla_inspect.stablehlo import stablehlo_op_census

from ..xla_facts import xla_facts

# jax's dtype names as XLA prints them in a shape
HLO_DTYPES = {"float32": "f32", "int32": "s32", "bfloat16": "bf16", "float16": "f16"}


def default_layout(ndim: int) -> str:
    """The row-major layout of a rank-``ndim`` array, minor-to-major: "{1,0}" for a matrix."""
    return "{" + ",".join(str(d) for d in reversed(range(ndim))) + "}"


def fusion_kinds(module) -> Counter:
    """How many fusions of each kind the parsed module holds, in every computation."""
    return Counter(f.kind for f in fusions(module))


def stages(f: Callable, args: tuple):
    """jax.stages' own texts of ``f`` at ``args``, read structurally: (the StableHLO op census,
    the unoptimized HLO parsed, the optimized HLO parsed)."""
    return read_stages(printed_stages(f, args))


def printed_stages(f: Callable, args: tuple) -> tuple[str, str, str]:
    """jax.stages' default prints of ``f`` at ``args`` (one lowering, one compile): the lowered
    stage's StableHLO and HLO (``as_text()``, ``as_text(dialect="hlo")``) and the compiled
    stage's ``as_text()``."""
    lowered = jax.jit(f).lower(*args)
    text = lowered.compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return lowered.as_text(), lowered.as_text(dialect="hlo"), text


def read_stages(prints: tuple[str, str, str]):
    """:func:`printed_stages`' texts read structurally, as :func:`stages` returns them."""
    stablehlo, hlo, optimized = prints
    return stablehlo_op_census(stablehlo), parse_hlo(hlo), parse_hlo(optimized)


def input_layouts(compiled: jax.stages.Compiled) -> list[str]:
    """jax's own record of the layouts it asked for (``input_formats``), minor-to-major; an
    unused input has none (it was dropped)."""
    return [
        "{" + ",".join(str(d) for d in reversed(f.layout.major_to_minor)) + "}"
        for f in compiled.input_formats[0]
        if f.layout is not None
    ]


def result_root(compiled: jax.stages.Compiled) -> tuple[str, str]:
    """("tuple", the results' shapes as XLA prints them) of a program of several results, from
    jax.stages (``out_info``, ``output_formats``), not from the text."""
    parts = []
    for info, fmt in zip(
        jax.tree.leaves(compiled.out_info),
        jax.tree.leaves(compiled.output_formats, is_leaf=lambda x: isinstance(x, Format)),
        strict=True,
    ):
        order = ",".join(str(d) for d in reversed(fmt.layout.major_to_minor))
        layout = f"{{{order}}}" if info.shape else ""
        parts.append(f"{HLO_DTYPES[str(info.dtype)]}[{','.join(map(str, info.shape))}]{layout}")
    return ("tuple", "(" + ", ".join(parts) + ")")


def compiled_flops(f: Callable, args: tuple) -> float:
    """XLA's flops for ``jax.jit(f)`` compiled at ``args`` (the arguments themselves, so a Python
    scalar stays weakly typed), read from the executable XLA built rather than through
    ``jax.stages``' methods, which a learner's file could have replaced. No "flops" entry is 0."""
    executable = jax.jit(f).lower(*args).compile().runtime_executable()
    assert executable is not None, "this backend has no executable to ask"
    cost = executable.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) else cost  # older jaxlibs: one per device
    return float(cost.get("flops", 0.0))


@cache
def mlp_flops(mlp: Callable, shape: tuple[int, int, int, int]) -> float:
    """XLA's cost analysis of ``mlp(params, x)`` compiled at (batch, in, hidden, out), float32
    (shapes only: nothing is allocated, so a shape past 2**31 flops costs no memory)."""
    batch, n_in, hidden, out = shape
    spec = jax.ShapeDtypeStruct
    params = {
        "w1": spec((n_in, hidden), np.float32),
        "b1": spec((hidden,), np.float32),
        "w2": spec((hidden, out), np.float32),
        "b2": spec((out,), np.float32),
    }
    return compiled_flops(mlp, (params, spec((batch, n_in), np.float32)))


# Every size at 2 or 3: the MLP's flops at each of these 16 shapes are far below 2**24, so XLA's
# float32 count of them is exact.
_CORNERS = tuple(itertools.product((2, 3), repeat=4))


def mlp_flops_interpolated(mlp: Callable, shape: tuple[int, int, int, int]) -> int:
    """:func:`mlp_flops_exact`'s interpolation alone (compiles only the 16 small shapes, cached):
    enough to choose shapes by their count; :func:`mlp_flops_exact` checks it at ``shape``."""
    exact = 0
    for corner in _CORNERS:
        weight = 1
        for size, at in zip(shape, corner, strict=True):
            weight *= size - 2 if at == 3 else 3 - size
        exact += weight * int(mlp_flops(mlp, corner))
    return exact


def mlp_flops_exact(mlp: Callable, shape: tuple[int, int, int, int]) -> int:
    """The exact flops XLA's cost model gives the MLP at (batch, in, hidden, out), also past
    2**24 where its float32 report is rounded: the count is affine in each size separately (every
    op's cost is a product of distinct sizes), so it is the multilinear interpolation of XLA's
    exact counts at the 16 shapes of sizes 2 and 3, in integers. Checked against XLA's own
    report at ``shape``, to float32 precision."""
    exact = mlp_flops_interpolated(mlp, shape)
    reported = mlp_flops(mlp, shape)
    assert abs(reported - exact) <= exact * 2.0**-20, (
        f"XLA's cost model of the MLP is not multilinear at {shape}: {reported:.0f} reported, "
        f"{exact} interpolated"
    )
    return exact


@cache
def compiled_root(fn: Callable, specs: tuple) -> tuple[str, str]:
    """XLA's reading of the ENTRY ROOT of ``fn``'s optimized module, for arguments
    ((shape, dtype), ...)."""
    args = tuple(np.zeros(shape, jnp.dtype(dtype)) for shape, dtype in specs)
    text = jax.jit(fn).lower(*args).compile().as_text()
    assert text is not None, "this backend does not print its executable"
    return xla_facts(text).root
