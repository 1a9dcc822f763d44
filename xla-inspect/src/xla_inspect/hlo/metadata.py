"""`metadata={...}`: its fields and their kinds, and the fast check of metadata as XLA
prints it (most of a module's attribute text), taken out before the attribute checks.
"""

from __future__ import annotations

import re

from xla_inspect.hlo.strings import strings_ok

# metadata ::= 'metadata={' ','? (field ','?)* '}', each field once: XLA's parser takes these
# names, with a string, an int32 or (profile_type) a braced list of integers; XLA prints them in
# this order
METADATA_FIELDS = {
    "op_type": "a string",
    "op_name": "a string",
    "source_file": "a string",
    "source_line": "an integer",  # an int32, as every integer field (see metadata_int_ok)
    "source_end_line": "an integer",
    "source_column": "an integer",
    "source_end_column": "an integer",
    "profile_type": "a braced list of integers",
    "deduplicated_name": "a string",
    "scheduling_name": "a string",
    "stack_frame_id": "an integer",
    "metadata_payload": "a string",
}


METADATA_FIELD = re.compile(
    r"""\s*+([A-Za-z_][\w.\-]*+)=\s*+("(?:[^"\\]|\\.)*+"|'(?:[^'\\]|\\.)*+'|\{[^{}]*+\}|[^\s,{}"']*+)"""
    r"\s*+(,?)\s*+"
)


FIELD_VALUE = {
    "a string": re.compile(r'"(?:[^"\\]|\\.)*+"|\'(?:[^\'\\]|\\.)*+\''),
    "an integer": re.compile(r"-?[0-9]++"),
    "a braced list of integers": re.compile(r"\{\s*+(?:-?[0-9]++(?:\s*+,\s*+-?[0-9]++)*+)?\s*+\}"),
}


# The same as XLA prints it: fields in XLA's order one space apart, strings without braces,
# newlines, '//' or '/*', integers of at most 9 digits; then the next attribute or the end
_PRINTED_STRING = r'"(?:[^"\\\n/{}]++|\\[^\n]|/(?![/*]))*+"'


_METADATA = re.compile(
    r"metadata=\{"
    + "".join(
        rf"(?:{name}={_PRINTED_STRING if kind == 'a string' else '-?[0-9]{1,9}+'}(?: |(?=\}})))?"
        for name, kind in METADATA_FIELDS.items()
        if name not in ("metadata_payload", "profile_type")
    )
    + r"\}(?=, |\Z)"
).match


# The metadata JAX writes (an op_name, then a stack frame), matched faster; a string holding
# '//' or '/*' is refused after the match
_JAX_METADATA = re.compile(
    r'metadata=\{op_name="(?:[^"\\\n{}]++|\\[^\n])*+"(?: stack_frame_id=-?[0-9]{1,9}+)?\}(?=, |\Z)'
).match


def without_metadata(tail: str, printed: set[str]) -> str | None:
    """`tail` with its metadata's fields taken out (`metadata={}`), when the metadata is a
    top-level attribute in XLA's printed form; else None. The metadata is what varies from one
    instruction to the next, and cannot change whether an attribute list is well formed: a list
    whose `without_metadata` form passed the checks passes them too. `printed` holds metadata
    texts already matched (about half of a module's repeat), and gains this one."""
    at = tail.find("metadata={")
    if at < 0:
        return None
    before = tail[:at]
    if at and (
        before[-2:] != ", " or before.count('"') & 1 or before.count("{") != before.count("}")
    ):
        return None
    end = tail.find("}", at) + 1
    if tail[at:end] not in printed or tail[end : end + 2] not in (", ", ""):
        match = _JAX_METADATA(tail, at) or _METADATA(tail, at)
        if match is None:
            return None
        end = match.end()
        found = tail[at:end]
        if "//" in found or "/*" in found:  # let through by _JAX_METADATA's strings only
            return None
        if "\\" in found and not strings_ok(found):
            return None
        printed.add(found)
    return before + "metadata={}" + tail[end:]
