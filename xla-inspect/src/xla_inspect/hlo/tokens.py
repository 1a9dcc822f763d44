"""TokenReader: offsets into the text, line:col errors, whitespace and comments, attribute
values and shapes by XLA's lexer rules (hlo_lexer.cc).

    shape ::= '(' (shape (',' shape)*)? ')' | dtype '[' (dim (',' dim)*)? ']' layout?
    dim   ::= '<='? int | '?'        layout ::= '{' minor_to_major (':' ...)? '}'
"""

from __future__ import annotations

import re
from functools import cached_property

from xla_inspect.errors import HloParseError
from xla_inspect.hlo.layouts import SKIP_RUN, joins_numbers
from xla_inspect.hlo.lexical import ARRAY_SHAPE_PATTERN, DTYPE, FLAT_TUPLE_SHAPE_PATTERN, is_shape
from xla_inspect.hlo.shapes import LONE_MINUS, shape_problem

# Token-level pieces, after XLA's lexer. skip ::= (whitespace | '/*' ... '*/' | '//' ...)*
SKIP = re.compile(r"(?:[ \t\r\n]+|//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)*")


# name ::= '%'? [a-zA-Z_][a-zA-Z0-9_.-]*
IDENT = re.compile(r"(?a)%?[A-Za-z_][\w.\-]*")


# a layout's text up to its '}' (comments may hold one)
_LAYOUT_BODY = re.compile(r"(?:[^}/]++|//[^\n\r]*+|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/)*+")


ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][\w.\-]*=")


_SIGNED_INT = re.compile(r"-?[0-9]+")


DTYPE_WORD = re.compile(DTYPE + r"(?![\w.\-])")


# strings may be double- or single-quoted, with backslash escapes
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')


# anything else that is not punctuation: numbers, identifiers, dim labels, 2x2, 0_1x1_0, <=
_WORD = re.compile(r"[^\s,=(){}\[\]\"'/]+")


_GROUP_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|[()\[\]{}"\'/]'
)


_OPEN_OF = {")": "(", "]": "[", "}": "{"}


_LAYOUT_START = frozenset("0123456789:-")


# a shape as XLA prints it (used when no layout follows after a space or comment)
_PRINTED_SHAPE = re.compile(
    "(?:" + ARRAY_SHAPE_PATTERN + "|" + FLAT_TUPLE_SHAPE_PATTERN + r")(?=[ \t\r\n,)/])"
)


_CLOSE_OF = {"(": ")", "[": "]", "{": "}"}


# a layout's minor_to_major list
_MINOR_TO_MAJOR = re.compile(r"(?:-?[0-9]+(?:,-?[0-9]+)*)?")


# comments with the blanks around them, each run read as one space (as `value` reads them)
COMMENT_RUN = re.compile(r"[ \t]*(?:/\*[^*]*\*+(?:[^/*][^*]*\*+)*/[ \t]*)+")


# a line that starts another instruction, or closes the computation ('name=' without a blank
# is an attribute name to XLA's lexer)
_NEXT_STATEMENT = re.compile(
    r"\s*+(?:ROOT\s|%[A-Za-z_][\w.\-]*+\s*+=|[A-Za-z_][\w.\-]*+\s++=|\})"
).match


class TokenReader:
    """Reads `text` once, by offsets into it: positions and errors (line:col), whitespace and
    comments, attribute values and shapes by XLA's lexer rules (hlo_lexer.cc)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._cursor = (0, 0)  # (line index, offset of that line's start) last converted

    # -- positions ---------------------------------------------------------------------------
    @cached_property
    def lines(self) -> list[str]:
        """The text's lines, made only when an error shows one."""
        return self.text.split("\n")

    def line_end(self, start: int) -> int:
        """Offset of the newline ending the line that starts at `start` (or the text's end)."""
        end = self.text.find("\n", start)
        return len(self.text) if end < 0 else end

    def line_of(self, pos: int) -> int:
        """0-based line index of offset `pos`."""
        known, offset = self._cursor
        if pos < offset:
            known, offset = 0, 0
        line = known + self.text.count("\n", offset, pos)
        self._cursor = (line, self.text.rfind("\n", 0, pos) + 1)
        return line

    def error(
        self, index: int, expected: str, line: str | None = None, near: str | None = None
    ) -> HloParseError:
        """The error for line `index`; its column is where `near` first stands on the line.
        When it does not (an instruction written over several lines), the line and column are
        where the first word of `near` stands on the instruction's next lines, if it does."""
        shown = self.lines[index] if line is None and index < len(self.lines) else line or ""
        if not near:
            return HloParseError(index + 1, shown, expected)
        ends_word = re.match(r"[\w.\-]", near[-1]) is not None
        pattern = r"(?<![\w.\-])%?" + re.escape(near) + (r"(?![\w.\-])" if ends_word else "")
        found = re.search(pattern, shown)
        if found is not None:
            return HloParseError(index + 1, shown, expected, found.start() + 1)
        if line is None:
            word = re.compile(r"(?<![\w.\-])%?" + re.escape(near.split()[0]))
            for later in range(index + 1, min(index + 40, len(self.lines))):
                text = self.lines[later]
                if _NEXT_STATEMENT(text):
                    break
                found = word.search(text)
                if found is not None:
                    return HloParseError(later + 1, text, expected, found.start() + 1)
        return HloParseError(index + 1, shown, expected)

    def error_at(self, pos: int, expected: str) -> HloParseError:
        pos = min(pos, len(self.text))
        line = self.line_of(pos)
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return HloParseError(line + 1, self.lines[line], expected, column)

    def skip(self, pos: int) -> int:
        match = SKIP.match(self.text, pos)
        assert match is not None  # SKIP matches the empty string too
        return match.end()

    def expect(self, pos: int, token: str, expected: str) -> int:
        """Offset after `token`, which must come next (after whitespace and comments)."""
        pos = self.skip(pos)
        if not self.text.startswith(token, pos):
            raise self.error_at(pos, expected)
        return pos + len(token)

    def stray(self, pos: int, expected: str) -> HloParseError:
        """The error for what stands at `pos`: an unterminated comment or string, or `expected`."""
        text = self.text
        if text.startswith("/*", pos):
            return self.error_at(pos, "'*/' to close the comment")
        if text.startswith(('"', "'"), pos):
            return self.error_at(pos, f"'{text[pos]}' to close the string")
        if pos >= len(text):
            return self.error_at(pos, f"{expected} before the end of the text")
        return self.error_at(pos, expected)

    def unclosed(self, opened: int, found: int | None) -> HloParseError:
        """The error for the bracket at offset `opened`, not closed before the bracket at offset
        `found` (None: the end of the text). It points at the open bracket: where the fix goes."""
        text = self.text
        if found is None:
            before = "the end of the text"
        else:
            column = found - text.rfind("\n", 0, found)
            before = f"'{text[found]}' at {self.line_of(found) + 1}:{column}"
        bracket = text[opened]
        return self.error_at(
            opened, f"'{_CLOSE_OF[bracket]}' to close this '{bracket}' (before {before})"
        )

    def group_end(self, pos: int) -> int:
        """Offset after the bracket closing the one at `pos` (strings and comments skipped)."""
        stack: list[int] = []  # offsets of the open brackets
        text = self.text
        for match in _GROUP_TOKEN.finditer(text, pos):
            token = match.group()
            if token in _CLOSE_OF:
                stack.append(match.start())
            elif token in _OPEN_OF:
                opened = stack.pop()
                if token != _CLOSE_OF[text[opened]]:
                    raise self.unclosed(opened, match.start())
                if not stack:
                    return match.end()
            elif token in "\"'/":
                raise self.stray(match.start(), "a comment ('/*' or '//'), not a lone '/'")
        raise self.unclosed(stack[-1], None)

    def starts_instruction(self, pos: int) -> bool:
        """Whether `ROOT` or `name =` (an instruction's start) stands at `pos`."""
        match = IDENT.match(self.text, pos)
        if match is None:
            return False
        word, end = match.group(), match.end()
        if word == "ROOT":
            return True
        after = self.skip(end)
        return self.text.startswith("=", after) and (after > end or word[0] == "%")

    def value(self, pos: int, single: bool = False) -> tuple[str, int]:
        """An attribute value from `pos`: bracket groups, strings and words up to a ',' or
        closer at depth 0, the next instruction or the end (`single`: one such item only).
        Returns its text (comments dropped, whitespace as one space) and the offset after it."""
        text = self.text
        size = len(text)
        parts: list[str] = []
        stack: list[int] = []  # offsets of the open brackets
        while True:
            skipped = SKIP.match(text, pos)
            assert skipped is not None  # SKIP matches the empty string too
            start = skipped.end()
            if single and parts and not stack:
                break
            sep = " " if start != pos and parts else ""
            if start >= size:
                if stack:
                    raise self.unclosed(stack[-1], None)
                break
            char = text[start]
            if char in "\"'":
                match = _STRING.match(text, start)
                if match is None:
                    raise self.stray(start, "a closed string")
                parts.append(sep + match.group())
                pos = match.end()
            elif char in "({[":
                if not stack:
                    # a whole group at once when it is on one line without comments
                    end = self.group_end(start)
                    raw = text[start:end]
                    if "\n" not in raw and "//" not in raw and "\r" not in raw:
                        if "/*" in raw and "'" not in raw and '"' not in raw:
                            # `/*index=5*/` comments (closed: group_end checked) and no strings
                            raw = COMMENT_RUN.sub(" ", raw)
                        if "/*" not in raw:
                            parts.append(sep + raw)
                            pos = end
                            continue
                stack.append(start)
                parts.append(sep + char)
                pos = start + 1
            elif char in ")}]":
                if not stack:
                    break
                opened = stack.pop()
                if char != _CLOSE_OF[text[opened]]:
                    raise self.unclosed(opened, start)
                parts.append(sep + char)
                pos = start + 1
            elif char == ",":
                if not stack:
                    break
                parts.append(",")
                pos = start + 1
            elif char == "=":
                parts.append(sep + "=")
                pos = start + 1
            elif char == "/":
                raise self.stray(start, "a value, not '/'")
            else:
                if not stack and parts:
                    if self.starts_instruction(start):
                        break
                    key = ATTRIBUTE_NAME.match(text, start)
                    if key is not None:
                        raise self.error_at(start, f"',' before the attribute '{key.group()}'")
                match = _WORD.match(text, start)
                if match is None:  # a character no token starts with (a form feed, say)
                    raise self.stray(start, "a value")
                parts.append(sep + match.group())
                pos = match.end()
        if not parts:
            raise self.error_at(start, "a value after '='")
        return "".join(parts), pos

    # -- shapes --------------------------------------------------------------------------------
    # shape ::= '(' (shape (',' shape)*)? ')' | dtype '[' (dim (',' dim)*)? ']' layout?
    # dim ::= '<='? int | '?'        layout ::= '{' minor_to_major (':' ...)? '}'
    def shape(self, pos: int) -> tuple[str, int]:
        """A shape at `pos` (whitespace and comments allowed between its tokens): its text
        (as printed when it is, else canonical) and the offset after it."""
        text = self.text
        printed = _PRINTED_SHAPE.match(text, pos)
        # a '{' after an array shape may be its layout; after a tuple it is the next token
        if printed is not None and (
            text[pos] == "(" or not text.startswith("{", self.skip(printed.end()))
        ):
            shape = printed.group()
            if (problem := shape_problem(shape)) is not None:
                raise self.error_at(pos, problem)
            return shape, printed.end()
        if text.startswith("(", pos):
            elements = []
            at = self.skip(pos + 1)
            if not text.startswith(")", at):
                while True:
                    element, at = self.shape(at)
                    elements.append(element)
                    at = self.skip(at)
                    if text.startswith(",", at):
                        at = self.skip(at + 1)
                    elif text.startswith(")", at):
                        break
                    else:
                        raise self.stray(
                            at, "',' or ')' in a tuple shape like '(f32[2]{0}, s32[])'"
                        )
            raw = text[pos : at + 1]
            if is_shape(raw):
                return raw, at + 1
            return "(" + ", ".join(elements) + ")", at + 1
        match = DTYPE_WORD.match(text, pos)
        if match is None:
            raise self.stray(pos, "a shape like 'f32[2,3]{1,0}' or '(f32[2], s32[])'")
        dtype = match.group()
        at = self.expect(match.end(), "[", f"'[' after the element type '{dtype}'")
        dims: list[str] = []
        at = self.skip(at)
        if not text.startswith("]", at):
            while True:
                if text.startswith("<=", at):
                    number = _SIGNED_INT.match(text, self.skip(at + 2))
                    if number is None:
                        raise self.stray(self.skip(at + 2), "a bound after '<='")
                    dims.append("<=" + number.group())
                    at = number.end()
                elif text.startswith("?", at):
                    dims.append("?")
                    at += 1
                else:
                    number = _SIGNED_INT.match(text, at)
                    if number is None:
                        raise self.stray(at, "a dimension size (N, <=N or ?)")
                    dims.append(number.group())
                    at = number.end()
                at = self.skip(at)
                if text.startswith(",", at):
                    at = self.skip(at + 1)
                elif text.startswith("]", at):
                    break
                else:
                    raise self.stray(at, "',' or ']' in the dimensions")
        at += 1
        shape = f"{dtype}[{','.join(dims)}]"
        brace = self.skip(at)
        after = self.skip(brace + 1)
        if text.startswith("{", brace) and text[after : after + 1] in _LAYOUT_START:
            body = _LAYOUT_BODY.match(text, brace + 1)
            assert body is not None  # _LAYOUT_BODY matches the empty string too
            close = body.end()  # (a '}' in a comment does not close the layout)
            if close >= len(text) or text[close] != "}":
                raise self.error_at(brace, "'}' to close the layout")
            layout = text[brace + 1 : close]
            if joins_numbers(layout) or LONE_MINUS(layout.partition(":")[0]):
                raise self.error_at(brace, "',' between the numbers of a layout (a '-' glued)")
            order, colon, tail = layout.partition(":")
            # (blanks part a tail's items: `T S` is two, `TS` none)
            layout = SKIP_RUN.sub("", order) + colon + SKIP_RUN.sub(" ", tail).strip()
            order = layout.partition(":")[0]
            if _MINOR_TO_MAJOR.fullmatch(order) is None:
                raise self.error_at(brace, "a layout like '{1,0}' (minor-to-major dimensions)")
            shape += "{" + layout + "}"
            at = close + 1
        if (problem := shape_problem(shape)) is not None:
            raise self.error_at(pos, problem)
        return shape, at

    def check_shape(self, shape: str, index: int) -> None:
        problem = shape_problem(shape)
        if problem is not None:
            raise self.error(index, problem, near=shape.partition("[")[0])
