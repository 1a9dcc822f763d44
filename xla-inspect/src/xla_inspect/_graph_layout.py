"""Where each instruction of the fusion graph goes: computations as clusters, and inside each
one sub-cluster per JAX name scope.

A unit is (computation index, scope); scope "" is the computation's own level. Instructions
without a name scope (plain JAX without `jax.named_scope`) are grouped in runs of text order,
which for a scheduled module follows the program from first layer to last. A parameter or
constant used in several clusters is drawn once in each. Nothing here writes `dot` text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xla_inspect._graph_labels import PLAIN
from xla_inspect.model import HloComputation, HloModule
from xla_inspect.op_metadata import op_name, scope

__all__ = ["Layout", "Unit", "lay_out"]

_RUN = 60  # unscoped instructions of a computation beyond this are clustered in runs of it

Unit = tuple[int, str]  # (computation index, name scope); scope "": all of the computation


@dataclass(frozen=True, slots=True)
class Layout:
    """The clusters of the computations drawn; instructions are (computation index, index).

    - `units`: each unit's instructions, in order; `unit_of`: each instruction's unit.
    - `shared`: parameters and constants drawn once per cluster that uses them; `copies`: the
      shared instructions each unit draws.
    - `operands`, `calls`: per computation, per instruction, the operand indices and the
      indices of the drawn computations it calls.
    - `by_computation`: each computation's (scope, instructions), in order.
    - `helper`: per computation, whether it is what a reduce, sort or scatter applies (or a
      fused computation): the first to leave out when over the budget.
    - `sizes`: the nodes each unit draws when not collapsed.
    """

    drawn: Sequence[HloComputation]
    units: dict[Unit, list[int]]
    unit_of: dict[tuple[int, int], Unit]
    shared: set[tuple[int, int]]
    copies: dict[Unit, list[int]]
    operands: list[list[list[int]]]
    calls: list[list[list[int]]]
    by_computation: dict[int, list[tuple[str, list[int]]]]
    helper: list[bool]
    sizes: dict[Unit, int]

    def node_count(self, c: int, collapsed: Collection[Unit], omitted: Collection[int]) -> int:
        """The nodes computation `c` draws with these units collapsed and computations left
        out."""
        if c in omitted:
            return 0
        if (c, "") in collapsed:
            return 1
        return sum(
            1 if name and (c, name) in collapsed else self.sizes[(c, name)]
            for name, _ in self.by_computation.get(c, [])
        )


def lay_out(
    module: HloModule, drawn: Sequence[HloComputation], fused: bool, fused_names: Collection[str]
) -> Layout:
    """The clusters of `drawn` (computations of `module`; `fused`: fused ones are drawn)."""
    units: dict[Unit, list[int]] = {}
    unit_of: dict[tuple[int, int], Unit] = {}
    shared: set[tuple[int, int]] = set()
    copies: dict[Unit, list[int]] = {}
    operands: list[list[list[int]]] = []
    index_of = {c.name: k for k, c in enumerate(drawn)}
    calls: list[list[list[int]]] = []
    for c, computation in enumerate(drawn):
        index = {i.name: n for n, i in enumerate(computation.instructions)}
        operands.append([[index[o] for o in i.operands if o in index] for i in computation])
        calls.append(
            [
                [k for name in i.called_computations if (k := index_of.get(name, c)) != c]
                for i in computation
            ]
        )
        users: dict[int, list[int]] = {}
        for n, found in enumerate(operands[c]):
            for operand in found:
                users.setdefault(operand, []).append(n)
        scopes = [scope(op_name(i)) for i in computation.instructions]
        unscoped = [n for n, i in enumerate(computation.instructions) if not scopes[n]]
        unscoped = [n for n in unscoped if computation.instructions[n].opcode not in PLAIN]
        if len(unscoped) > _RUN:
            for start in range(0, len(unscoped), _RUN):
                run = unscoped[start : start + _RUN]
                for n in run:
                    scopes[n] = f"instructions {run[0]}-{run[-1]}"
        for n, instruction in enumerate(computation.instructions):
            where = scopes[n]
            if instruction.opcode in PLAIN:
                user_scopes = sorted({scopes[u] for u in users.get(n, [])})
                if len(user_scopes) == 1:
                    where = user_scopes[0]
                elif len(user_scopes) > 1:
                    shared.add((c, n))
                    for user_scope in user_scopes:
                        copies.setdefault((c, user_scope), []).append(n)
                    where = ""
            key = (c, where)
            units.setdefault(key, []).append(n)
            unit_of[(c, n)] = key
    by_computation: dict[int, list[tuple[str, list[int]]]] = {}
    for (c, where), unit in units.items():
        by_computation.setdefault(c, []).append((where, unit))
    # helpers: fused computations (when drawn) and what reduce, sort, scatter... apply
    applied = {
        name.removeprefix("%")
        for computation in module.computations
        for i in computation
        for key in ("to_apply", "select", "scatter")
        if (name := i.attribute(key))
    }
    helper = [
        not c.is_entry and (c.name in applied or (fused and c.name in fused_names)) for c in drawn
    ]
    sizes = {key: sum((key[0], n) not in shared for n in unit) for key, unit in units.items()}
    for key, shared_here in copies.items():
        sizes[key] = sizes.get(key, 0) + len(shared_here)
    return Layout(
        drawn, units, unit_of, shared, copies, operands, calls, by_computation, helper, sizes
    )
