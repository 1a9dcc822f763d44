"""AsyncOps, a pass over the read computations: `-start`/`-update`/`-done` sugar desugared
into async ops wrapping a computation, and each async chain checked as XLA checks it.
"""

from __future__ import annotations

from xla_inspect.hlo.calls import CallChecks
from xla_inspect.hlo.lexical import split_attributes
from xla_inspect.hlo.model import (
    HloComputation,
    HloInstruction,
    Shape,
    new_computation,
    new_instruction,
)
from xla_inspect.hlo.opcodes import OPCODE_ARITY, async_sugar
from xla_inspect.hlo.rules import ANY_OR_THREAD, ASYNC, BUILT


def _with_parameters(computation: HloComputation, shapes: tuple[str, ...]) -> HloComputation:
    """`computation` with parameters of `shapes` added after its own, where it has fewer."""
    instructions = computation.instructions
    had = sum(1 for i in instructions if i.opcode == "parameter")
    if len(shapes) <= had:
        return computation
    names = {i.name for i in instructions}
    added = tuple(
        new_instruction(
            _unique("async_param", names),
            "parameter",
            shapes[n],
            (),
            "",
            False,
            str(n),
            computation.line_no,
        )
        for n in range(had, len(shapes))
    )
    return new_computation(
        computation.name, added + instructions, computation.is_entry, computation.line_no
    )


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name.N` with the least N not in `taken`; added to `taken`."""
    candidate, n = name, 0
    while candidate in taken:
        n += 1
        candidate = f"{name}.{n}"
    taken.add(candidate)
    return candidate


def _async_shape(shape: str) -> bool:
    """XLA's form for an async-start's or async-update's shape: a tuple of at least two
    elements, the first a tuple (the operands, the result, any state)."""
    elements = Shape(shape).elements
    return len(elements) >= 2 and elements[0].is_tuple


class AsyncOps(CallChecks):
    """Async chains: `-start`/`-update`/`-done` sugar desugared into async ops wrapping a
    computation, and each chain checked as XLA checks it."""

    def async_ops(self, computations: list[HloComputation]) -> list[HloComputation]:
        """Check the async ops as XLA's parser does, and hold each written as sugar the way XLA
        does: `X-start`, `X-update` and `X-done` become async-start, async-update and
        async-done calling a new computation `async_wrapped` (parameters and one X).

        XLA rejects a computation called by both an async-start and another instruction, an
        async-start or async-update shape not of the form ((operands), result, state), an
        update or done without an operand or continuing an async-done, and one that continues
        an async op of another wrapped opcode, computation or execution thread."""
        callers = self.callers
        started = {
            name
            for instruction, _ in callers
            if instruction.opcode == "async-start"
            for name in instruction.called_computations
        }
        for instruction, _ in callers:
            if instruction.opcode not in ASYNC:
                for name in instruction.called_computations:
                    if name in started:
                        raise self.error(
                            instruction.line_no - 1,
                            f"only async ops calling '{name}', which an async-start calls",
                            near=name,
                        )
        ops: dict[int, list[HloInstruction]] = {}
        for instruction, at in callers:
            if instruction.opcode in ASYNC or async_sugar(instruction.opcode) is not None:
                ops.setdefault(at, []).append(instruction)
        taken = {c.name for c in computations}
        # the computation an async op calls -> the operand shapes of its parameters
        parameters: dict[str, tuple[str, ...]] = {}
        result: list[HloComputation] = []
        for at, computation in enumerate(computations):
            if at not in ops:
                result.append(computation)
                continue
            named = {i.name: i for i in computation.instructions}
            # async op -> (the opcode it wraps, the computation it calls, its thread, the
            # start's shape)
            chain: dict[str, tuple[str | None, str, str, str]] = {}
            changed: dict[str, HloInstruction] = {}
            for op in ops[at]:
                line = op.line_no - 1
                sugar = async_sugar(op.opcode)
                generic, wrapped = sugar if sugar is not None else (op.opcode, None)
                thread = op.attribute("async_execution_thread")
                if generic != "async-done" and not _async_shape(op.shape):
                    raise self.error(
                        line,
                        f"a shape ((operands), result, state) for '{op.opcode}', not {op.shape}",
                        near=op.opcode,
                    )
                if generic == "async-start":
                    if wrapped is None:
                        callee = op.called_computations[0]
                        wrapped = self.read[callee].root.opcode
                        if callee not in parameters:
                            parameters[callee] = tuple(
                                i.shape for i in self.read[callee] if i.opcode == "parameter"
                            )
                    else:
                        callee = _unique("async_wrapped", taken)
                        made = self.wrapped_computation(callee, wrapped, op)
                        parameters[callee] = tuple(
                            i.shape for i in made.instructions if i.opcode == "parameter"
                        )
                        result.append(made)
                    chain[op.name] = (wrapped, callee, thread or '"main"', op.shape)
                    link: tuple[str | None, str, str, str] | None = chain[op.name]
                else:
                    if not op.operands:
                        raise self.error(
                            line, f"the async op that '{op.opcode}' continues", near=op.opcode
                        )
                    first = named[op.operands[0]]
                    kind = async_sugar(first.opcode)
                    if (kind[0] if kind is not None else first.opcode) == "async-done":
                        raise self.error(
                            line,
                            f"an async-start or async-update before '{op.opcode}', not the "
                            f"async-done '{first.name}'",
                            near=op.operands[0],
                        )
                    link = chain.get(first.name)
                    if link is not None:
                        self.check_continued(op, wrapped, thread, link)
                        chain[op.name] = link
                        # XLA gives the computation a parameter per operand shape of a sugar
                        # update, or of the start a sugar done continues, where it has fewer
                        if sugar is not None:
                            shape = op.shape if generic == "async-update" else link[3]
                            shapes = tuple(e.text for e in Shape(shape).elements[0].elements)
                            had = parameters[link[1]]
                            if len(shapes) > len(had):
                                parameters[link[1]] = had + shapes[len(had) :]
                if sugar is not None:
                    changed[op.name] = self.desugared(op, generic, link)
            result.append(
                new_computation(
                    computation.name,
                    tuple(changed.get(i.name, i) for i in computation.instructions),
                    computation.is_entry,
                    computation.line_no,
                )
            )
        return [_with_parameters(c, parameters.get(c.name, ())) for c in result]

    def check_continued(
        self,
        op: HloInstruction,
        wrapped: str | None,
        thread: str | None,
        link: tuple[str | None, str, str, str],
    ) -> None:
        """An async-update or async-done `op` (of `wrapped` when written as sugar) continues
        the async op whose (wrapped opcode, computation, thread, start shape) is `link`."""
        line = op.line_no - 1
        if wrapped is not None and wrapped != link[0]:
            suffix = op.opcode[len(wrapped) :]
            raise self.error(
                line, f"'{link[0]}{suffix}' after an async op of '{link[0]}'", near=op.opcode
            )
        calls = op.called_computations
        if calls and calls[0] != link[1]:
            raise self.error(
                line,
                f"calls={link[1]}, the computation of the async op '{op.opcode}' continues",
                near=calls[0],
            )
        if thread is not None and thread != link[2]:
            raise self.error(
                line,
                f"async_execution_thread={link[2]}, the thread of the async op it continues",
                near="async_execution_thread",
            )

    def wrapped_computation(self, name: str, wrapped: str, op: HloInstruction) -> HloComputation:
        """The computation `name` XLA makes for the sugar `op` (`X-start`): one parameter per
        element of the operand tuple in its shape (or per operand `wrapped` takes, when that is
        more) and a ROOT `wrapped` of the result shape with the start's attributes."""
        line = op.line_no - 1
        elements = Shape(op.shape).elements
        operands, result = elements[0].elements, elements[1].text
        arity = OPCODE_ARITY.get(wrapped)
        count = max(len(operands), arity or 0)
        parameters = [
            new_instruction(
                "async_param" if n == 0 else f"async_param.{n}",
                "parameter",
                operands[n].text if n < len(operands) else result,
                (),
                "",
                False,
                str(n),
                op.line_no,
            )
            for n in range(count)
        ]
        kept = [
            f"{key}={value}"
            for key, value in split_attributes(op.attributes_text)
            if key != "async_execution_thread"
        ]
        root = new_instruction(
            wrapped,
            wrapped,
            result,
            tuple(p.name for p in parameters[: arity if arity is not None else count]),
            ", ".join(kept),
            True,
            None,
            op.line_no,
        )
        if (
            wrapped in BUILT
            and wrapped != "tuple"
            and (problem := self.built_problem(root, {p.name: p for p in parameters}))
        ):
            raise self.error(line, problem, near=op.opcode)
        return new_computation(name, (*parameters, root), False, op.line_no)

    def desugared(
        self, op: HloInstruction, generic: str, link: tuple[str | None, str, str, str] | None
    ) -> HloInstruction:
        """The sugar `op` as the generic async op `generic` calling the computation of `link`
        (a start keeps the attributes every instruction takes and its thread; the wrapped op
        has the rest)."""
        pieces = [f"calls={link[1]}"] if link is not None else []
        for key, value in split_attributes(op.attributes_text):
            if generic != "async-start" or key in ANY_OR_THREAD:
                pieces.append(f"{key}={value}")
        return op._replace(opcode=generic, attributes_text=", ".join(pieces))
