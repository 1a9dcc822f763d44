"""FrameTableReader: the frame tables XLA prints after the module header (FileNames,
FunctionNames, FileLocations, StackFrames).

    frame_tables ::= 'FileNames' row* 'FunctionNames' row* 'FileLocations' row* 'StackFrames' row*
"""

from __future__ import annotations

import re

from xla_inspect.hlo.strings import strings_ok
from xla_inspect.hlo.tokens import TokenReader

_TABLE_ORDER = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


TABLE_WORD = re.compile(r"(?a)[A-Za-z_][\w.\-]*")


_ROW_ID = re.compile(r"-?[0-9]+(?![\w.])")


_ROW_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*+\"|'(?:[^'\\]|\\.)*+'", re.S)


_ROW_FIELD = re.compile(r"([A-Za-z_][\w.\-]*)=")


_ROW_FIELDS = {
    "FileLocations": (
        "file_name_id",
        "function_name_id",
        "line",
        "end_line",
        "column",
        "end_column",
    ),
    "StackFrames": ("file_location_id", "parent_frame_id"),
}


class FrameTableReader(TokenReader):
    """The frame tables after the module header: FileNames, FunctionNames, FileLocations,
    StackFrames."""

    def frame_tables(self, pos: int) -> int:
        """The four frame tables from offset `pos` (at 'FileNames'), read token by token as
        XLA reads them: row ids int64, a row's fields int32, each required field once. Returns
        the offset after the last row."""
        text = self.text
        for table in _TABLE_ORDER:
            pos = self.skip(pos)
            word = TABLE_WORD.match(text, pos)
            if word is None or word.group() != table:
                raise self.stray(pos, f"the frame table '{table}'")
            pos = word.end()
            while True:
                pos = self.skip(pos)
                row = _ROW_ID.match(text, pos)
                if row is None:
                    break
                if not -(2**63) <= int(row.group()) < 2**64:  # else not an integer token
                    raise self.error_at(pos, "a frame table's row id within int64 or uint64")
                pos = self.table_row(table, self.skip(row.end()))
        return pos

    def table_row(self, table: str, pos: int) -> int:
        """The rest of a frame table's row from `pos`, after its id: a string (FileNames,
        FunctionNames) or the fields of a file location or stack frame, each once, as int32.
        Returns the offset after it."""
        text = self.text
        if table in ("FileNames", "FunctionNames"):
            string = _ROW_STRING.match(text, pos)
            if string is None:  # no string: the row's name is left empty
                word = TABLE_WORD.match(text, pos)
                following = "FunctionNames" if table == "FileNames" else "FileLocations"
                if _ROW_ID.match(text, pos) or (word is not None and word.group() == following):
                    return pos
            if string is None or not strings_ok(string.group()):
                raise self.stray(pos, f"a string for the row of '{table}'")
            return string.end()
        required = _ROW_FIELDS[table]
        pos = self.expect(pos, "{", f"'{{' for the row of '{table}'")
        seen: set[str] = set()
        while True:
            pos = self.skip(pos)
            if text.startswith("}", pos):
                pos += 1
                break
            if text.startswith(",", pos):  # a comma before each field (none after the last)
                pos = self.skip(pos + 1)
            field = _ROW_FIELD.match(text, pos)
            if field is None or field.group(1) not in required or field.group(1) in seen:
                raise self.stray(pos, f"a field of '{table}' ({', '.join(required)}), each once")
            seen.add(field.group(1))
            at = self.skip(field.end())
            value = _ROW_ID.match(text, at)
            if value is None or not -(2**31) <= int(value.group()) < 2**31:
                raise self.stray(at, f"an int32 for {field.group(1)}")
            pos = value.end()
        if len(seen) < len(required):
            missing = ", ".join(f for f in required if f not in seen)
            raise self.error_at(pos - 1, f"the fields {missing} of the row of '{table}'")
        return pos
