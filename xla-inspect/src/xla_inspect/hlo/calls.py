"""CallChecks, a pass over the read computations: each call's computation exists and has
the parameters and result its caller needs, what the instructions that build shapes from
operands allow, and the entry's input_output_alias.
"""

from __future__ import annotations

import re

from xla_inspect.hlo.lexical import match_close, split_top_level
from xla_inspect.hlo.model import (
    CALL_ATTRIBUTE_KEYS,
    CALL_KEY_START,
    HloComputation,
    HloInstruction,
    Shape,
)
from xla_inspect.hlo.module import ModuleReader
from xla_inspect.hlo.rules import (
    BUILT,
    CALL_KEYS,
    CALL_LISTS,
    CALLERS,
    LOOKS_AT_OPERANDS,
    ONE_DIMENSION,
)
from xla_inspect.hlo.shapes import compatible_shapes, element_count_problem, shape_problem, squeezed

# the output indices of input_output_alias's entries: `{1, 0}: (...)` (one per entry)
_OUTPUT_INDEX = re.compile(r"\{([^{}]*)\}\s*:").findall


_BRACED_CALL = re.compile(
    CALL_KEY_START + r"(?<![\w.\-])(" + "|".join(sorted(CALL_KEYS - CALL_LISTS)) + r")=\{"
).search


_BRANCHES = re.compile(r"(?<![\w.\-])branch_computations=\s*\{([^{}]*)\}").search


_DIMENSIONS = re.compile(r"(?<![\w.\-])dimensions=\s*\{([^{}]*)\}").search


_USE_GLOBAL_DEVICE_IDS = re.compile(r"(?<![\w.\-])use_global_device_ids=\s*true\b").search


_CHANNEL_ID = re.compile(r"(?<![\w.\-])channel_id=").search


_CHANNEL_VALUE = re.compile(r"(?<![\w.\-])channel_id=\s*(-?[0-9]+)").search


_OUTFEED_SHAPE = re.compile(r"(?<![\w.\-])outfeed_shape=").search


_LAYOUT_CONSTRAINTS = re.compile(r"(?<![\w.\-])operand_layout_constraints=\s*\{").search


_CALLED_NAME = re.compile(
    CALL_KEY_START + r"(?<![\w.\-])" + CALL_ATTRIBUTE_KEYS + r"=(?:\{([^{}]*)\}|%?([\w.\-]+))"
)


class CallChecks(ModuleReader):
    """What XLA checks of each call once every computation is read: the called computations'
    parameters and results, and what the instructions that build shapes from them allow."""

    def check_output_indices(self, aliasing: str, entry: HloComputation) -> None:
        """Each output index input_output_alias names is an index of the entry's result shape
        (XLA's ShapeUtil::IndexIsValid: each number an element of the tuple at its level)."""
        result = Shape(entry.root.shape)
        for found in _OUTPUT_INDEX(aliasing):
            shape = result
            for number in (int(n) for n in found.split(",") if n.strip()):
                elements = shape.elements
                if not 0 <= number < len(elements):
                    line = next(i for i, t in enumerate(self.lines) if "input_output_alias" in t)
                    raise self.error(
                        line,
                        f"an output index of the entry's result shape {result.text} in"
                        f" input_output_alias, not {{{found.strip()}}}",
                        near="input_output_alias",
                    )
                shape = elements[number]

    def check_calls(self, order: dict[str, int], computations: list[HloComputation]) -> None:
        """Every computation an instruction calls is defined in the module before the
        computation of the caller (XLA's parser resolves calls as it reads), and each
        instruction of the opcodes XLA checks as it builds them passes check_built."""
        named: dict[int, dict[str, HloInstruction]] = {}
        # a tuple's or reshape's verdict depends on its shape and its operands' count or shape
        shaped: dict[tuple[str, str, str], str | None] = {}
        for instruction, at in self.callers:
            opcode = instruction.opcode
            if opcode == "broadcast" and "dimensions=" in instruction.attributes_text:
                continue
            if opcode in BUILT:
                if at not in named and opcode in LOOKS_AT_OPERANDS:
                    named[at] = {i.name: i for i in computations[at].instructions}
                if opcode == "tuple" or (opcode == "reshape" and instruction.operands):
                    operands = instruction.operands
                    key = (
                        opcode,
                        instruction.shape,
                        str(len(operands)) if opcode == "tuple" else named[at][operands[0]].shape,
                    )
                    if key not in shaped:
                        shaped[key] = self.built_problem(instruction, named.get(at, {}))
                    if shaped[key] is not None:
                        self.check_built(instruction, named.get(at, {}))
                else:
                    self.check_built(instruction, named.get(at, {}))
                if instruction.opcode not in CALLERS:
                    continue
            text = instruction.attributes_text
            start = text.find("metadata={")
            if start >= 0 and (end := text.find("}", start)) >= 0:  # names no computation
                text = text[:start] + text[end + 1 :]
            if "={" in text and (braced := _BRACED_CALL(text)) is not None:
                # left as written only where it holds no instruction (`to_apply={}`)
                raise self.error(
                    instruction.line_no - 1,
                    f"a computation name or instructions in braces for '{braced[1]}'",
                    near=braced[0],
                )
            found = _CALLED_NAME.findall(text)
            if found and all(not listed and order.get(single, at) < at for listed, single in found):
                continue
            names = instruction.called_computations
            for name in names:
                if name not in order:
                    raise self.error(
                        instruction.line_no - 1,
                        f"a computation named '{name}' defined in the module",
                        near=name,
                    )
            for name in names:
                if order[name] >= at:
                    raise self.error(
                        instruction.line_no - 1,
                        f"computation '{name}' defined before the computation that "
                        "calls it (XLA resolves calls in order)",
                        near=name,
                    )

    def check_built(self, instruction: HloInstruction, defined: dict[str, HloInstruction]) -> None:
        """What XLA's parser checks when it builds `instruction` (`defined`: the instructions of its
        computation by name), as built_problem says."""
        problem = self.built_problem(instruction, defined)
        if problem is not None:
            raise self.error(instruction.line_no - 1, problem, near=instruction.opcode)

    def built_problem(
        self, instruction: HloInstruction, defined: dict[str, HloInstruction]
    ) -> str | None:
        """Why XLA's parser cannot build `instruction`, or None: a tuple's shape has one
        element per operand; a reshape keeps the element count; recv and infeed have a
        non-empty tuple shape; a conditional's predicate is a scalar pred (true/false
        computations) or s32 (branch_computations); all-reduce and reduce-scatter take
        use_global_device_ids=true only with a channel_id; dynamic-reshape has an operand, dot
        and convolution two or more, reduce and reduce-window an even number; a
        dynamic-slice has its operand and one index vector or one index per dimension (a
        dynamic-update-slice the same after its update); a concatenate names one dimension; a
        custom-call's operand_layout_constraints give one shape per operand, each the
        operand's; a send-done or recv-done of a send or recv has its channel_id (or none when
        that has none); partition-id and replica-id are u32[] (XLA's parser crashes on
        another shape)."""
        opcode, operands = instruction.opcode, instruction.operands
        count = len(operands)
        if opcode in ("partition-id", "replica-id"):
            shape = instruction.shape
            return (
                None if shape.partition("{")[0] == "u32[]" else f"u32[] for '{opcode}', not {shape}"
            )
        if opcode in ONE_DIMENSION:
            found = _DIMENSIONS(instruction.attributes_text)
            if found is not None and (not found[1].strip() or "," in found[1]):
                return f"one dimension in dimensions= of '{opcode}', not {{{found[1]}}}"
        if opcode == "outfeed":
            found = _OUTFEED_SHAPE(instruction.attributes_text)
            if found is None:
                return None
            given = squeezed(split_top_level(instruction.attributes_text[found.end() :])[0])
            problem = shape_problem(given)
            return None if problem is None else f"an outfeed_shape XLA reads: {problem}"
        if opcode == "scatter":
            return None if count % 2 else f"an odd number of operands for 'scatter', not {count}"
        if opcode == "conditional":
            branches = _BRANCHES(instruction.attributes_text)
            wanted = 3 if branches is None else len(split_top_level(branches[1])) + 1
            if count != wanted:
                return (
                    f"{wanted} operands for this conditional (the branch index or predicate, "
                    f"then one per branch), not {count}"
                )
        if opcode == "broadcast":
            # (a broadcast without dimensions= reaches here: XLA requires them of a
            # non-scalar operand only)
            if operands and Shape(defined[operands[0]].shape).dims:
                return f"dimensions={{...}} for 'broadcast' of {defined[operands[0]].shape}"
            return None
        if opcode in ("dot", "convolution"):
            return f"two or more operands for '{opcode}', not {count}" if count < 2 else None
        if opcode in ("reduce", "reduce-window"):
            return f"an even number of operands for '{opcode}', not {count}" if count % 2 else None
        if opcode == "dynamic-reshape":
            if not operands:
                return "an operand for 'dynamic-reshape'"
            rank = len(Shape(instruction.shape).dims)
            if count != rank + 1:
                return (
                    f"one dimension size operand per result dimension for 'dynamic-reshape' "
                    f"({rank}) after its operand, not {count - 1}"
                )
            return element_count_problem(defined[operands[0]].shape, instruction.shape, True)
        if opcode == "concatenate":
            found = _DIMENSIONS(instruction.attributes_text)
            if found is not None and (not found[1].strip() or "," in found[1]):
                return f"one dimension to concatenate along, not dimensions={{{found[1]}}}"
            return None
        if opcode in ("dynamic-slice", "dynamic-update-slice"):
            before = 1 if opcode == "dynamic-slice" else 2
            if count < before:
                return f"{before} or more operands for '{opcode}', not {count}"
            rank = len(Shape(defined[operands[0]].shape).dims)
            vector = count == before + 1 and len(Shape(defined[operands[-1]].shape).dims) == 1
            if count != before + rank and not vector:
                counts = " or ".join(map(str, sorted({before + 1, before + rank})))
                return (
                    f"{counts} operands for '{opcode}' (one index vector or one index per "
                    f"dimension of {defined[operands[0]].shape}), not {count}"
                )
            return None
        if opcode == "custom-call":
            return self.layout_constraints_problem(instruction, defined)
        if opcode in ("send-done", "recv-done"):
            start = defined.get(operands[0]) if operands else None
            if start is not None and start.opcode == opcode[:4]:
                ours, theirs = (
                    int(found[1]) if (found := _CHANNEL_VALUE(i.attributes_text)) else None
                    for i in (instruction, start)
                )
                if ours != theirs:
                    return (
                        f"the channel_id of its '{start.opcode}' ({theirs}) for '{opcode}', "
                        f"not {ours}"
                    ).replace("None", "none")
            return None
        if opcode in ("all-reduce", "all-reduce-start", "reduce-scatter"):
            text = instruction.attributes_text
            if _USE_GLOBAL_DEVICE_IDS(text) and not _CHANNEL_ID(text):
                return f"a channel_id for '{opcode}' with use_global_device_ids=true"
            return None
        shape = Shape(instruction.shape)
        if opcode == "tuple":
            if not shape.is_tuple or len(shape.elements) != count:
                return (
                    f"a tuple shape of {count} element{'s' if count != 1 else ''} for "
                    f"{count} operand{'s' if count != 1 else ''}, not {instruction.shape}"
                )
        elif opcode == "reshape" and operands:
            return element_count_problem(defined[operands[0]].shape, instruction.shape)
        elif opcode in ("recv", "infeed"):
            if not shape.elements:
                return f"a non-empty tuple shape for '{opcode}', not {instruction.shape}"
        elif opcode == "conditional" and operands:
            predicate = Shape(defined[operands[0]].shape)
            wanted = "s32" if "branch_computations=" in instruction.attributes_text else "pred"
            if predicate.dims != () or predicate.dtype != wanted:
                return (
                    f"a scalar {wanted}[] as the first operand of a conditional with "
                    f"{'branch_computations' if wanted == 's32' else 'true/false_computation'}"
                    f", not {predicate.text}"
                )
        return None

    def layout_constraints_problem(
        self, instruction: HloInstruction, defined: dict[str, HloInstruction]
    ) -> str | None:
        """Why a custom-call's operand_layout_constraints do not fit its operands, or None."""
        found = _LAYOUT_CONSTRAINTS(instruction.attributes_text)
        if found is None:
            return None
        text = instruction.attributes_text
        close = match_close(text, found.end() - 1)
        listed = [squeezed(p) for p in split_top_level(text[found.end() : close])]
        listed = [p for p in listed if p]
        for given in listed:
            if (problem := shape_problem(given)) is not None:
                return f"operand_layout_constraints of shapes XLA reads: {problem}"
        operands = instruction.operands
        if len(listed) != len(operands):
            return (
                f"{len(operands)} operand layout constraint{'s' if len(operands) != 1 else ''}"
                f" (one per operand), not {len(listed)}"
            )
        for number, (given, name) in enumerate(zip(listed, operands, strict=True)):
            if not compatible_shapes(Shape(given), Shape(defined[name].shape)):
                return (
                    f"operand layout constraint {number} of the operand's shape "
                    f"{defined[name].shape}, not {given}"
                )
        return None
