"""The programs phase 7's reading tests read, compiled once per session: each as optimized HLO
text with XLA's C++ HloModule of the same compile (or XLA's own StableHLO -> HLO conversion, or a
hand-written module), XLA's conditionals of each, each module's metamorphic variants (renamed,
reordered, both; each accepted by XLA's parser), and the jaxprs of the loop_primitives bank."""

import functools
import zlib
from collections import Counter

import jax

from kata_harness import metamorphic, oracles, xla_counts
from katas.phase7.programs import (
    IF_STABLEHLO,
    JAXPR_PROGRAMS,
    PROGRAMS,
    SHARED_BRANCHES,
    SIBLING_CALLS,
    WHILE_IN_CONDITION,
    nested_while,
    vec,
)
from xla_inspect.errors import HloParseError


@functools.cache
def compiled(name: str):
    """(optimized HLO text, XLA's C++ HloModule) of a test-owned program."""
    written = {
        "shared_branches": SHARED_BRANCHES,
        "sibling_calls": SIBLING_CALLS,
        "while_in_condition": WHILE_IN_CONDITION,
    }
    if name in written:
        return written[name], oracles.xla_parsed(written[name])
    if name in ("pred_if", "nested_while_unoptimized"):  # XLA's own StableHLO -> HLO conversion
        # nested_while unoptimized: no CPU call wrappers, the whiles sit in loop bodies
        mlir = IF_STABLEHLO if name == "pred_if" else jax.jit(nested_while).lower(vec()).as_text()
        return xla_counts.module_of_stablehlo(mlir)
    program = jax.jit(PROGRAMS[name]).lower(vec()).compile()
    text = program.as_text()
    assert text is not None, "this backend does not print its executable"
    return text, xla_counts.module_of_compiled(program)


def hlo(name: str) -> str:
    return compiled(name)[0]


@functools.cache
def xla_conditionals_in_text_order(name: str) -> list[tuple[str, int]]:
    """XLA's conditionals (index type, branches), in the order the text lists them."""
    text, module = compiled(name)
    return xla_counts.conditionals(module, text)


def xla_conditionals(name: str) -> Counter:
    return Counter(xla_conditionals_in_text_order(name))


@functools.cache
def variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The program's module renamed, reordered and both, each accepted by XLA's parser: one of
    each kind, from the first of a few fixed seeds that gives it (a seed's reordering may be
    one XLA refuses)."""
    found: dict[str, metamorphic.HloVariant] = {}
    for k in range(12):
        try:
            drawn = list(metamorphic.variants(hlo(name), seed=zlib.crc32(name.encode()) + k))
        except HloParseError:  # a label the harness drew that reads as a type name (c64)
            continue
        for variant in drawn:
            found.setdefault(variant.kind, variant)
        if len(found) == 3:
            break
    return tuple(found.values())


@functools.cache
def jaxpr(name: str):
    return jax.make_jaxpr(JAXPR_PROGRAMS[name][0])(1.0, 4)
