"""Phase 8's oracles: op counts from MLIR's own walk of a lowered module (and xla_inspect's
census), HLO opcodes from XLA's own StableHLO -> HLO conversion, and what an exported function
accepts, measured by calling it.

Each function takes a program, its lowering or a module's text, never the kata's answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.lib import _jax  # pyright: ignore[reportPrivateImportUsage]  # XLA's converter
from jax.extend.mlir import ir

from xla_inspect.parse import parse_hlo
from xla_inspect.stablehlo import stablehlo_op_census

# instructions a conversion adds around the op itself (operands, results unpacked, the second
# half of an asynchronous pair)
_PLUMBING = {"parameter", "constant", "tuple", "get-tuple-element", "broadcast"}


def xla_hlo(stablehlo_text: str) -> str:
    """The HLO text of XLA's own conversion of a StableHLO module's text."""
    return _jax.mlir.mlir_module_to_xla_computation(
        stablehlo_text, use_tuple_args=False, return_tuple=False
    ).as_hlo_text()


def hlo_census(lowered) -> Counter:
    """Opcode census of XLA's own HLO conversion of a lowered program."""
    module = parse_hlo(lowered.as_text(dialect="hlo"))
    return Counter(i.opcode for computation in module for i in computation)


def hand_written_censuses(text: str) -> tuple[Counter, Counter]:
    """(op census of a StableHLO module's text, opcode census of XLA's HLO conversion of it)."""
    module = parse_hlo(xla_hlo(text))
    # parsed by MLIR, walked like any module
    return (
        stablehlo_op_census(text),
        Counter(i.opcode for computation in module for i in computation),
    )


def walk_census(lowered) -> Counter:
    """MLIR's own walk over every operation, minus the enclosing module."""
    census: Counter = Counter()

    def visit(operation):
        census[operation.name] += 1
        return ir.WalkResult.ADVANCE

    lowered.compiler_ir("stablehlo").operation.walk(visit)
    census["builtin.module"] -= 1
    return +census


def _probe_opcode(hlo_text: str) -> str | None:
    """The opcode of the instruction XLA made of the op at loc("probe"): the one instruction of
    the entry computation named after that location, once the plumbing around it is set aside;
    None when the conversion folded the op away or left no single such instruction."""
    entry = next(c for c in parse_hlo(hlo_text) if c.is_entry)
    made = [i.opcode for i in entry if i.name == "probe" or i.name.startswith("probe.")]
    if len(made) > 1:
        made = [op for op in made if op not in _PLUMBING and not op.endswith("-done")]
    return made[0] if len(made) == 1 else None


def converted_ops(ops: Iterable[str], probe_modules: Callable[[str], Iterable[str]]) -> dict:
    """op -> the opcode of XLA's conversion of it, for every op some module of
    ``probe_modules(op)`` instantiates (MLIR parses and verifies the module first, with the op
    in it once)."""
    bank = {}
    for op in ops:
        for text in probe_modules(op):
            try:
                if stablehlo_op_census(text)[op] != 1:
                    continue
                opcode = _probe_opcode(xla_hlo(text))
            except Exception:  # noqa: BLE001  (not this form of the op: try the next)
                continue
            if opcode is not None:
                bank[op] = opcode
                break
    return bank


def np_mlp(x, w1, w2):
    """The exported MLP in NumPy: tanh(x @ w1) @ w2."""
    return np.tanh(x @ w1) @ w2


def exported_call_runs(fn, symbolic: str, dtype, shape) -> bool:
    """Whether ``fn`` exported for float32 x of the symbolic shape runs on ones of ``shape``
    and ``dtype`` (the call's refusal is the fact measured)."""
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(symbolic), jnp.float32)
    exported = jax.export.deserialize(jax.export.export(jax.jit(fn))(x).serialize())
    try:
        exported.call(np.ones(shape, dtype))
    except Exception:  # noqa: BLE001  (the call's refusal is the fact measured)
        return False
    return True


def stablehlo_ops(lowered) -> dict[str, int]:
    """stablehlo.* ops of a lowered module, counted by xla_inspect's walk."""
    census = stablehlo_op_census(lowered)
    return {op: n for op, n in census.items() if op.startswith("stablehlo.")}


def shape_assertions(exported) -> int:
    """How many `shape_assertion` custom calls (the checks a symbolic export runs on the call's
    shapes) the exported module holds, read with MLIR."""
    from jax._src.interpreters import mlir

    found = 0

    def visit(operation):
        nonlocal found
        if operation.name == "stablehlo.custom_call":
            target = ir.StringAttr(operation.attributes["call_target_name"]).value
            found += target == "shape_assertion"
        return ir.WalkResult.ADVANCE

    with mlir.make_ir_context():
        ir.Module.parse(exported.mlir_module()).operation.walk(visit)
    return found


def unconstrained_batch_export(fn, features: int, rest):
    """``fn`` exported for x float32 (b, features), b a symbol with no constraint, and ``rest``."""
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), jnp.float32)
    return jax.export.export(jax.jit(fn))(x, *rest)
