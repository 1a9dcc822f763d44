"""The attributes of an `HloModule name, key=value, ...` header, checked as XLA's parser checks
them: the names it allows (each once, the reader's job) and the syntax of each value.

Values arrive as the reader keeps them: comments dropped, runs of whitespace as one space. XLA's
lexer reads tokens, so whitespace between tokens is ignored here too, except where it splits a
word (`f32[2 3]` is two numbers) or keeps a name from its `=` (`a ="b"` is not an attribute).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping

from xla_inspect._lexing import ARRAY_SHAPE, ARRAY_SHAPE_PATTERN, DTYPE
from xla_inspect.errors import did_you_mean

# -- the value text, one token stream -----------------------------------------------------------

# piece ::= string | run of text without quotes | '"' (unterminated)
_PIECE = re.compile(r'"(?:[^"\\]|\\.)*+"|[^"]++|"')
# whitespace that separates nothing: not between a word and a word (or a word and its '=');
# the leading lookahead lets the engine skip to whitespace before trying the rest
_GAP = re.compile(r"(?=\s)(?:(?<![\w.\-<])\s++|\s++(?![\w.\-=>]))")
_WORD_END = r"(?![\w.\-])"
_INT = re.compile(r"-?[0-9]++" + _WORD_END)
_BOOL = re.compile(r"(?:true|false)" + _WORD_END)
_BOOLS = re.compile(r"\{(?:true|false)(?:,(?:true|false))*+\}")  # squeezed: one per parameter
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')
_NAME = re.compile(r"[A-Za-z_][\w.\-]*+" + _WORD_END)
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][\w.\-]*+=")
_INT64_RANGE = range(-(2**63), 2**64)  # a non-negative int is read as uint64, then bit-cast

# layout_tail ::= ':' ('D' list(level))? ('T' list(tile_dim)+)? ('L' int_part)? ('#' type_part)?
#                 ('*' type_part)? ('E' int_part)? ('S' int_part)? ('SC' split+)? ('M' int_part)?
# list(item) ::= '(' (item (',' item)*)? ')'      int_part ::= '(' int ')'
# type_part ::= '('? dtype? ')'?                   split ::= '(' int ':' (int (',' int)*)? ')'
# XLA reads the parts in this order and ignores how each ends: a part read halfway (`T(512`,
# `L(`) is kept as far as it got and the next part is tried from there; the layout only has to
# close after the last. A physical shape 'P' is refused for every dense array.
_TAIL_TOKEN = re.compile(r"-?[0-9]+|[A-Za-z_][\w.\-]*|\S")
_DTYPE = re.compile(DTYPE)


class _Tail:
    """A layout's parts after ':', read token by token as XLA's ParseLayout reads them."""

    def __init__(self, text: str) -> None:
        self.tokens = _TAIL_TOKEN.findall(text)
        self.at = 0
        self.tiles: list[list[str]] = []
        self.splits: list[tuple[int, list[int]]] = []
        self.typed = False  # an index or pointer type ('#', '*')
        self.padding = 1
        self.bits = 0
        self.physical = False
        self.closed = False  # set by read

    def peek(self, token: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at] == token

    def eat(self, token: str) -> bool:
        if self.peek(token):
            self.at += 1
            return True
        return False

    def int(self) -> int | None:
        if self.at < len(self.tokens) and _INT.fullmatch(self.tokens[self.at]):
            self.at += 1
            return int(self.tokens[self.at - 1])
        return None

    def items(self, first: str, item: Callable[[], bool]) -> bool:
        """`first` (item (',' item)*)? ')', as far as it goes; whether it closed."""
        if not self.eat(first):
            return False
        if not self.eat(")"):
            while item():
                if not self.eat(","):
                    return self.eat(")")
            return False
        return True

    def int_part(self) -> int | None:
        """'(' int ')', as far as it goes: the int, or None when it is not there."""
        found = self.int() if self.eat("(") else None
        if found is not None:
            self.eat(")")
        return found

    def read(self) -> None:
        """Reads every part; `closed`: the layout's end follows."""
        if self.eat("D"):
            self.items("(", self.level)
        if self.eat("T"):
            while True:
                self.tiles.append([])
                if not self.items("(", self.tile_dim) or not self.peek("("):
                    break
        if self.eat("L"):
            found = self.int_part()
            self.padding = self.padding if found is None else found
        for mark in "#*":
            if self.eat(mark):
                self.eat("(")
                if self.at < len(self.tokens) and _DTYPE.fullmatch(self.tokens[self.at]):
                    self.at += 1
                    self.typed = True
                self.eat(")")
        if self.eat("E"):
            found = self.int_part()
            self.bits = self.bits if found is None else found
        if self.eat("S"):
            self.int_part()
        if self.eat("SC"):
            while self.eat("("):
                dim = self.int()
                if dim is None:
                    break
                self.splits.append((dim, []))
                if not self.items(":", self.split_index) or not self.peek("("):
                    break
        self.physical = self.eat("P")
        if self.eat("M"):
            self.int_part()
        self.closed = self.at == len(self.tokens) and not self.physical

    def level(self) -> bool:
        if not (self.eat("D") or self.eat("C") or self.eat("S") or self.eat("H")):
            return False
        self.eat("+")
        self.eat("~")
        return True

    def tile_dim(self) -> bool:
        found = self.int()
        if found is not None:
            self.tiles[-1].append(str(found))
            return True
        if self.eat("*"):
            self.tiles[-1].append("*")
            return True
        return False

    def split_index(self) -> bool:
        found = self.int()
        if found is None:
            return False
        self.splits[-1][1].append(found)
        return True


@functools.lru_cache(maxsize=1024)
def _read_tail(text: str) -> _Tail:
    """The layout parts in `text` (after ':'), read. Cached: shapes of many sizes share them."""
    tail = _Tail(text)
    tail.read()
    return tail


# array shapes ',' apart (squeezed text): in a tuple, and as the parameters of an entry layout
_ARRAYS = r"((?>" + ARRAY_SHAPE_PATTERN + r")(?:,(?>" + ARRAY_SHAPE_PATTERN + r"))*+)"
_ARRAY_TUPLE = re.compile(r"\(" + _ARRAYS + r"\)")
_ARRAY_PARAMETERS = re.compile(r"\{\(" + _ARRAYS + r"\)->")
_ARRAY_PARTS = re.compile(r"[^\[]*\[([^\]]*)\](?:\{([^}:]*))?")


def _squeezed(value: str) -> str:
    """`value` without the whitespace that separates nothing (strings kept as they are)."""
    return "".join(
        piece if piece.startswith('"') else _GAP.sub("", piece) for piece in _PIECE.findall(value)
    )


class _Mismatch(Exception):
    """The value stops fitting; `expected` says what would have fitted there."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


class _Cursor:
    """Reads the squeezed value text from left to right."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self, literal: str) -> bool:
        return self.text.startswith(literal, self.pos)

    def eat(self, literal: str) -> bool:
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str) -> None:
        if not self.eat(literal):
            raise _Mismatch(f"'{literal}'")

    def match(self, pattern: re.Pattern[str]) -> str | None:
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group()

    def end(self) -> None:
        if self.pos != len(self.text):
            raise _Mismatch("nothing more")

    def excerpt(self) -> str:
        rest = self.text[self.pos : self.pos + 30]
        return f"'{rest}'" if rest else "the end"


# -- the pieces values are made of --------------------------------------------------------------


def _int(cursor: _Cursor) -> None:
    text = cursor.match(_INT)
    if text is None or int(text) not in _INT64_RANGE:
        raise _Mismatch("a 64-bit integer")


def _parameter(cursor: _Cursor) -> None:
    """A parameter number. XLA goes on without one (`(, {})`) and then uses an int it never
    set, so its verdict depends on memory; a missing number is refused here."""
    text = cursor.match(_INT)
    if text is None or not 0 <= int(text) < 2**63:  # XLA refuses a negative one
        raise _Mismatch("a parameter number, 0 or more")


def _bool(cursor: _Cursor) -> None:
    if cursor.match(_BOOL) is None:
        raise _Mismatch("true or false")


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


def _string(cursor: _Cursor) -> str:
    text = cursor.match(_STRING)
    if text is None:
        raise _Mismatch("a quoted string")
    if "\\" in text and not all(_escape_ok(e) for e in _ESCAPE.findall(text, 1, len(text) - 1)):
        raise _Mismatch('a string whose escapes are C escapes (\\n, \\", \\x41, \\101, \\u0041)')
    return text


def _json_dict(cursor: _Cursor) -> None:
    """'{' ... '}' with its braces balanced outside strings (all XLA's lexer asks of it)."""
    text = cursor.text
    depth, pos = 0, cursor.pos
    while pos < len(text):
        char = text[pos]
        if char == '"':
            string = _STRING.match(text, pos)
            if string is None:
                raise _Mismatch("a closed string in the JSON dict")
            pos = string.end()
            continue
        depth += (char == "{") - (char == "}")
        pos += 1
        if depth == 0:
            cursor.pos = pos
            return
    raise _Mismatch("a JSON dict '{...}' with its braces closed")


# shape_index ::= '{' (int (',' int)* ','?)? '}'
def _shape_index(cursor: _Cursor) -> None:
    cursor.expect("{")
    while not cursor.eat("}"):
        _int(cursor)
        if not cursor.eat(","):
            cursor.expect("}")
            return


# shape ::= array_shape | '(' (shape (',' shape)*)? ')' | 'b(' shape ')'
def _shape(cursor: _Cursor, in_tuple: bool = False) -> None:
    """One shape; `in_tuple`: an element of a tuple, whose layout XLA validates."""
    if cursor.eat("b("):
        if cursor.peek("(") or cursor.peek("b(") or cursor.peek("token") or cursor.peek("opaque"):
            raise _Mismatch("an array shape inside b(...)")
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
        raise _Mismatch("a shape such as f32[2,3]{1,0}, s32[] or (f32[2]{0}, pred[])")
    problem = _array_problem(found.group(), in_tuple)
    if problem is not None:
        raise _Mismatch(problem)
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
    tail = _read_tail(layout[colon + 1 : -1]) if colon >= 0 else None
    if layout == "{}" or (tail is not None and not tail.closed):
        return (
            f"a layout such as {{1,0}} or {{1,0:T(8,128)S(1)}} (parts D T L # * E S SC M, in "
            f"that order), not '{layout}'"
        )
    from xla_inspect.parse import _layout_problem  # parse imports this module

    problem = _layout_problem(shape)
    if problem is None and tail is not None and tail.padding <= 0:
        problem = f"a positive L(...) padding alignment (XLA aborts on {layout})"
    if problem is None and in_tuple and layout:
        problem = _invalid_layout(shape, tail)
    return problem


def _invalid_layout(shape: str, tail: _Tail | None) -> str | None:
    """What XLA's layout validation (of tuple elements only) refuses in an array shape's
    layout whose rank fits, or None."""
    parts = _ARRAY_PARTS.match(shape)
    assert parts is not None  # an array shape with a layout
    dims = [int(d.removeprefix("<=")) if d != "?" else -1 for d in parts[1].split(",") if d]
    order = [int(d) for d in parts[2].split(",") if d]
    if sorted(order) != list(range(len(dims))):
        return f"a layout listing each dimension once, not '{shape}'"
    if tail is None:
        return None
    if tail.typed:
        return f"no index or pointer type (#, *) in a dense array's layout, not '{shape}'"
    if tail.bits < 0:
        return f"a non-negative E(...) element size, not '{shape}'"
    for tile in tail.tiles:
        if not tile or any(d != "*" and int(d) <= 0 for d in tile):
            return f"tiles of positive sizes or '*', not '{shape}'"
    split = set[int]()
    for dim, points in tail.splits:
        if not 0 <= dim < len(dims) or dim in split:
            return f"split configs of distinct dimensions below {len(dims)}, not '{shape}'"
        split.add(dim)
        size = dims[order[len(order) - 1 - dim]]
        if points != sorted(set(points)) or any(not 0 < i < size for i in points):
            return f"split indices increasing within the dimension's size, not '{shape}'"
    return None


# original_array ::= '{' (string shape_index?)? '}'
def _original_array(cursor: _Cursor) -> None:
    cursor.expect("{")
    if cursor.peek('"'):
        _string(cursor)
        if cursor.peek("{"):
            _shape_index(cursor)
    cursor.expect("}")


# -- one reader per attribute ---------------------------------------------------------------------


def _whole(read: Callable[[_Cursor], None]) -> Callable[[_Cursor], None]:
    """`read`, then the end of the value."""

    def whole(cursor: _Cursor) -> None:
        read(cursor)
        cursor.end()

    return whole


# bool_list ::= bool | '{' (bool (',' bool)*)? '}'
def _bool_list(cursor: _Cursor) -> None:
    if cursor.match(_BOOL) is not None or cursor.match(_BOOLS) is not None:
        return
    cursor.expect("{")
    if cursor.eat("}"):
        return
    _bool(cursor)
    while cursor.eat(","):
        _bool(cursor)
    cursor.expect("}")


# entry_computation_layout ::= '{' '(' (shape (',' shape)* ','?)? ')' '->' shape '}'
def _computation_layout(cursor: _Cursor) -> None:
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
def _aliasing(cursor: _Cursor) -> None:
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
                raise _Mismatch("may-alias or must-alias")
        cursor.expect(")")
        if not cursor.eat(","):
            cursor.expect("}")
            break


# buffer_donor ::= '{' (donor (',' donor)* ','?)? '}'     donor ::= '(' int ',' shape_index ')'
def _buffer_donor(cursor: _Cursor) -> None:
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
def _frontend_attributes(cursor: _Cursor) -> None:
    cursor.expect("{")
    if cursor.eat("}"):
        return
    while True:
        if cursor.match(_ATTRIBUTE_NAME) is None:
            raise _Mismatch("a name=value pair")
        _string_or_json_dict(cursor)
        if not cursor.eat(","):
            break
    cursor.expect("}")


def _string_or_json_dict(cursor: _Cursor) -> None:
    if cursor.peek("{"):
        _json_dict(cursor)
    elif not cursor.peek('"'):
        raise _Mismatch("a quoted string or a JSON dict {...}")
    else:
        _string(cursor)


# debug_attributes ::= '{' (original_array ':' (entry | '(' (entry (',' entry)*)? ')')
#                       (',' ...)*)? '}'
# entry ::= '{' field (',' field)* '}'
# field ::= 'log_mode=' ('default' | 'fusion_debugger') | ('callback_id=' | 'op_id=') int
#         | 'partitioned=' bool
def _debug_attributes(cursor: _Cursor) -> None:
    cursor.expect("{")
    if cursor.eat("}"):
        return
    while True:
        _original_array(cursor)
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


def _debug_entry(cursor: _Cursor) -> None:
    cursor.expect("{")
    while True:
        name = cursor.match(_ATTRIBUTE_NAME)
        if name == "log_mode=":
            if cursor.match(_NAME) not in ("default", "fusion_debugger"):
                raise _Mismatch("log_mode=default or log_mode=fusion_debugger")
        elif name in ("callback_id=", "op_id="):
            _int(cursor)
        elif name == "partitioned=":
            _bool(cursor)
        else:
            raise _Mismatch("log_mode=, callback_id=, op_id= or partitioned=")
        if not cursor.eat(","):
            break
    cursor.expect("}")


# origin_recovery_table ::= '{' (original_array ':' original_array (',' module_string)?)* '}'
# (no ',' between entries; the string holds a whole HloModule, which must parse)
def _recovery_table(cursor: _Cursor) -> None:
    from xla_inspect.errors import HloParseError
    from xla_inspect.parse import parse_hlo

    cursor.expect("{")
    while not cursor.eat("}"):
        _original_array(cursor)
        cursor.expect(":")
        _original_array(cursor)
        if cursor.eat(","):
            module = _string(cursor)[1:-1]
            try:
                # the escapes undone (non-ASCII text is kept as bytes, which only strings hold)
                text = module.encode().decode("unicode_escape")
                problem = check_module_attributes(parse_hlo(text).attributes)
            except (HloParseError, UnicodeError) as exc:
                raise _Mismatch(f"a string holding an HloModule that parses ({exc})") from None
            if problem is not None:
                raise _Mismatch(f"a string holding an HloModule whose {problem[0]} is {problem[1]}")


# -- the attributes XLA's ParseHloModule allows, each with its value's form ----------------------

_ATTRIBUTES: dict[str, tuple[Callable[[_Cursor], None], str]] = {
    "alias_passthrough_params": (_whole(_bool), "true or false"),
    "allow_spmd_sharding_propagation_to_output": (
        _whole(_bool_list),
        "true, false or a braced list such as {true,false}",
    ),
    "allow_spmd_sharding_propagation_to_parameters": (
        _whole(_bool_list),
        "true, false or a braced list such as {true,false}",
    ),
    "backend_config": (_whole(_string_or_json_dict), "a quoted string or a JSON dict {...}"),
    "buffer_donor": (_whole(_buffer_donor), "{ (0, {}), (1, {0}) }: (parameter, shape index)"),
    "debug_attributes": (
        _whole(_debug_attributes),
        '{ {"name" {0}}: {op_id=1, callback_id=2, partitioned=true, log_mode=default} }',
    ),
    "entry_computation_layout": (
        _whole(_computation_layout),
        "{(shape, ...)->shape} such as {(f32[2,3]{1,0}, s32[])->f32[2]{0}}",
    ),
    "frontend_attributes": (
        _whole(_frontend_attributes),
        '{name="value", other={json}}: name=value pairs, values quoted or JSON dicts',
    ),
    "input_output_alias": (
        _whole(_aliasing),
        "{ {0}: (0, {}, may-alias) }: output index: (parameter, index, may-alias|must-alias)",
    ),
    "is_scheduled": (_whole(_bool), "true or false"),
    "num_partitions": (_whole(_int), "an integer"),
    "origin_recovery_table": (
        _whole(_recovery_table),
        '{ {"a"}: {"b"}, "HloModule ..." }: original array: original array, module text',
    ),
    "replica_count": (_whole(_int), "an integer"),
}


def check_module_attributes(attributes: Mapping[str, str]) -> tuple[str, str] | None:
    """The first header attribute XLA's parser would refuse, as (its name, what was expected:
    one line naming the alternatives, with a did-you-mean for a misspelt name), or None when
    XLA accepts them all. Checks names and value syntax; that a name is not repeated, and what
    only the module's computations can tell (an alias of an output index the result lacks), are
    left to the caller."""
    for name, value in attributes.items():
        known = _ATTRIBUTES.get(name)
        if known is None:
            guess = did_you_mean(name, _ATTRIBUTES)
            return name, f"a module attribute: {', '.join(_ATTRIBUTES)}{guess}"
        read, form = known
        cursor = _Cursor(_squeezed(value))
        try:
            read(cursor)
        except _Mismatch as mismatch:
            return name, f"{form}; {mismatch.expected} at {cursor.excerpt()}"
    return None
