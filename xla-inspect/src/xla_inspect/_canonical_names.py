"""The canonical names `renumber_names` gives, and the words it never renames.

The ENTRY computation becomes `main`, the others `comp.<n>` in order of definition; inside a
computation a parameter becomes `param.<number>` and any other instruction `<opcode>.<n>`,
counting each opcode from 0 in order of appearance. Both ways of renaming
(`_renumber_walk`, `_renumber_printed`) take their names from here.
"""

from __future__ import annotations

import re

__all__ = ["RESERVED", "computation_names", "local_names"]

# Words XLA's lexer reads as keywords or types: written without '%' they never name anything.
RESERVED = re.compile(
    r"true|false|inf|nan|HloModule|ENTRY|ROOT|maximal|replicated|manual|last_tile_dim_replicate"
    r"|shard_as|shard_like|unknown|unreduced|pred|token|opaque|[su](?:1|2|4|8|16|32|64)"
    r"|f(?:16|32|64)|bf16|c64|c128|f8e[0-9a-z]+|f4e2m1fn"
)

_PARAMETER_NUMBER = re.compile(r"\s*(\d+)\s*")


def computation_names(computations: list[tuple[str, bool]]) -> dict[str, str]:
    """Each computation's new name, from (name, is ENTRY) in order of definition."""
    names: dict[str, str] = {}
    others = 0
    for name, is_entry in computations:
        if is_entry:
            names[name] = "main"
        else:
            names[name] = f"comp.{others}"
            others += 1
    return names


def local_names(definitions: list[tuple[str, str, str]]) -> dict[str, str]:
    """Each instruction's new name, from (name, opcode, payload) in order of definition."""
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    for name, opcode, payload in definitions:
        number = _PARAMETER_NUMBER.fullmatch(payload) if opcode == "parameter" else None
        if number is not None:
            names[name] = f"param.{number[1]}"
        else:
            count = counts.get(opcode, 0)
            names[name] = f"{opcode}.{count}"
            counts[opcode] = count + 1
    return names
