"""The instruction line as XLA prints it, matched by one regular expression (the fast
path), and the small forms the fast path accepts without a further check.
"""

from __future__ import annotations

import re

from xla_inspect.hlo.lexical import ARRAY_SHAPE_PATTERN, FLAT_TUPLE_SHAPE_PATTERN
from xla_inspect.hlo.model import CALL_ATTRIBUTE_KEYS, CALL_KEY_START

# instruction ::= 'ROOT '? '%'? name ' = ' shape ' ' opcode '(' operands ')' (', ' attr)*
# (the common case, on one line: no parentheses inside the operand list). The shape is taken
# loosely here (`dtype[...]{...}` or a tuple) and checked against PRINTED_SHAPE_TEXT once per
# distinct shape text: a full shape pattern in this expression costs a fifth of the read.
# Possessive repeats (`*+`, `++`): no piece can give characters back to the next one, and not
# saving backtrack points makes each match about a sixth faster.
FAST = re.compile(
    r"(?a)[ \t]*+(ROOT )?%?((?!__)[A-Za-z_][\w.\-]*+) = "
    r"([a-z][a-z0-9]*+\[[^\]\n]*+\](?:\{[^{}\n]*+\})?|\((?:[^()\n]++|\([^()\n]*+\))*+\))"
    r" ([a-z][a-z0-9\-]*+)\(([^()\n]*+)\)(?:, ([^\n]*+))?(?=\n|\Z)"
)


PRINTED_SHAPE_TEXT = re.compile(ARRAY_SHAPE_PATTERN + "|" + FLAT_TUPLE_SHAPE_PATTERN).fullmatch


# a backslash and the character it escapes (inside strings)
ESCAPED = re.compile(r"\\.")


# scalar constants that need no check_literal: short numbers of the common types
_PLAIN_FLOAT = re.compile(r"-?[0-9]{1,4}(?:\.[0-9]*)?").fullmatch


_PLAIN_INTEGER = re.compile(r"-?[0-9]{1,9}").fullmatch


PLAIN_SCALAR = {
    "f32[]": _PLAIN_FLOAT,
    "f64[]": _PLAIN_FLOAT,
    "bf16[]": _PLAIN_FLOAT,
    "f16[]": _PLAIN_FLOAT,
    "s32[]": _PLAIN_INTEGER,
    "s64[]": _PLAIN_INTEGER,
    "pred[]": re.compile(r"true|false|[01]").fullmatch,
}


# an attribute name after a ',' in an attribute list (or inside a nested value), or '' where a
# ',', '(' or '{name=' follows a ',' (no name there: a doubled ',' or a bracketed piece, which
# check_attribute_names rejects at the top level)
KEY_AFTER_COMMA = re.compile(
    r",[ \t]*(?:([A-Za-z_][\w.\-]*)=|(?=,|\(|\{[ \t]*[A-Za-z_][\w.\-]*=))"
).findall


# parameter numbers as written: a computation's N parameters are numbered 0 to N-1
NUMBERS = tuple(map(str, range(4096)))


# `key=%name`: the common form, checked cheaply; lists and anything odd take the exact path
# A '{...}' value followed by another attribute without a ',' between them (inside metadata,
# fields are separated by spaces, but no field's value is a brace group)
BRACE_THEN_NAME = re.compile(r"\}[ \t]+[A-Za-z_][\w.\-]*=").search


# A call attribute naming one computation whose name holds a '.' (as XLA numbers them: no
# keyword or type name does), up to the next attribute. Whether an attribute list is well formed
# does not depend on which computation it names (check_calls looks that up): `callee_free`
# replaces the name with '.' to key lists that differ only there (each fusion calls its own).
_CALLEE = re.compile(
    CALL_KEY_START
    + r"(?<![\w.\-])("
    + CALL_ATTRIBUTE_KEYS
    + r"=%?)[A-Za-z_][\w\-]*+\.[\w.\-]*+(?=, |\Z)"
)


def callee_free(tail: str) -> str:
    """`tail` with the computation each call attribute names replaced by '.' (see _CALLEE)."""
    return _CALLEE.sub(r"\1.", tail)
