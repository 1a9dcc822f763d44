"""The grammar of module header values (`HloModule name, key=value, ...`): a cursor over
the squeezed value and one reader per value form (ints, strings, JSON dicts, shapes, the entry
computation layout, aliasing, buffer donors, frontend and debug attributes).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping

from xla_inspect.hlo.layouts import INT, WORD_END, invalid_layout, layout_problem, read_tail
from xla_inspect.hlo.lexical import ARRAY_SHAPE, ARRAY_SHAPE_PATTERN

# -- the value text, one token stream -----------------------------------------------------------

# piece ::= string | run of text without quotes | '"' (unterminated)
_PIECE = re.compile(r'"(?:[^"\\]|\\.)*+"|[^"]++|"')


# whitespace that separates nothing: not between a word and a word (or a word and its '=');
# the leading lookahead lets the engine skip to whitespace before trying the rest
_GAP = re.compile(r"(?=\s)(?:(?<![\w.\-<])\s++|\s++(?![\w.\-=>]))")


_BOOL = re.compile(r"(?:true|false)" + WORD_END)


_BOOLS = re.compile(r"\{(?:true|false)(?:,(?:true|false))*+\}")  # squeezed: one per parameter


_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')


_NAME = re.compile(r"[A-Za-z_][\w.\-]*+" + WORD_END)


_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][\w.\-]*+=")


_INT64_RANGE = range(-(2**63), 2**64)  # a non-negative int is read as uint64, then bit-cast


# array shapes ',' apart (squeezed text): in a tuple, and as the parameters of an entry layout
_ARRAYS = r"((?>" + ARRAY_SHAPE_PATTERN + r")(?:,(?>" + ARRAY_SHAPE_PATTERN + r"))*+)"


_ARRAY_TUPLE = re.compile(r"\(" + _ARRAYS + r"\)")


_ARRAY_PARAMETERS = re.compile(r"\{\(" + _ARRAYS + r"\)->")


def squeezed(value: str) -> str:
    """`value` without the whitespace that separates nothing (strings kept as they are)."""
    return "".join(
        piece if piece.startswith('"') else _GAP.sub("", piece) for piece in _PIECE.findall(value)
    )


class Mismatch(Exception):
    """The value stops fitting; `expected` says what would have fitted there."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


class Cursor:
    """Reads the squeezed value text from left to right. `parse_module` reads a whole module's
    text (a value may hold one) and gives its header attributes."""

    def __init__(self, text: str, parse_module: Callable[[str], Mapping[str, str]]) -> None:
        self.text = text
        self.pos = 0
        self.parse_module = parse_module

    def peek(self, literal: str) -> bool:
        return self.text.startswith(literal, self.pos)

    def eat(self, literal: str) -> bool:
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str) -> None:
        if not self.eat(literal):
            raise Mismatch(f"'{literal}'")

    def match(self, pattern: re.Pattern[str]) -> str | None:
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group()

    def end(self) -> None:
        if self.pos != len(self.text):
            raise Mismatch("nothing more")

    def excerpt(self) -> str:
        rest = self.text[self.pos : self.pos + 30]
        return f"'{rest}'" if rest else "the end"


# -- the pieces values are made of --------------------------------------------------------------


def read_int(cursor: Cursor) -> None:
    text = cursor.match(INT)
    if text is None or int(text) not in _INT64_RANGE:
        raise Mismatch("a 64-bit integer")


def _parameter(cursor: Cursor) -> None:
    """A parameter number. XLA goes on without one (`(, {})`) and then uses an int it never
    set, so its verdict depends on memory; a missing number is refused here."""
    text = cursor.match(INT)
    if text is None or not 0 <= int(text) < 2**63:  # XLA refuses a negative one
        raise Mismatch("a parameter number, 0 or more")


def read_bool(cursor: Cursor) -> None:
    if cursor.match(_BOOL) is None:
        raise Mismatch("true or false")


# escape ::= '\\' (one of abfnrtv\\'"? | octal{1,3} | 'x' hex+ | 'u' hex{4} | 'U' hex{8})
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]*|[0-7]{1,3}|u[0-9A-Fa-f]{0,4}|U[0-9A-Fa-f]{0,8}|.)")


def _escape_ok(escape: str) -> bool:
    """Whether XLA's C-style unescaping takes `escape` (the text after a backslash); a \\u or
    \\U escape must name a Unicode scalar value (no surrogate, nothing past 10FFFF)."""
    kind, digits = escape[0], escape[1:]
    if kind in "01234567":
        return int(escape, 8) <= 0o377
    if kind == "x":
        return bool(digits) and int(digits, 16) <= 0xFF
    if kind in "uU":
        if len(digits) != (4 if kind == "u" else 8):
            return False
        point = int(digits, 16)
        return point <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF
    return kind in "abfnrtv\\'\"?"


def read_string(cursor: Cursor) -> str:
    text = cursor.match(_STRING)
    if text is None:
        raise Mismatch("a quoted string")
    if "\\" in text and not all(_escape_ok(e) for e in _ESCAPE.findall(text, 1, len(text) - 1)):
        raise Mismatch('a string whose escapes are C escapes (\\n, \\", \\x41, \\101, \\u0041)')
    return text


def _json_dict(cursor: Cursor) -> None:
    """'{' ... '}' with its braces balanced outside strings (all XLA's lexer asks of it)."""
    text = cursor.text
    depth, pos = 0, cursor.pos
    while pos < len(text):
        char = text[pos]
        if char == '"':
            string = _STRING.match(text, pos)
            if string is None:
                raise Mismatch("a closed string in the JSON dict")
            pos = string.end()
            continue
        depth += (char == "{") - (char == "}")
        pos += 1
        if depth == 0:
            cursor.pos = pos
            return
    raise Mismatch("a JSON dict '{...}' with its braces closed")


# shape_index ::= '{' (int (',' int)* ','?)? '}'
def _shape_index(cursor: Cursor) -> None:
    cursor.expect("{")
    while not cursor.eat("}"):
        read_int(cursor)
        if not cursor.eat(","):
            cursor.expect("}")
            return


# shape ::= array_shape | '(' (shape (',' shape)*)? ')' | 'b(' shape ')'
def _shape(cursor: Cursor, in_tuple: bool = False) -> None:
    """One shape; `in_tuple`: an element of a tuple, whose layout XLA validates."""
    if cursor.eat("b("):
        if cursor.peek("(") or cursor.peek("b(") or cursor.peek("token") or cursor.peek("opaque"):
            raise Mismatch("an array shape inside b(...)")
        _shape(cursor, in_tuple)
        cursor.expect(")")
        return
    if cursor.peek("("):
        flat = _ARRAY_TUPLE.match(cursor.text, cursor.pos)
        if flat is not None and _arrays_fine(flat.group(1), True):
            cursor.pos = flat.end()  # a long tuple of arrays, each distinct one checked once
            return
        cursor.expect("(")
        if cursor.eat(")"):
            return
        _shape(cursor, True)
        while cursor.eat(","):
            _shape(cursor, True)
        cursor.expect(")")
        return
    found = ARRAY_SHAPE.match(cursor.text, cursor.pos)
    if found is None:
        raise Mismatch("a shape such as f32[2,3]{1,0}, s32[] or (f32[2]{0}, pred[])")
    problem = _array_problem(found.group(), in_tuple)
    if problem is not None:
        raise Mismatch(problem)
    cursor.pos = found.end()


def _arrays_fine(shapes: str, in_tuple: bool) -> bool:
    """Whether XLA takes each of the array shapes in `shapes` (',' apart), each distinct one
    checked once."""
    distinct = {found.group() for found in ARRAY_SHAPE.finditer(shapes)}
    return all(_array_problem(shape, in_tuple) is None for shape in distinct)


@functools.lru_cache(maxsize=4096)
def _array_problem(shape: str, in_tuple: bool) -> str | None:
    """What XLA refuses in an array shape (as ARRAY_SHAPE matched it), or None. Cached: a
    long entry layout repeats its shapes."""
    if shape.startswith(("token", "opaque")) and not shape.endswith("[]"):
        return f"no dimensions for {shape.partition('[')[0]} (XLA aborts on '{shape}')"
    brace = shape.find("{")
    layout = shape[brace:] if brace >= 0 else ""
    colon = layout.find(":")
    tail = read_tail(layout[colon + 1 : -1]) if colon >= 0 else None
    if layout == "{}" or (tail is not None and not tail.closed):
        return (
            f"a layout such as {{1,0}} or {{1,0:T(8,128)S(1)}} (parts D T L # * E S SC M, in "
            f"that order), not '{layout}'"
        )
    problem = layout_problem(shape)
    if problem is None and tail is not None and tail.padding <= 0:
        problem = f"a positive L(...) padding alignment (XLA aborts on {layout})"
    if problem is None and in_tuple and layout:
        problem = invalid_layout(shape, tail)
    return problem


# original_array ::= '{' (string shape_index?)? '}'
def original_array(cursor: Cursor) -> None:
    cursor.expect("{")
    if cursor.peek('"'):
        read_string(cursor)
        if cursor.peek("{"):
            _shape_index(cursor)
    cursor.expect("}")


# -- one reader per attribute ---------------------------------------------------------------------


def whole_value(read: Callable[[Cursor], None]) -> Callable[[Cursor], None]:
    """`read`, then the end of the value."""

    def whole(cursor: Cursor) -> None:
        read(cursor)
        cursor.end()

    return whole


# bool_list ::= bool | '{' (bool (',' bool)*)? '}'
def bool_list(cursor: Cursor) -> None:
    if cursor.match(_BOOL) is not None or cursor.match(_BOOLS) is not None:
        return
    cursor.expect("{")
    if cursor.eat("}"):
        return
    read_bool(cursor)
    while cursor.eat(","):
        read_bool(cursor)
    cursor.expect("}")


# entry_computation_layout ::= '{' '(' (shape (',' shape)* ','?)? ')' '->' shape '}'
def computation_layout(cursor: Cursor) -> None:
    flat = _ARRAY_PARAMETERS.match(cursor.text, cursor.pos)
    if flat is not None and _arrays_fine(flat.group(1), False):
        cursor.pos = flat.end()  # a long list of array shapes, each distinct one checked once
    else:
        cursor.expect("{")
        cursor.expect("(")
        while not cursor.eat(")"):
            _shape(cursor)
            if not cursor.eat(","):
                cursor.expect(")")
                break
        cursor.expect("->")
    _shape(cursor)
    cursor.expect("}")


# input_output_alias ::= '{' (alias (',' alias)* ','?)? '}'
# alias ::= shape_index ':' '(' int ',' shape_index (',' ('may-alias' | 'must-alias'))? ')'
def aliasing(cursor: Cursor) -> None:
    cursor.expect("{")
    while not cursor.eat("}"):
        _shape_index(cursor)
        cursor.expect(":")
        cursor.expect("(")
        _parameter(cursor)
        cursor.expect(",")
        _shape_index(cursor)
        if cursor.eat(","):
            if cursor.match(_NAME) not in ("may-alias", "must-alias"):
                raise Mismatch("may-alias or must-alias")
        cursor.expect(")")
        if not cursor.eat(","):
            cursor.expect("}")
            break


# buffer_donor ::= '{' (donor (',' donor)* ','?)? '}'     donor ::= '(' int ',' shape_index ')'
def buffer_donor(cursor: Cursor) -> None:
    cursor.expect("{")
    while not cursor.eat("}"):
        cursor.expect("(")
        _parameter(cursor)
        cursor.expect(",")
        _shape_index(cursor)
        cursor.expect(")")
        if not cursor.eat(","):
            cursor.expect("}")
            break


# frontend_attributes ::= '{' (name '=' (string | json_dict) (',' name '=' ...)*)? '}'
def frontend_attributes(cursor: Cursor) -> None:
    cursor.expect("{")
    if cursor.eat("}"):
        return
    while True:
        if cursor.match(_ATTRIBUTE_NAME) is None:
            raise Mismatch("a name=value pair")
        string_or_json_dict(cursor)
        if not cursor.eat(","):
            break
    cursor.expect("}")


def string_or_json_dict(cursor: Cursor) -> None:
    if cursor.peek("{"):
        _json_dict(cursor)
    elif not cursor.peek('"'):
        raise Mismatch("a quoted string or a JSON dict {...}")
    else:
        read_string(cursor)


# debug_attributes ::= '{' (original_array ':' (entry | '(' (entry (',' entry)*)? ')')
#                       (',' ...)*)? '}'
# entry ::= '{' field (',' field)* '}'
# field ::= 'log_mode=' ('default' | 'fusion_debugger') | ('callback_id=' | 'op_id=') int
#         | 'partitioned=' bool
def debug_attributes(cursor: Cursor) -> None:
    cursor.expect("{")
    if cursor.eat("}"):
        return
    while True:
        original_array(cursor)
        cursor.expect(":")
        if cursor.eat("("):
            if not cursor.eat(")"):
                _debug_entry(cursor)
                while cursor.eat(","):
                    _debug_entry(cursor)
                cursor.expect(")")
        else:
            _debug_entry(cursor)
        if not cursor.eat(","):
            break
    cursor.expect("}")


def _debug_entry(cursor: Cursor) -> None:
    cursor.expect("{")
    while True:
        name = cursor.match(_ATTRIBUTE_NAME)
        if name == "log_mode=":
            if cursor.match(_NAME) not in ("default", "fusion_debugger"):
                raise Mismatch("log_mode=default or log_mode=fusion_debugger")
        elif name in ("callback_id=", "op_id="):
            read_int(cursor)
        elif name == "partitioned=":
            read_bool(cursor)
        else:
            raise Mismatch("log_mode=, callback_id=, op_id= or partitioned=")
        if not cursor.eat(","):
            break
    cursor.expect("}")
