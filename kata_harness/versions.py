"""Facts that hold only on some JAX versions, declared in one table.

The suite supports several JAX minor versions side by side (see ``SUPPORTED``). A fact the
compiler changed between them is not skipped quietly: it gets an entry in ``GATES`` with the
version range where it holds and a one-line reason naming the change, and a test asks
``holds(name)`` before asserting it (or carries ``requires_jax(name)`` when the whole test is the
fact). Every gate that is off for the running JAX is listed in the header of every pytest run.

Inside a test a gated fact is written ``if versions.checked(name):`` around
``with check, versions.fact(name):`` and its assertions, so that ``KATAS_GATED_FACTS=record``
(see :func:`recording`) can evaluate and record it where it is off, and every other outcome of
that run is the ordinary one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

# Oldest and newest minor version the suite is run on (CI runs the oldest and the locked one).
SUPPORTED = ("0.10", "0.11", "0.12")
_OPERATORS = (">=", "<")
_LEADING_DIGITS = re.compile(r"\d+")


def as_tuple(version: str) -> tuple[int, ...]:
    """``"0.12.0.1"`` -> ``(0, 12, 0, 1)``; a pre-release or dev suffix ends it (``0.13.0rc1`` ->
    ``(0, 13, 0)``)."""
    parts = []
    for part in version.split("."):
        digits = _LEADING_DIGITS.match(part)
        if digits is None:
            break
        parts.append(int(digits[0]))
        if digits[0] != part:
            break
    return tuple(parts)


def in_range(version: str, spec: str) -> bool:
    """Whether ``version`` is in ``spec``: comma-separated ``>=X`` / ``<X`` bounds."""
    have = as_tuple(version)
    for bound in spec.split(","):
        bound = bound.strip()
        operator = next((op for op in _OPERATORS if bound.startswith(op)), None)
        if operator is None:
            raise ValueError(f"version range {spec!r}: each bound is >=X or <X, got {bound!r}")
        limit = as_tuple(bound[len(operator) :])
        if (operator == ">=" and have < limit) or (operator == "<" and have >= limit):
            return False
    return True


@dataclass(frozen=True, slots=True)
class Gate:
    """A fact that holds for ``jax`` versions in ``spec``; ``reason`` names what changed."""

    name: str
    spec: str
    where: str
    reason: str

    def line(self) -> str:
        return f"{self.where}: needs jax {self.spec} ({self.reason})"


GATES: dict[str, Gate] = {
    gate.name: gate
    for gate in (
        Gate(
            "f32-constant-multiplies-kept",
            ">=0.12",
            "phase4 test_xla_keeps_float_rewrites_it_may_not_do, f32 and f16 cases, multiply count",
            "XLA before jax 0.12 folds f32 and f16 x*2.0*3.0 into one multiply on CPU; bf16 "
            "keeps both on every version and is still checked",
        ),
        Gate(
            "float-constant-adds-kept",
            ">=0.12",
            "phase4 surviving_ops, the program 'v + 1.0 applied n times to x' (left out of "
            "the listed and drawn cases)",
            "XLA before jax 0.12 folds (v + 1.0) + 1.0 into one add on CPU for f32 and f16 "
            "(bf16 keeps every add), like x*2.0*3.0 above",
        ),
        Gate(
            "bf16-double-negation-removed",
            ">=0.11",
            "phase4 surviving_ops, bfloat16 x in the negation programs (not drawn)",
            "XLA CPU in jax 0.10 computes bf16 in f32 with a convert between the two negates "
            "of -(-x), so neither goes; f32, f16 and int32 negations cancel on every version",
        ),
        Gate(
            "bf16-slice-reads-its-part",
            ">=0.11",
            "phase6 predict_bytes_accessed, bfloat16 x in 'x[:, : x.shape[1] // 2] * 2' (not "
            "drawn)",
            "XLA CPU's cost analysis in jax 0.10 charges a bf16 column slice with all of x "
            "(whole + half the bytes); f32 and f16 slices read their part on every version",
        ),
        Gate(
            "bf16-dots-stay-bf16",
            ">=0.11",
            "phase6 test_naive_temp_of_compiled_tuple_and_bf16_programs, bf16 chain case",
            "XLA CPU before jax 0.11 computes bf16 dots in f32 (a convert fusion around each "
            "dot), so the chain's intermediates are f32; the s16 chain case checks dtype sizes "
            "on every version",
        ),
        Gate(
            "closed-call-binds-a-jaxpr",
            ">=0.11",
            "phase2 primitive_census tests, the closed call in the 'calls' program",
            "jax 0.11 made closed_call_p the `eval_jaxpr` primitive bound with call_jaxpr=; "
            "0.10's closed_call needs a private wrapped function",
        ),
        Gate(
            "xla-parser-reads-newer-hlo-syntax",
            ">=0.11",
            "tests/xla_inspect oracle checks of corpus files with `name#N` operands or "
            "compare's `order=`",
            "XLA's HLO parser before jax 0.11 rejects two spellings the corpus's 0.12 dumps "
            "print: tuple-output operands `name#N` and compare's `order=TOTAL`",
        ),
        Gate(
            "compiled-hlo-rewrites-parameter-shardings",
            ">=0.11",
            "phase9 decoy shardings_after_partitioning (test_sharding_annotations)",
            "before jax 0.11 the compiled CPU HLO keeps each parameter's sharding annotation "
            "as written, so reading it after compiling is not wrong there",
        ),
        Gate(
            "xla-attribute-table",
            ">=0.12",
            "tests/xla_inspect/test_oracle_*.py, the attribute table and value syntax probes",
            "the reader's table is read from jaxlib 0.12's parser; older parsers know other "
            "opcodes (no collective-reduce or shuffle) and reject the probes for other reasons",
        ),
        Gate(
            "xla-module-attribute-list",
            ">=0.12",
            "tests/xla_inspect/test_header.py test_names_are_what_xla_lists, the equality",
            "the reader lists jaxlib 0.12's module attributes; jaxlib 0.11's parser lists no "
            "backend_config, jaxlib 0.10's neither backend_config nor debug_attributes",
        ),
        Gate(
            "xla-parser-checks-as-in-jaxlib-0.12",
            ">=0.12",
            "tests/xla_inspect/test_oracle_*.py comparisons of shardings (named, mesh replica "
            "groups, a domain's), enumerated values, reshape element counts and operand and "
            "dimension counts",
            "XLA's parser before jax 0.12 checks less as it reads: it takes a named sharding or "
            "mesh replica groups naming an axis the mesh lacks, shuffle without its modes, a "
            "reshape into '?' dimensions of another size, a conditional without operands and "
            "two dimensions in an all-gather; the reader follows jaxlib 0.12's parser",
        ),
        Gate(
            "tpu-shapes-read-by-xla",
            ">=0.12",
            "phase11 tests of collective_bytes, padded_bytes, prefetched_parameters and "
            "predict_allreduce_bytes",
            "their oracle reads shapes through jaxlib._hlo.HloInstruction.shape (jaxlib 0.12); "
            "the recorded texts come from the tpu group, which pins jax 0.12 anyway",
        ),
        Gate(
            "hlo-instruction-shape",
            ">=0.12",
            "tests/harness/test_versions.py, the printed shape against HloInstruction.shape",
            "jaxlib._hlo.HloInstruction.shape appeared in jaxlib 0.12; older jaxlibs are read "
            "through the shape XLA prints",
        ),
    )
}


NEWER_SYNTAX_GATE = "xla-parser-reads-newer-hlo-syntax"
_NEWER_SYNTAX = re.compile(r"%?[\w.\-]+#\d+[,)]|, order=[A-Z]+")


def uses_newer_hlo_syntax(hlo_text: str) -> bool:
    """Whether HLO text names a tuple output as an operand (``%name#N``) or gives a compare an
    ``order=``: XLA's parser reads those only where ``NEWER_SYNTAX_GATE`` holds."""
    return _NEWER_SYNTAX.search(hlo_text) is not None


def running_jax() -> str:
    import jax

    return jax.__version__


RECORD_VARIABLE = "KATAS_GATED_FACTS"
# (gate, held) of each fact() evaluated and recorded during the running test, in order
RECORDED: list[tuple[str, bool]] = []


def check_all_facts() -> bool:
    """``KATAS_CHECK_ALL_FACTS=1`` asserts every gated fact on any JAX (a gated-off fact that
    does not hold then fails its test)."""
    return os.environ.get("KATAS_CHECK_ALL_FACTS") == "1"


def recording() -> bool:
    """``KATAS_GATED_FACTS=record``: a gated fact that is off on the running JAX is evaluated and
    recorded (the JUnit property ``gated-fact``, :mod:`.gated`) instead of asserted, so every
    other outcome is what a plain run gives (``katas upgrade-report`` runs its tests so)."""
    return os.environ.get(RECORD_VARIABLE) == "record"


def holds(name: str) -> bool:
    """Whether the gated fact ``name`` (a key of ``GATES``) is asserted on the running JAX."""
    return check_all_facts() or in_range(running_jax(), GATES[name].spec)


def checked(name: str) -> bool:
    """Whether a test evaluates the gated fact ``name`` in a :func:`fact` block: where it is
    asserted, and where it is recorded."""
    return holds(name) or recording()


@contextmanager
def fact(name: str | None) -> Iterator[None]:
    """Around a gated fact's assertions inside a test (``with check, versions.fact(name):``):
    where the fact is off and recorded, a failure in the block is recorded, not raised; where it
    is asserted (or ``name`` is None: the case is not gated), the block asserts as written."""
    if name is None or holds(name) or not recording():
        yield
        return
    try:
        yield
    except Exception:  # noqa: BLE001 - any failure of the fact's block is the fact failing
        RECORDED.append((name, False))
    else:
        RECORDED.append((name, True))


def requires_jax(name: str) -> pytest.MarkDecorator:
    """Mark a test whose whole fact is gated: it skips, with the gate's reason, elsewhere (when
    recording, it runs there and :mod:`.gated` records its outcome and reports it skipped)."""
    import pytest  # here: phases' programs.py import this module outside pytest

    if recording() and not holds(name):
        return pytest.mark.katas_gate(name)
    return pytest.mark.skipif(not holds(name), reason=skip_reason(name))


def skip_reason(name: str) -> str:
    return f"jax {running_jax()}: {GATES[name].line()}"


def gated_off() -> list[Gate]:
    """The gates whose facts are not checked on the running JAX."""
    return [gate for gate in GATES.values() if not holds(gate.name)]


def header_lines() -> list[str]:
    """What every pytest run prints about version gates (nothing when all facts are checked)."""
    off = gated_off()
    if not off:
        return []
    how = "recorded, not asserted" if recording() else "not checked"
    lines = [f"katas: jax {running_jax()}: {len(off)} fact(s) {how} on this version:"]
    return lines + [f"katas:   {gate.line()}" for gate in off]
