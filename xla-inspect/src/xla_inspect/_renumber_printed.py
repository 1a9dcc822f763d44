"""Renaming in a few passes over the whole text, for a module in XLA's printed form with '%' on
every name (what XLA and JAX print): the fast path of `renumber_names`.

`renamed_printed(text)` gives what `_renumber_walk.Renamer` gives, or None when the text is not
in that form (then the walk renames it).
"""

from __future__ import annotations

import re
from itertools import compress

from xla_inspect._canonical_names import RESERVED, computation_names
from xla_inspect.model import CALL_ATTRIBUTES

__all__ = ["renamed_printed"]

# The same renaming in a few passes over the whole text, for a module in XLA's printed form
# with '%' on every name (what XLA and JAX print). Each line after the module's must match
# _PRINTED_LINE as a computation header, an instruction, a closing brace or a blank line ('%' on
# every name and nowhere else; no whitespace or comment that XLA would not print), and each
# instruction name must be defined once in the whole module, none of them a computation's
# name. Then every '%name' stands as a name and one table renames them all; any other module
# goes to the walk above.
_P_WORD = r"[A-Za-z_][A-Za-z0-9_.\-]*+"  # an ASCII _WORD: other letters send text to the walk
_P_STRING = r'"[^"\\%\n]*+(?:\\[^%\n][^"\\%\n]*+)*+"'
_P_COMMENT = r"/\*index=[0-9]+\*/"  # the only comment XLA prints: it numbers long lists


def _p_group(depth: int, opening: str = r"[(\[{]") -> str:
    """A bracket group nested up to `depth` deep, without '%', newlines, "'" or a '/' outside
    strings and comments (any closing bracket closes any opening one, as in Renamer._close)."""
    inner = rf"""[^(){{}}\[\]"'/%\n]++|{_P_STRING}|{_P_COMMENT}"""
    if depth > 1:
        inner += "|" + _p_group(depth - 1)
    return rf"{opening}(?:{inner})*+[)\]}}]"


_P_VALUE = rf"""(?:[^\s,(){{}}\[\]"'/%]++|{_P_STRING}|{_p_group(8)})++"""
_P_SHAPE = (
    r"(?:[a-z][a-z0-9]*+\[[0-9,<=?]*+\](?:\{[0-9:][^{}\s%]*+\})?+"  # f32[8,16]{1,0}
    rf"|{_p_group(8, r'\(')})"  # a tuple
)
_P_NAME = rf"%{_P_WORD}"
_P_NAMES = rf"\{{(?:{_P_NAME}(?:, {_P_NAME})*+)?+\}}"
_P_OPERAND = rf"(?:{_P_NAME}|(?:{_P_COMMENT})?+(?:{_P_SHAPE} )?+{_P_NAME})"
_P_CALL_KEYS = "|".join(CALL_ATTRIBUTES)
_P_ATTRIBUTE = (
    rf", (?:(?:{_P_CALL_KEYS})={_P_NAME}|(?:called|branch)_computations={_P_NAMES}"
    rf"|control-predecessors={_P_NAMES}"
    rf"|(?!(?:{_P_CALL_KEYS}|control-predecessors)=){_P_WORD}={_P_VALUE})"
)
_P_PARAMETER = rf"(?:{_P_COMMENT})?+{_P_WORD}: {_P_SHAPE}"
_P_SIGNATURE = rf"(?:{_P_PARAMETER}(?:, {_P_PARAMETER})*+)?+"
# The module's line, after whole-line comments (as files of XLA's modules often start).
_PRINTED_MODULE_LINE = re.compile(
    rf"(?://[^%\n]*+\n)*+HloModule [^\s,%]+(?:, {_P_WORD}={_P_VALUE})*+\n"
)
# The lines after it, one match each: an instruction's (name, opcode, parameter number), a
# header's (ENTRY, name, signature), a body's closing brace, a blank line, or any other line.
_PRINTED_LINE = re.compile(
    rf"  (?:ROOT )?%({_P_WORD}) = {_P_SHAPE} ({_P_WORD})(?:(?<= parameter)\(([0-9]++)\)"
    rf"|(?<= constant){_p_group(8, r'\(')}"
    rf"|(?<! parameter)(?<! constant)\((?:{_P_OPERAND}(?:, {_P_OPERAND})*+)?+\))"
    rf"(?:{_P_ATTRIBUTE})*+\n"
    rf"|(ENTRY )?%({_P_WORD}) \(({_P_SIGNATURE})\) -> {_P_SHAPE} \{{\n"
    rf"|(\}})(?:, {_P_WORD}={_P_VALUE})*+(?:\n|\Z)"
    r"|[ \t]*+\n"
    r"|([^\n]++)"
)
_PRINTED_NAME = re.compile(rf"%({_P_WORD})")  # in such a module, every '%' starts a name
# The computations that call attributes name (lists: called_computations, branch_computations).
_PRINTED_CALL = re.compile(rf"=%({_P_WORD})")
_PRINTED_CALL_LIST = re.compile(r"_computations=\{([^}\n]*)\}")
# A signature's names: in a signature that matches _P_SIGNATURE, a name is any word before ':'.
_PRINTED_SIGNATURE_NAME = re.compile(rf"({_P_WORD})(?=:)")


def renamed_printed(text: str) -> str | None:
    """`text` renamed as Renamer renames it, or None when `text` is not a module in the printed
    form (see above). A reference to an instruction of another computation, which XLA rejects,
    is renamed here as that instruction (the walk keeps it)."""
    module = _PRINTED_MODULE_LINE.match(text)
    if module is None:
        return None
    # Each computation's names, 'name' -> '%new'; all of them in `table`.
    table: dict[str, str] = {}
    headers: list[tuple[str, str, str, dict[str, str]]] = []
    local: dict[str, str] | None = None  # None outside a body
    counts: dict[str, int] = {}
    for name, opcode, number, entry, computation, signature, close, other in _PRINTED_LINE.findall(
        text, module.end()
    ):
        if name:
            if local is None:
                return None
            if number:
                table[name] = local[name] = "%param." + number
            else:
                count = counts.get(opcode, 0)
                counts[opcode] = count + 1
                table[name] = local[name] = f"%{opcode}.{count}"
        elif computation:
            if local is not None:
                return None
            local, counts = {}, {}
            headers.append((entry, computation, signature, local))
        elif close:
            if local is None:
                return None
            local = None
        elif other:
            return None
    if local is not None:
        return None
    computations = computation_names([(header[1], bool(header[0])) for header in headers])
    for name, new in computations.items():
        table[name] = "%" + new
    if len(table) != len(computations) + sum(len(header[3]) for header in headers):
        return None  # a name defined in two computations, or naming a computation too
    called = _PRINTED_CALL.findall(text)
    if "_computations={" in text:
        for names in _PRINTED_CALL_LIST.findall(text):
            called += _PRINTED_NAME.findall(names)
    if not computations.keys() >= set(called):  # a call attribute names an instruction
        return None
    parts: list[str] = _PRINTED_NAME.split(text)
    names = parts[1::2]
    named = list(compress(range(1, len(parts), 2), map(computations.__contains__, names)))
    if len(named) != len(headers) + len(called):
        return None  # an operand names a computation
    # Of those, the headers' names start a line (call attributes' follow '=', '{' or ', ').
    starts = [at for at in named if parts[at - 1].endswith(("\n", "\nENTRY "))]
    if len(starts) != len(headers):
        return None
    try:
        parts[1::2] = map(table.__getitem__, names)
    except KeyError:  # an operand that no instruction defines
        parts[1::2] = [table.get(name) or "%" + name for name in names]
    # A signature's names stand without '%', in the text after the header's name; a reserved
    # word there (never one with a '.') is not a name, as in the walk.
    for at, (_, _, signature, local) in zip(starts, headers, strict=True):
        if signature:
            pieces = _PRINTED_SIGNATURE_NAME.split(signature)
            pieces[1::2] = [
                name
                if (new := local.get(name)) is None
                or ("." not in name and RESERVED.fullmatch(name))
                else new[1:]
                for name in pieces[1::2]
            ]
            parts[at + 1] = f" ({''.join(pieces)}{parts[at + 1][len(signature) + 2 :]}"
    return "".join(parts)
