"""parse_hlo: read HLO text (optimized, unoptimized short form, or hand-written) into a model.

Two paths share one set of checks. The fast path is line-oriented: one precompiled regular
expression recognises the common one-line instruction as XLA prints it. Everything else
(module and computation headers, wrapped lines, comments, spaces inside shapes, multi-line
attribute values, several instructions on a line) is read token by token with the rules of
XLA's lexer (xla/hlo/parser/hlo_lexer.cc): whitespace and `/* */` / `//` comments between any two
tokens, `name=` (no space) is an attribute name, `%` optional on names. Attribute text is kept
(comments dropped, runs of whitespace as one space).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from functools import cached_property, lru_cache, partial
from types import MappingProxyType

from xla_inspect._header import _invalid_layout, _read_tail, check_module_attributes
from xla_inspect._infer import CannotInfer, infer_shape
from xla_inspect._lexing import (
    ANY_INSTRUCTION_ATTRIBUTES,
    ARRAY_SHAPE_PATTERN,
    ASYNC_OPCODES,
    ATTRIBUTE_SYNTAX,
    BAD_ATTRIBUTE_VALUE,
    DTYPE,
    FLAT_TUPLE_SHAPE_PATTERN,
    OPCODE_ARITY,
    OPCODE_ATTRIBUTES,
    OTHER_TYPE,
    async_sugar,
    is_opcode,
    is_shape,
    literal_value_problem,
    match_close,
    metadata_int_ok,
    split_attributes,
    split_top_level,
    strings_ok,
)
from xla_inspect._literal import literal_problem
from xla_inspect.errors import HloParseError, did_you_mean
from xla_inspect.model import (
    CALL_ATTRIBUTE_KEYS,
    CALL_ATTRIBUTES,
    HloComputation,
    HloInstruction,
    HloModule,
    Shape,
    new_computation,
    new_instruction,
)

# instruction ::= 'ROOT '? '%'? name ' = ' shape ' ' opcode '(' operands ')' (', ' attr)*
# (the common case, on one line: no parentheses inside the operand list). The shape is taken
# loosely here (`dtype[...]{...}` or a tuple) and checked against _PRINTED_SHAPE_TEXT once per
# distinct shape text: a full shape pattern in this expression costs a fifth of the read.
# Possessive repeats (`*+`, `++`): no piece can give characters back to the next one, and not
# saving backtrack points makes each match about a sixth faster.
_FAST = re.compile(
    r"(?a)[ \t]*+(ROOT )?%?((?!__)[A-Za-z_][\w.\-]*+) = "
    r"([a-z][a-z0-9]*+\[[^\]\n]*+\](?:\{[^{}\n]*+\})?|\((?:[^()\n]++|\([^()\n]*+\))*+\))"
    r" ([a-z][a-z0-9\-]*+)\(([^()\n]*+)\)(?:, ([^\n]*+))?(?=\n|\Z)"
)
_PRINTED_SHAPE_TEXT = re.compile(ARRAY_SHAPE_PATTERN + "|" + FLAT_TUPLE_SHAPE_PATTERN).fullmatch
# a backslash and the character it escapes (inside strings)
_ESCAPED = re.compile(r"\\.")
# Token-level pieces, after XLA's lexer. skip ::= (whitespace | '/*' ... '*/' | '//' ...)*
_SKIP = re.compile(r"(?:[ \t\r\n]+|//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)*")
# name ::= '%'? [a-zA-Z_][a-zA-Z0-9_.-]*
_SKIP_RUN = re.compile(r"(?:[ \t\r\n]+|//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)+")
_IDENT = re.compile(r"(?a)%?[A-Za-z_][\w.\-]*")
# a layout's text up to its '}' (comments may hold one)
_LAYOUT_BODY = re.compile(r"(?:[^}/]++|//[^\n\r]*+|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/)*+")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][\w.\-]*=")
_INT = re.compile(r"[0-9]+")
_SIGNED_INT = re.compile(r"-?[0-9]+")
_DTYPE_WORD = re.compile(DTYPE + r"(?![\w.\-])")
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
# computation_header as XLA prints it on one line: 'ENTRY'? name ('(' params ')' '->' shape)? '{'
_HEADER_LINE = re.compile(
    r"(ENTRY[ \t]++)?%?([A-Za-z_][\w.\-]*+)[ \t]*+"
    r"(?:\((.*)\)[ \t]*+->[ \t]*+(\S(?:.*\S)?))?[ \t]*+\{"
)
# a computation parameter: 'name: shape'
# A header parameter as XLA's lexer reads one: `name:` (the ':' glued to the name), `%name` (no
# ':'), or a name that is no keyword or type name (no ':'), then its shape
_PARAMETER = re.compile(r"\s*+(%?)([A-Za-z_][\w.\-]*+)(:?)\s*+(.*)", re.S).fullmatch
_PARAMETER_NAME = re.compile(r"[A-Za-z_][\w.\-]*+").fullmatch
# the parameters as XLA prints them: 'name: shape, name: shape'
_PRINTED_PARAMETERS = re.compile(
    r"(?:[A-Za-z_][\w.\-]*+: (?:"
    + ARRAY_SHAPE_PATTERN
    + "|"
    + FLAT_TUPLE_SHAPE_PATTERN
    + r")(?:, (?=.)|\Z))*+"
).fullmatch
# what stands between the shapes of printed parameters (split on it)
_PARAMETER_NAMES = re.compile(r"(?:\A|, )[A-Za-z_][\w.\-]*+: ").split
_CLOSE_OF = {"(": ")", "[": "]", "{": "}"}
# a layout's minor_to_major list, and an array shape's dims and layout in canonical text
_MINOR_TO_MAJOR = re.compile(r"(?:-?[0-9]+(?:,-?[0-9]+)*)?")
_DIMS_AND_ORDER = re.compile(r"\[([^\]]*)\]\{([^}:]*)")
# each array's dims and minor-to-major order ('' when it has no layout), in shape text
_DIMS_AND_LAYOUT = re.compile(r"\[([^\]]*)\](?:\{([^}:]*))?").findall
_LONG_NUMBER = re.compile(r"[0-9]{19}").search
_LONE_MINUS = re.compile(r"-(?![0-9])").search
_MINUS_APART = partial(re.compile(r"-(?=[\s/])").sub, "-~")
_ANY_COMMENT = re.compile(r"//[^\n\r]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/")
# a scalar constant's literal that needs its value checked only (no '.5': XLA's lexer reads
# a leading '.' only after '-')
_SCALAR = re.compile(
    r"true|false|[-+]?(?:inf|nan)|(?:[-+]?[0-9]+\.?[0-9]*|[-+]\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
)
# comments with the blanks around them, each run read as one space (as `value` reads them)
_COMMENT_RUN = re.compile(r"[ \t]*(?:/\*[^*]*\*+(?:[^/*][^*]*\*+)*/[ \t]*)+")
# entry_computation_layout's value as XLA prints it: '{(' parameter shapes ')->' result '}'
_PRINTED_ENTRY_LAYOUT = re.compile(
    r"\{"
    + FLAT_TUPLE_SHAPE_PATTERN
    + "->(?:"
    + ARRAY_SHAPE_PATTERN
    + "|"
    + FLAT_TUPLE_SHAPE_PATTERN
    + r")\}"
)


def _leaf_count(shape: Shape) -> int:
    """The arrays (and tokens) in `shape`: 1 for an array, the sum over a tuple's elements."""
    return sum(map(_leaf_count, shape.elements)) if shape.is_tuple else 1


# the output indices of input_output_alias's entries: `{1, 0}: (...)` (one per entry)
_OUTPUT_INDEX = re.compile(r"\{([^{}]*)\}\s*:").findall
# frame_tables ::= 'FileNames' row* 'FunctionNames' row* 'FileLocations' row* 'StackFrames' row*
#   (all four, in this order, token by token, only right after the HloModule header)
# row ::= int64 (string | '{' (name=int32 ','?)* '}')
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_TABLE_ORDER = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_WORD = re.compile(r"(?a)[A-Za-z_][\w.\-]*")
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
# Opcodes whose attributes may name computations (model.CALL_ATTRIBUTES): only these are
# checked for references to computations the module does not define.
_CALLERS = frozenset(
    {
        "fusion",
        "call",
        "while",
        "conditional",
        "reduce",
        "reduce-window",
        "map",
        "sort",
        "scatter",
        "select-and-scatter",
        "all-reduce",
        "all-reduce-start",
        "reduce-scatter",
        "custom-call",
        "async-start",
        "async-update",
        "async-done",
        "collective-reduce",
        "scan",
        "all-reduce-done",
        "all-gather-start",
    }
)
# call attributes, and those whose value is a list of computations
_CALL_KEYS = frozenset(CALL_ATTRIBUTES)
_CALL_LISTS = frozenset({"branch_computations", "called_computations"})
_BRACED_CALL = re.compile(
    r"(?<![\w.\-])(" + "|".join(sorted(_CALL_KEYS - _CALL_LISTS)) + r")=\{"
).search
# Opcodes XLA cannot wrap in an async op (`parameter-start`: its parser crashes on them)
_NOT_WRAPPED = frozenset({"parameter", "constant", "async-start", "async-update", "async-done"})
_THREAD = frozenset({"async_execution_thread"})
_ASYNC = frozenset(ASYNC_OPCODES.values())
_ANY_OR_THREAD = ANY_INSTRUCTION_ATTRIBUTES | _THREAD


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


def _sugar_value_check(wrapped: str | None) -> Callable[[str], bool]:
    """The bad-value test of an async sugar opcode's attributes: the thread's, and those of
    the opcode it wraps (`wrapped`, for `X-start`)."""
    thread = BAD_ATTRIBUTE_VALUE["async-done"]
    own = BAD_ATTRIBUTE_VALUE.get(wrapped) if wrapped is not None else None
    if own is None:
        return thread
    return lambda tail: own(tail) or thread(tail)


def _async_shape(shape: str) -> bool:
    """XLA's form for an async-start's or async-update's shape: a tuple of at least two
    elements, the first a tuple (the operands, the result, any state)."""
    elements = Shape(shape).elements
    return len(elements) >= 2 and elements[0].is_tuple


# scalar constants that need no check_literal: short numbers of the common types
_PLAIN_FLOAT = re.compile(r"-?[0-9]{1,4}(?:\.[0-9]*)?").fullmatch
_PLAIN_INTEGER = re.compile(r"-?[0-9]{1,9}").fullmatch
_PLAIN_SCALAR = {
    "f32[]": _PLAIN_FLOAT,
    "f64[]": _PLAIN_FLOAT,
    "bf16[]": _PLAIN_FLOAT,
    "f16[]": _PLAIN_FLOAT,
    "s32[]": _PLAIN_INTEGER,
    "s64[]": _PLAIN_INTEGER,
    "pred[]": re.compile(r"true|false|[01]").fullmatch,
}
# opcodes whose dimensions= (when given) names one dimension
_ONE_DIMENSION = frozenset(
    {
        "all-gather",
        "all-gather-start",
        "reduce-scatter",
        "all-to-all",
        "ragged-all-to-all",
        "sort",
        "get-dimension-size",
        "set-dimension-size",
        "scan",
    }
)
_LISTED_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)").findall
_BRANCHES = re.compile(r"(?<![\w.\-])branch_computations=\s*\{([^{}]*)\}").search
# Opcodes whose instructions XLA's parser checks against their operands' shapes while it builds
# them (check_built); they are recorded with the callers, so the per-line path gains no test.
_BUILT = frozenset(
    {
        "tuple",
        "reshape",
        "recv",
        "infeed",
        "conditional",
        "all-reduce",
        "all-reduce-start",
        "reduce-scatter",
        "dynamic-reshape",
        "custom-call",
        "dot",
        "convolution",
        "reduce",
        "reduce-window",
        "concatenate",
        "dynamic-slice",
        "dynamic-update-slice",
        "send-done",
        "recv-done",
        "broadcast",
        "partition-id",
        "replica-id",
        "scatter",
        "outfeed",
        *_ONE_DIMENSION,
    }
)
# those of them whose check reads their operands
_LOOKS_AT_OPERANDS = frozenset(
    {
        "reshape",
        "dynamic-reshape",
        "conditional",
        "custom-call",
        "dynamic-slice",
        "dynamic-update-slice",
        "send-done",
        "recv-done",
        "broadcast",
    }
)
_DIMENSIONS = re.compile(r"(?<![\w.\-])dimensions=\s*\{([^{}]*)\}").search
_USE_GLOBAL_DEVICE_IDS = re.compile(r"(?<![\w.\-])use_global_device_ids=\s*true\b").search
_CHANNEL_ID = re.compile(r"(?<![\w.\-])channel_id=").search
_CHANNEL_VALUE = re.compile(r"(?<![\w.\-])channel_id=\s*(-?[0-9]+)").search
_OUTFEED_SHAPE = re.compile(r"(?<![\w.\-])outfeed_shape=").search
_LAYOUT_CONSTRAINTS = re.compile(r"(?<![\w.\-])operand_layout_constraints=\s*\{").search
# an attribute name after a ',' in an attribute list (or inside a nested value), or '' where a
# ',', '(' or '{name=' follows a ',' (no name there: a doubled ',' or a bracketed piece, which
# check_attribute_names rejects at the top level)
_KEY_AFTER_COMMA = re.compile(
    r",[ \t]*(?:([A-Za-z_][\w.\-]*)=|(?=,|\(|\{[ \t]*[A-Za-z_][\w.\-]*=))"
).findall
_ATTRIBUTE_KEY = re.compile(r"[A-Za-z_][\w.\-]*").fullmatch
# (opcode, fixed operand count, attributes it takes, a test for a typed attribute's bad value,
# the attribute lists the fast path read and checked for it, each kept once, and the attributes
# it requires)
_OpcodeFacts = tuple[
    str,
    int | None,
    frozenset[str] | None,
    Callable[[str], bool] | None,
    dict[str, str],
    frozenset[str],
]
# Attributes XLA's parser requires ('attribute X is expected but not seen'), read off jaxlib
# 0.12's parser by taking each attribute out of real instructions (tests/xla_inspect/test_oracle
# checks every entry against the jaxlib in use)
_REQUIRED = {
    opcode: frozenset(names.split())
    for opcodes, names in (
        # (broadcast requires dimensions only of a non-scalar operand: left out)
        ("all-gather all-gather-start concatenate transpose reverse", "dimensions"),
        ("get-dimension-size set-dimension-size", "dimensions"),
        ("all-reduce all-reduce-start call map reduce-window", "to_apply"),
        ("async-start", "calls"),
        ("rng-bit-generator", "algorithm"),
        ("domain", "domain"),
        ("rng-get-and-update-state", "delta"),
        ("shuffle", "dimensions mode"),
        ("scan", "dimensions num_carries to_apply"),
        ("reduce reduce-scatter sort", "dimensions to_apply"),
        ("collective-permute collective-permute-start", "source_target_pairs"),
        ("compare", "direction"),
        ("conditional", "branch_computations"),
        ("convolution", "dim_labels"),
        ("custom-call", "custom_call_target"),
        ("dynamic-slice", "dynamic_slice_sizes"),
        ("fft", "fft_length fft_type"),
        ("fusion", "calls kind"),
        ("gather", "collapsed_slice_dims index_vector_dim offset_dims slice_sizes start_index_map"),
        ("get-tuple-element", "index"),
        ("iota", "iota_dimension"),
        ("pad", "padding"),
        (
            "scatter",
            "index_vector_dim inserted_window_dims scatter_dims_to_operand_dims to_apply"
            " update_window_dims",
        ),
        ("slice", "slice"),
        ("topk", "k"),
        ("while", "body condition"),
        ("reduce-precision", "exponent_bits mantissa_bits"),
        ("select-and-scatter", "select scatter"),
        ("rng", "distribution"),
        ("batch-norm-inference batch-norm-training batch-norm-grad", "epsilon feature_index"),
    )
    for opcode in opcodes.split()
}
# metadata ::= 'metadata={' ','? (field ','?)* '}', each field once: XLA's parser takes these
# names, with a string, an int32 or (profile_type) a braced list of integers; XLA prints them in
# this order
_METADATA_FIELDS = {
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
_METADATA_FIELD = re.compile(
    r"""\s*+([A-Za-z_][\w.\-]*+)=\s*+("(?:[^"\\]|\\.)*+"|'(?:[^'\\]|\\.)*+'|\{[^{}]*+\}|[^\s,{}"']*+)"""
    r"\s*+(,?)\s*+"
)
_FIELD_VALUE = {
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
        for name, kind in _METADATA_FIELDS.items()
        if name not in ("metadata_payload", "profile_type")
    )
    + r"\}(?=, |\Z)"
).match

# The metadata JAX writes (an op_name, then a stack frame), matched faster; a string holding
# '//' or '/*' is refused after the match
_JAX_METADATA = re.compile(
    r'metadata=\{op_name="(?:[^"\\\n{}]++|\\[^\n])*+"(?: stack_frame_id=-?[0-9]{1,9}+)?\}(?=, |\Z)'
).match


def _without_metadata(tail: str, printed: set[str]) -> str | None:
    """`tail` with its metadata's fields taken out (`metadata={}`), when the metadata is a
    top-level attribute in XLA's printed form; else None. The metadata is what varies from one
    instruction to the next, and cannot change whether an attribute list is well formed: a list
    whose `_without_metadata` form passed the checks passes them too. `printed` holds metadata
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


# Words XLA's lexer reads as keywords, not names: a name spelled so is rejected ('expects
# name'), except with a '%' (`%ROOT`); a type's name is rejected as an instruction name even
# with a '%'
_KEYWORD = re.compile(
    r"(?:inf|nan|true|false|ROOT|ENTRY|HloModule|maximal|replicated|manual|unknown"
    r"|last_tile_dim_replicate|shard_as|shard_like)\Z"
).match
_TYPE_NAME = re.compile(DTYPE + r"\Z").match


def _reserved(raw: str, instruction: bool = False) -> str | None:
    """What makes `raw` (a name as written, with its '%' if any) no name to XLA, or None."""
    if "." in raw:  # no keyword or type name has one
        return None
    bare = raw.removeprefix("%")
    if (instruction or bare == raw) and _TYPE_NAME(bare):
        return f"the type name '{bare}'"
    if bare == raw and _KEYWORD(bare):
        return f"the keyword '{bare}'"
    return None


# one operand: an optional shape, then its name (`f32[2]{0} %p`, `%p`, `p#1`)
_TYPED_OPERAND = re.compile(r"(.*?)\s*+%?([A-Za-z_][\w.\-]*+(?:#[0-9]++)?)", re.S).fullmatch
# operands each written after its shape, as XLA's long form prints them (`f32[2]{0} %a, s32[] %b`)
_LOOSE_SHAPE = r"[a-z][a-z0-9]*+\[[^\]\n]*+\](?:\{[^{}\n]*+\})?|\((?:[^()\n]++|\([^()\n]*+\))*+\)"
_OPERAND_NAME = r"%?[A-Za-z_][\w.\-]*+"
_TYPED_OPERANDS = re.compile(
    rf"(?a)(?:{_LOOSE_SHAPE}) {_OPERAND_NAME}(?:, (?:{_LOOSE_SHAPE}) {_OPERAND_NAME})*+"
).fullmatch
_TYPED_PAIRS = re.compile(rf"(?a)({_LOOSE_SHAPE}) %?([A-Za-z_][\w.\-]*+)").findall
# parameter numbers as written: a computation's N parameters are numbered 0 to N-1
_NUMBERS = tuple(map(str, range(4096)))
# opcodes whose parentheses hold a payload (a parameter number, a literal), not operands
_PAYLOAD_OPCODES = frozenset({"parameter", "constant"})
# `key=%name`: the common form, checked cheaply; lists and anything odd take the exact path
# A '{...}' value followed by another attribute without a ',' between them (inside metadata,
# fields are separated by spaces, but no field's value is a brace group)
_BRACE_THEN_NAME = re.compile(r"\}[ \t]+[A-Za-z_][\w.\-]*=").search
_CALLED_NAME = re.compile(r"(?<![\w.\-])" + CALL_ATTRIBUTE_KEYS + r"=(?:\{([^{}]*)\}|%?([\w.\-]+))")
# A call attribute naming one computation whose name holds a '.' (as XLA numbers them: no
# keyword or type name does), up to the next attribute. Whether an attribute list is well formed
# does not depend on which computation it names (check_calls looks that up): `_callee_free`
# replaces the name with '.' to key lists that differ only there (each fusion calls its own).
_CALLEE = re.compile(
    r"(?<![\w.\-])(" + CALL_ATTRIBUTE_KEYS + r"=%?)[A-Za-z_][\w\-]*+\.[\w.\-]*+(?=, |\Z)"
)


def _callee_free(tail: str) -> str:
    """`tail` with the computation each call attribute names replaced by '.' (see _CALLEE)."""
    return _CALLEE.sub(r"\1.", tail)


def parse_hlo(text: str) -> HloModule:
    """Parse HLO module text. Raises HloParseError (line, line text, what was expected).

    The cyclic garbage collector is paused while parsing (and restored after): the reader
    makes no cycles, and on a 30 MB module the collector's repeated passes over the growing
    instruction list would otherwise cost a third of the time.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Reader(text).module()
    finally:
        if collecting:
            gc.enable()


def _compatible(written: Shape, actual: Shape) -> bool:
    """Whether a shape written before an operand is the operand's, as XLA compares them:
    element type and dimensions, not layout nor dynamic bounds (`f32[<=2]` is `f32[2]`); an
    unbounded `?` dimension on either side matches any size."""
    if written.is_tuple or actual.is_tuple:
        return (
            written.is_tuple == actual.is_tuple
            and len(written.elements) == len(actual.elements)
            and all(map(_compatible, written.elements, actual.elements))
        )
    if written.dtype != actual.dtype:
        return False
    dims, others = written.dims, actual.dims
    return dims == others or (
        len(dims) == len(others)
        and all(a == b or a is None or b is None for a, b in zip(dims, others, strict=True))
    )


def _element_count_problem(operand: str, result: str, dynamic: bool = False) -> str | None:
    """Why a reshape (`dynamic`: a dynamic-reshape) of an `operand` shape cannot give `result`:
    XLA wants as many elements, bounds counted and a `?` counted as 1; a reshape of an operand
    with a `?` is not checked. None when it can."""
    before, after = Shape(operand).dims, Shape(result).dims
    if (None in before and not dynamic) or _count(before) == _count(after):
        return None
    return f"a reshape to as many elements as its operand has ({operand}), not {result}"


def _count(dims: tuple[int | None, ...]) -> int:
    count = 1
    for size in dims:
        count *= 1 if size is None else size
    return count


def _product(dims: tuple[int | None, ...]) -> int:
    count = 1
    for size in dims:
        count *= size or 0
    return count


# a layout's part after ':', in the order XLA's parser reads its items (each optional): dim level
# types D(...), tiles T(...)(...), L(n), index type #(uN), pointer type *(uN), element size E(n),
# memory space S(n), split configs SC(d:i,...)..., physical shape P(shape), M(n)
# (XLA's parser asks for an unsigned type in #(...) and *(...) but goes on with any)
_UNSIGNED = DTYPE
_LEVEL = r"[DCSH]\+?~?"
_TILE_DIM = r"(?:-?[0-9]+|\*)"
_LAYOUT_TAIL = re.compile(
    rf"(?:D\((?:{_LEVEL}(?:,{_LEVEL})*)?\))?"
    rf"(?:T(?:\((?:{_TILE_DIM}(?:,{_TILE_DIM})*)?\))+)?"
    r"(?:L\(-?[0-9]+\))?"
    rf"(?:#\({_UNSIGNED}\))?(?:\*\({_UNSIGNED}\))?"
    r"(?:E\(-?[0-9]+\))?(?:S\(-?[0-9]+\))?"
    r"(?:SC(?:\(-?[0-9]+:(?:-?[0-9]+(?:,-?[0-9]+)*)?\))+)?"
    r"(?:P\((?:[^()]|\([^()]*\))*\))?"
    r"(?:M\(-?[0-9]+\))?"
).fullmatch
# a layout's part after ':' in an array shape
_LAYOUT_TAILS = re.compile(r"\]\{[^}:]*:((?:[^{}]|\{[^{}]*\})*)\}").findall
# each array's dims, minor-to-major order and part after ':' (or '')
_ELEMENT_LAYOUTS = re.compile(r"\[([^\]]*)\]\{([^}:]*)(?::((?:[^{}]|\{[^{}]*\})*))?\}").findall
_NEGATIVE_TILE = re.compile(r"T(?:\([^()]*\))*\([^()]*-").search
_NO_LINEAR = re.compile(r"L\((?:-|0\))").search


def _joins_numbers(text: str) -> bool:
    """Whether blanks or comments alone stand between two numbers in `text` (in a layout,
    XLA's parser wants a ',' there)."""
    parts = _SKIP_RUN.split(text)
    return any(
        left[-1:].isdigit() and right[:1].isdigit()
        for left, right in zip(parts, parts[1:], strict=False)
    )


def _number_problem(shape: str) -> str | None:
    """Why a dimension size or minor-to-major number in `shape` is not one XLA reads: its lexer
    takes -2^63 to 2^64-1 (from 2^63 on, wrapped to a negative int64), and a size must come
    out from 0 to 2^63-1 (`-0` is 0), or a bound `<=N` -2^63 (read as `?`: `<=2^63` too).
    None when each is."""
    if "-" not in shape and _LONG_NUMBER(shape) is None:
        return None
    for dims, order in _DIMS_AND_LAYOUT(shape):
        for size in dims.split(",") if dims else ():
            bound = size.removeprefix("<=")
            if bound == "?" or 0 <= int(bound) < 2**63:
                continue
            if bound != size and int(bound) in (-(2**63), 2**63):
                continue
            return f"dimension sizes from 0 to 2^63-1, not {size} ('{shape}')"
        for number in order.split(",") if order else ():
            if not -(2**63) <= int(number) < 2**64:
                return f"minor-to-major numbers that fit in 64 bits, not {number} ('{shape}')"
    return None


def _layout_problem(shape: str, tails: bool = False) -> str | None:
    """Why an array shape's layout does not fit its rank or (with `tails`: in an instruction,
    where XLA reads the part after ':' strictly) XLA's layout syntax, or its dimension sizes
    or minor-to-major numbers are not ones XLA reads (_number_problem), or None."""
    if (problem := _number_problem(shape)) is not None:
        return problem
    if "{" not in shape:
        return None
    if tails and ":" in shape:
        for tail in _LAYOUT_TAILS(shape):
            if "/" in tail:
                if _joins_numbers(tail):
                    return f"',' between the numbers of a layout, not '{tail}'"
                tail = _SKIP_RUN.sub(" ", tail)
            if _LAYOUT_TAIL(tail) is None and not _read_tail(tail).closed:
                return (
                    f"a layout's part after ':' as D(...), T(...), L(n), #(uN), *(uN), E(n), "
                    f"S(n), SC(...), P(shape), M(n) in that order, not '{tail}' ('{shape}')"
                )
            if "P(" in tail:  # XLA keeps no dim level types, so no array is sparse
                return f"no physical shape P(...): it is for sparse arrays ('{shape}')"
    for dims, order in _DIMS_AND_ORDER.findall(shape):
        rank = dims.count(",") + 1 if dims else 0
        listed = order.count(",") + 1 if order else 0
        if rank != listed:
            return (
                f"a layout listing {rank} dimension{'s' if rank != 1 else ''} for "
                f"[{dims}], not {listed} ('{shape}')"
            )
    if ":" in shape:
        for tail in _LAYOUT_TAILS(shape):
            if _NEGATIVE_TILE(tail) or _NO_LINEAR(tail):  # XLA's parser crashes on them
                return f"tiles of positive sizes and L(n) of n >= 1, not '{tail}' ('{shape}')"
    return _element_layout_problem(shape) if shape[0] == "(" else None


def _element_layout_problem(shape: str) -> str | None:
    """Why a tuple's element has a layout XLA rejects there (it checks the layout of a tuple's
    elements, not of an array shape standing alone), as _header's _invalid_layout says:
    minor-to-major not a permutation of the dimensions, a tile without sizes or of size 0,
    E(n) below 0, an index or pointer type #(uN) or *(uN), SC(d:...) of a dimension d the
    array lacks. None when each is valid."""
    for dims, order, tail in _ELEMENT_LAYOUTS(shape):
        problem = _invalid_layout(
            f"x[{dims}]{{{_SKIP_RUN.sub('', order)}}}", _read_tail(tail) if tail else None
        )
        if problem is not None:
            return f"a tuple element's layout XLA builds: {problem}"
    return None


_EMPTY_BRACES = re.compile(r"\]\{\}").search
_SHAPED_TOKEN = re.compile(r"(?:token|opaque)\[(?!\])").search


def _squeezed(shape: str) -> str:
    """Shape text without its blanks and comments; a '-' that a blank or comment parts from its
    number (XLA's lexer reads none there) stays followed by '~', which no shape holds."""
    if "-" in shape:
        shape = _MINUS_APART(shape)
    return _SKIP_RUN.sub("", shape)


@lru_cache(maxsize=4096)
def _shape_problem(shape: str) -> str | None:
    """Why XLA's parser refuses `shape` (shape text, blanks and comments removed) wherever it
    reads one: an instruction's shape, a typed operand's, a computation's parameters and result,
    outfeed_shape= and operand_layout_constraints=. `{}` is no layout (XLA reads '{' as one only
    before a number or ':'), a token or opaque has no dimensions (XLA's parser aborts), and the
    layout must fit (_layout_problem). None when XLA takes it. Cached: shapes repeat."""
    if "-" in shape and _LONE_MINUS(shape):
        return f"a number glued to its '-' ('{shape}')"
    if _EMPTY_BRACES(shape):
        return f"a layout with its dimensions, or none, not '{{}}' ('{shape}')"
    if _SHAPED_TOKEN(shape):
        return f"no dimensions for a token or opaque shape (XLA's parser aborts on '{shape}')"
    return _layout_problem(shape, tails=True)


# a line that starts another instruction, or closes the computation ('name=' without a blank
# is an attribute name to XLA's lexer)
_NEXT_STATEMENT = re.compile(
    r"\s*+(?:ROOT\s|%[A-Za-z_][\w.\-]*+\s*+=|[A-Za-z_][\w.\-]*+\s++=|\})"
).match


class _Reader:
    """Reads `text` once. Module and computation headers, and any instruction the fast line
    regex does not take, are read token by token from an offset into `text`; runs of ordinary
    instruction lines are read line by line, each from the offset where it starts (the text is
    never split into a list of lines: that copy would double the peak memory)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.opcodes: dict[str, _OpcodeFacts] = {}
        self.shapes: dict[str, str] = {}
        self.callers: list[tuple[HloInstruction, int]] = []
        # opcodes that may name computations in their attributes, or that check_built checks
        self.calling = set(_CALLERS | _BUILT)
        self._cursor = (0, 0)  # (line index, offset of that line's start) last converted
        self.printed_metadata: set[str] = set()  # see _without_metadata
        self.has_async = False  # an async-start, -update or -done, or sugar for one, was read
        self.has_control = "control-predecessors" in text
        self.keyword_names: set[str] = set()  # instructions named by a keyword (`%true`)
        # computation names in the order their reading started (the callers' numbers index it)
        self.started: list[str] = []
        # computations written inline (`to_apply={...}`) read since the last one was added
        self.inline: list[HloComputation] = []
        self.taken: set[str] = set()  # computation names given so far
        self.literals: set[tuple[str, str]] = set()  # (shape, constant payload) pairs checked
        # (shape as written, shape) pairs found alike, layouts aside: a computation's result and
        # its ROOT's, an operand's shape written before it and the operand's
        self.compatible: set[tuple[str, str]] = set()
        self.header_shapes: set[str] = set()  # shapes of header parameters checked
        self.read: dict[str, HloComputation] = {}  # the computations read so far, by name
        # instructions written as operands, not yet added: (name, shape, opcode, operands)
        self.nested: list[tuple[str, str, str, str]] = []
        self.nested_names: set[str] = set()
        # the instruction list `shape_of` indexed last, and its name -> shape index
        self._shape_index: tuple[list[HloInstruction] | None, dict[str, str]] = (None, {})

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
        match = _SKIP.match(self.text, pos)
        assert match is not None  # _SKIP matches the empty string too
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
        match = _IDENT.match(self.text, pos)
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
            skipped = _SKIP.match(text, pos)
            assert skipped is not None  # _SKIP matches the empty string too
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
                            raw = _COMMENT_RUN.sub(" ", raw)
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
                    key = _ATTRIBUTE_NAME.match(text, start)
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
            if (problem := _shape_problem(shape)) is not None:
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
        match = _DTYPE_WORD.match(text, pos)
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
            if _joins_numbers(layout) or _LONE_MINUS(layout.partition(":")[0]):
                raise self.error_at(brace, "',' between the numbers of a layout (a '-' glued)")
            order, colon, tail = layout.partition(":")
            # (blanks part a tail's items: `T S` is two, `TS` none)
            layout = _SKIP_RUN.sub("", order) + colon + _SKIP_RUN.sub(" ", tail).strip()
            order = layout.partition(":")[0]
            if _MINOR_TO_MAJOR.fullmatch(order) is None:
                raise self.error_at(brace, "a layout like '{1,0}' (minor-to-major dimensions)")
            shape += "{" + layout + "}"
            at = close + 1
        if (problem := _shape_problem(shape)) is not None:
            raise self.error_at(pos, problem)
        return shape, at

    def check_shape(self, shape: str, index: int) -> None:
        problem = _shape_problem(shape)
        if problem is not None:
            raise self.error(index, problem, near=shape.partition("[")[0])

    # -- module --------------------------------------------------------------------------------
    # module ::= module_header? (frame_tables | computation)+
    def module(self) -> HloModule:
        text = self.text
        name = ""
        attributes: dict[str, str] = {}
        computations: list[HloComputation] = []
        order: dict[str, int] = {}
        entry: HloComputation | None = None
        size = len(text)
        # line mode (i: the next line, pos: its offset) while lines start with a token; else
        # token mode (pos: the next token)
        line_mode, i, pos = True, 0, 0
        while True:
            if line_mode:
                if pos > size:
                    break
                end = self.line_end(pos)
                stripped = text[pos:end].strip()
                if not stripped or stripped.startswith("//"):
                    i, pos = i + 1, end + 1
                    continue
                match = None
                if (
                    stripped[-1] == "{"
                    and "/" not in stripped
                    and '"' not in stripped
                    and "'" not in stripped
                    and stripped.count("(") == stripped.count(")")
                ):
                    match = _HEADER_LINE.fullmatch(stripped)
                if match is None:
                    line_mode = False
                    continue
                index = i
                result = self.signature(match.group(3), match.group(4), index)
                number = self.start(match.group(2))
                instructions, pos, i = self.body(match.group(2), number, end + 1, i + 1)
                computation = new_computation(
                    match.group(2), instructions, match.group(1) is not None, index + 1
                )
                self.check_result(computation, result)
                if i < 0 or text.startswith(",", self.skip(pos)):
                    computation, pos = self.computation_end(computation, pos)
                    line_mode, i, pos = self.resume(pos)
                else:
                    line_mode = True
            else:
                pos = self.skip(pos)
                if pos >= len(text):
                    break
                word = _IDENT.match(text, pos)
                keyword = word.group() if word is not None else ""
                if keyword == "HloModule":
                    if name or computations:
                        raise self.error_at(pos, "one 'HloModule' header, before any computation")
                    name, attributes, pos = self.module_header(pos + len(keyword))
                    after = self.skip(pos)
                    word = _TABLE_WORD.match(text, after)
                    if word is not None and word.group() == "FileNames":
                        pos = self.frame_tables(after)
                    line_mode, i, pos = self.resume(pos)
                    continue
                if keyword in _TABLES:
                    raise self.error_at(
                        pos,
                        f"a computation, not '{keyword}' (frame tables go right after the"
                        " HloModule header)",
                    )
                index = self.line_of(pos)
                computation, pos = self.computation(pos)
                line_mode, i, pos = self.resume(pos)
            for inline in self.inline:  # each before the computation that calls it
                order[inline.name] = len(computations)
                computations.append(inline)
            self.inline = []
            name_problem = _reserved(computation.name)
            if name_problem and "%" + computation.name not in self.lines[index]:
                raise self.error(
                    index, f"a computation name, not {name_problem}", near=computation.name
                )
            if computation.name in order:
                raise self.error(
                    index,
                    f"a new computation name, not '{computation.name}'",
                    near=computation.name,
                )
            order[computation.name] = len(computations)
            if computation.is_entry:
                if entry is not None:
                    raise self.error(index, f"one ENTRY (already '{entry.name}')", near="ENTRY")
                entry = computation
            computations.append(computation)
            self.read[computation.name] = computation
        if not computations:
            raise self.error(len(self.lines) - 1, "at least one computation")
        if entry is None:
            entry = computations[-1]
        if "input_output_alias" in attributes:
            self.check_output_indices(attributes["input_output_alias"], entry)
        if [c.name for c in computations] != self.started:
            # inline computations come before their caller: number the callers anew
            numbers = [order[name] for name in self.started]
            self.callers = [(instruction, numbers[at]) for instruction, at in self.callers]
        self.check_calls(order, computations)
        if self.has_async:
            computations = self.async_ops(computations)
            entry = next(c for c in computations if c.name == entry.name)
        return HloModule(name, MappingProxyType(attributes), tuple(computations), entry)

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

    def frame_tables(self, pos: int) -> int:
        """The four frame tables from offset `pos` (at 'FileNames'), read token by token as
        XLA reads them: row ids int64, a row's fields int32, each required field once. Returns
        the offset after the last row."""
        text = self.text
        for table in _TABLE_ORDER:
            pos = self.skip(pos)
            word = _TABLE_WORD.match(text, pos)
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
                word = _TABLE_WORD.match(text, pos)
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
            if opcode in _BUILT:
                if at not in named and opcode in _LOOKS_AT_OPERANDS:
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
                if instruction.opcode not in _CALLERS:
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
            if instruction.opcode not in _ASYNC:
                for name in instruction.called_computations:
                    if name in started:
                        raise self.error(
                            instruction.line_no - 1,
                            f"only async ops calling '{name}', which an async-start calls",
                            near=name,
                        )
        ops: dict[int, list[HloInstruction]] = {}
        for instruction, at in callers:
            if instruction.opcode in _ASYNC or async_sugar(instruction.opcode) is not None:
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
            wrapped in _BUILT
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
            if generic != "async-start" or key in _ANY_OR_THREAD:
                pieces.append(f"{key}={value}")
        return op._replace(opcode=generic, attributes_text=", ".join(pieces))

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
        if opcode in _ONE_DIMENSION:
            found = _DIMENSIONS(instruction.attributes_text)
            if found is not None and (not found[1].strip() or "," in found[1]):
                return f"one dimension in dimensions= of '{opcode}', not {{{found[1]}}}"
        if opcode == "outfeed":
            found = _OUTFEED_SHAPE(instruction.attributes_text)
            if found is None:
                return None
            given = _squeezed(split_top_level(instruction.attributes_text[found.end() :])[0])
            problem = _shape_problem(given)
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
            return _element_count_problem(defined[operands[0]].shape, instruction.shape, True)
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
            return _element_count_problem(defined[operands[0]].shape, instruction.shape)
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
        listed = [_squeezed(p) for p in split_top_level(text[found.end() : close])]
        listed = [p for p in listed if p]
        for given in listed:
            if (problem := _shape_problem(given)) is not None:
                return f"operand_layout_constraints of shapes XLA reads: {problem}"
        operands = instruction.operands
        if len(listed) != len(operands):
            return (
                f"{len(operands)} operand layout constraint{'s' if len(operands) != 1 else ''}"
                f" (one per operand), not {len(listed)}"
            )
        for number, (given, name) in enumerate(zip(listed, operands, strict=True)):
            if not _compatible(Shape(given), Shape(defined[name].shape)):
                return (
                    f"operand layout constraint {number} of the operand's shape "
                    f"{defined[name].shape}, not {given}"
                )
        return None

    # module_header ::= 'HloModule' name (',' attribute_name '=' value)*
    def module_header(self, pos: int) -> tuple[str, dict[str, str], int]:
        text = self.text
        at = self.skip(pos)
        match = _IDENT.match(text, at) if at > pos else None
        if match is None:
            raise self.stray(at, "'HloModule <name>' followed by ', key=value' attributes")
        if (problem := _reserved(match.group())) is not None:
            raise self.error_at(at, f"a module name, not {problem}")
        attributes: dict[str, str] = {}
        pos = match.end()
        if text.startswith(":", pos):  # `HloModule name:`, as XLA once printed it
            pos += 1
        where: dict[str, int] = {}  # attribute name -> offset
        while text.startswith(",", at := self.skip(pos)):
            at = self.skip(at + 1)
            key = _ATTRIBUTE_NAME.match(text, at)
            if key is None:
                raise self.stray(at, "module attributes as 'key=value'")
            name = key.group()[:-1]
            if name in where:
                raise self.error_at(at, f"each module attribute once, not '{name}' again")
            printed = (
                _PRINTED_ENTRY_LAYOUT.match(text, key.end())
                if name == "entry_computation_layout"
                else None
            )
            if printed is not None:  # long (a shape per parameter): read at once
                value, pos = _COMMENT_RUN.sub(" ", printed.group()), printed.end()
            else:
                value, pos = self.value(key.end(), single=True)
            attributes[name] = value
            where[name] = at
        if (problem := check_module_attributes(attributes)) is not None:
            name, expected = problem
            raise self.error_at(where[name], f"{expected} (module attribute '{name}')")
        return match.group().removeprefix("%"), attributes, pos

    # computation ::= 'ENTRY'? name ('(' params ')' '->' shape)? '{' instruction+ '}'
    #                 (',' 'execution_thread=' string)?
    def computation(self, pos: int) -> tuple[HloComputation, int]:
        text = self.text
        index = self.line_of(pos)
        # the common one-line header as XLA prints it, without comments or strings
        end = text.find("\n", pos)
        line = text[pos : end if end >= 0 else len(text)].rstrip()
        if line[-1:] == "{" and "/" not in line and '"' not in line and "'" not in line:
            match = _HEADER_LINE.fullmatch(line)
            if match is not None and line.count("(") == line.count(")"):
                result = self.signature(match.group(3), match.group(4), index)
                number = self.start(match.group(2))
                instructions, pos, _ = self.body(match.group(2), number, pos + len(line))
                computation = new_computation(
                    match.group(2), instructions, match.group(1) is not None, index + 1
                )
                self.check_result(computation, result)
                return self.computation_end(computation, pos)
        header = "a computation header 'name (params) -> shape {'"
        match = _IDENT.match(text, pos)
        is_entry = False
        if match is not None and match.group() == "ENTRY":
            is_entry = True
            match = _IDENT.match(text, self.skip(match.end()))
        if match is None:
            raise self.stray(pos, header)
        name = match.group().removeprefix("%")
        at = self.skip(match.end())
        result = None
        if text.startswith("(", at):
            close = self.group_end(at)
            self.signature(text[at + 1 : close - 1], None, index)
            at = self.skip(close)
            if not text.startswith("->", at):
                raise self.stray(at, "'->' and the result shape after the parameters")
            result, at = self.shape(self.skip(at + 2))
            at = self.skip(at)
        if not text.startswith("{", at):
            raise self.stray(at, header) if at < len(text) else self.error_at(pos, header)
        instructions, pos, _ = self.body(name, self.start(name), at + 1)
        computation = new_computation(name, instructions, is_entry, index + 1)
        self.check_result(computation, result)
        return self.computation_end(computation, pos)

    def start(self, name: str) -> int:
        """The number the callers of computation `name`, whose reading starts, are kept with."""
        self.started.append(name)
        self.taken.add(name)
        return len(self.started) - 1

    def call_value(self, key: str, pos: int) -> tuple[str, int] | None:
        """The value of the call attribute `key` (`to_apply`, `branch_computations`...) from
        `pos` when it writes a computation inline, as `{` instructions `}` (or a list holding
        one: `branch_computations={{...}, %b}`): each is read as a computation named `_`
        (`_.1`, ...), as XLA names it, added before the computation that calls it, and the
        value names it. None when the value writes no computation inline."""
        text = self.text
        if not text.startswith("{", pos):
            return None
        if key not in _CALL_LISTS:
            return self.inline_computation(pos)
        end = self.group_end(pos)
        if "{" not in text[pos + 1 : end]:
            return None
        names: list[str] = []
        at = self.skip(pos + 1)
        while not text.startswith("}", at):
            if text.startswith("{", at):
                name, at = self.inline_computation(at)
            else:
                word = _IDENT.match(text, at)
                if word is None:
                    raise self.stray(at, "a computation name or '{' instructions '}'")
                name, at = word.group().removeprefix("%"), word.end()
            names.append(name)
            at = self.skip(at)
            if text.startswith(",", at):
                at = self.skip(at + 1)
            elif not text.startswith("}", at):
                raise self.stray(at, "',' or '}' in the list of computations")
        return "{" + ", ".join(names) + "}", at + 1

    def inline_computation(self, pos: int) -> tuple[str, int]:
        """Read the computation written inline from the '{' at `pos`: its name and the offset
        after its '}'."""
        name = "_"
        n = 0
        while name in self.taken:
            n += 1
            name = f"_.{n}"
        nested, self.nested = self.nested, []
        instructions, end, _ = self.body(name, self.start(name), pos + 1)
        self.nested = nested
        computation = new_computation(name, instructions, False, self.line_of(pos) + 1)
        self.inline.append(computation)
        self.read[name] = computation
        return name, end

    def signature(self, parameters: str | None, result: str | None, index: int) -> str | None:
        """Check a header's `name: shape` parameters and result shape (as one-line text);
        return the result shape without blanks, or None when the header has none."""
        if parameters is not None and not self.printed_parameters(parameters):
            written = _ANY_COMMENT.sub(" ", parameters)
            for piece in split_top_level(written) if written.strip() else ():
                found = _PARAMETER(piece)
                if (
                    found is None
                    or (found[1] == "%" and found[3] == ":")
                    or (not found[1] and not found[3] and _reserved(found[2]) is not None)
                    or not is_shape(shape := _squeezed(found[4]))
                ):
                    shown = " ".join(piece.split())
                    raise self.error(
                        index,
                        f"parameters as 'name: shape' (or 'name shape'), not '{shown}'",
                        near=shown or None,
                    )
                if (problem := _shape_problem(shape)) is not None:
                    raise self.error(index, problem, near=found[2])
        if result is None or result in self.header_shapes:
            return result
        if _PRINTED_SHAPE_TEXT(result) is not None and _shape_problem(result) is None:
            self.header_shapes.add(result)
            return result
        result = _squeezed(result)
        if not is_shape(result):
            raise self.error(index, f"a result shape after '->', not '{result}'", near=result)
        if (problem := _shape_problem(result)) is not None:
            raise self.error(index, problem, near="->")
        return result

    def printed_parameters(self, parameters: str) -> bool:
        """Whether `parameters` is 'name: shape, ...' as XLA prints it (each shape checked once
        per module; a tuple shape, which holds ', ', is read by the whole-list pattern)."""
        known = self.header_shapes
        for piece in parameters.split(", "):
            name, colon, shape = piece.partition(": ")
            if _PARAMETER_NAME(name) is None:
                return self.printed_tuple_parameters(parameters)
            if shape not in known:
                if not colon or _PRINTED_SHAPE_TEXT(shape) is None:
                    return self.printed_tuple_parameters(parameters)
                if _shape_problem(shape) is not None:
                    return False
                known.add(shape)
        return True

    def printed_tuple_parameters(self, parameters: str) -> bool:
        """Whether `parameters` is 'name: shape, ...' as XLA prints it, tuple shapes among
        them, each shape one XLA takes."""
        if _PRINTED_PARAMETERS(parameters) is None:
            return False
        return all(_shape_problem(shape) is None for shape in _PARAMETER_NAMES(parameters) if shape)

    def check_result(self, computation: HloComputation, result: str | None) -> None:
        """XLA rejects a computation whose root does not have the header's result shape."""
        if result is None:
            return
        root = computation.root
        if root.shape[: len(result)] == result and root.shape[len(result) : len(result) + 1] in (
            "",
            "{",
        ):
            return  # the same shape, with or without a layout
        if (result, root.shape) not in self.compatible and not _compatible(
            Shape(result), Shape(root.shape)
        ):
            raise self.error(
                computation.line_no - 1,
                f"the result shape of '{computation.name}' to be its ROOT's "
                f"('{root.name}', {root.shape}), not {result}",
                near=result,
            )
        self.compatible.add((result, root.shape))

    def computation_end(self, computation: HloComputation, pos: int) -> tuple[HloComputation, int]:
        """After the closing '}': an optional `, execution_thread="name"`."""
        text = self.text
        at = self.skip(pos)
        if text.startswith(",", at):
            at = self.skip(at + 1)
            if not text.startswith("execution_thread=", at):
                raise self.stray(at, "'}' or '}, execution_thread=\"name\"'")
            start = self.skip(at + len("execution_thread="))
            value, pos = self.value(start, single=True)
            if value[0] not in "\"'" or not strings_ok(value):
                raise self.error_at(start, f"a quoted thread name (C escapes), not {value}")
        return computation, pos

    def resume(self, pos: int) -> tuple[bool, int, int]:
        """After an instruction ending at `pos`: (line mode?, line index, offset). Line mode
        when the next token starts its line (only blanks before it): then the offset is where
        that line starts; else it is the token's."""
        text = self.text
        skipped = _SKIP.match(text, pos)
        assert skipped is not None  # _SKIP matches the empty string too
        after = skipped.end()
        start = text.rfind("\n", 0, after) + 1
        if start > pos and (start == after or text[start:after].isspace()):
            return True, self.line_of(after), start
        return False, 0, after

    def body(
        self, computation: str, number: int, pos: int, line: int = -1
    ) -> tuple[tuple[HloInstruction, ...], int, int]:
        """Instructions up to the computation's closing '}', from offset `pos` or, in line
        mode, from line `line` (which starts at `pos`). Returns them, the offset after the '}'
        and -1, or (when the '}' stood alone on its line) the offset and index of the next
        line."""
        text = self.text
        size = len(text)
        build = tuple.__new__  # HloInstruction(...) without its argument handling
        after_comma = _KEY_AFTER_COMMA
        fast = _FAST.match
        opcodes = self.opcodes
        shapes = self.shapes
        callers = self.calling
        defined: dict[str, str] = {}
        look_up = defined.__getitem__
        parameters: set[str] = set()
        instructions: list[HloInstruction] = []
        append = instructions.append
        root = -1
        printed = self.printed_metadata
        literals = self.literals
        # the attribute list was one the fast path read and checked before for this opcode
        accepted = False
        # line index and offset of the last instruction, when the fast path read it (else -1)
        last_fast = last_fast_pos = -1
        if line >= 0:
            line_mode, i = True, line
        else:
            line_mode, i, pos = self.resume(pos)
        while True:
            if line_mode:
                match = fast(text, pos)
                # The common line: its opcode, shape and attribute list were all read and checked
                # before in this module, and it is no constant, new parameter number or second
                # ROOT. Any other line leaves this loop (before changing any state) and takes the
                # general path below with `match`.
                while match is not None:
                    is_root, name, shape, opcode, operand_text, tail = match.groups()
                    known = opcodes.get(opcode)
                    if (
                        known is None
                        or name in defined
                        or ("." not in name and (_KEYWORD(name) or _TYPE_NAME(name)))
                    ):
                        break
                    payload = numbered = None
                    if opcode in _PAYLOAD_OPCODES:
                        if opcode != "parameter":
                            if (shape, operand_text) not in literals:
                                break
                        elif operand_text in parameters or not operand_text.isdecimal():
                            break
                        else:
                            numbered = operand_text
                        payload = operand_text
                    seen = shapes.get(shape)
                    if seen is None:
                        break
                    shape = seen
                    if tail is None:
                        if known[5]:
                            break
                        tail = ""
                    else:
                        seen = known[4].get(tail)
                        if seen is not None:
                            tail = seen
                        elif (key := _without_metadata(tail, printed) or tail) in known[4] or (
                            opcode in callers and _callee_free(key) in known[4]
                        ):
                            known[4][tail] = tail
                        else:
                            break
                    try:
                        if payload is not None or not operand_text:
                            operands = ()
                        elif "," in operand_text:
                            operands = tuple(
                                map(
                                    look_up,
                                    operand_text.replace(", %", ", ").removeprefix("%").split(", "),
                                )
                            )
                        else:
                            operands = (look_up(operand_text.removeprefix("%")),)
                    except KeyError:
                        typed = self.typed_operands(operand_text, defined, instructions)
                        if typed is None:
                            break
                        operands = typed
                    if known[1] is not None and len(operands) != known[1]:
                        break
                    if is_root:
                        if root >= 0:
                            break
                        root = len(instructions)
                    if numbered is not None:
                        parameters.add(numbered)
                    defined[name] = name
                    instruction = build(
                        HloInstruction,
                        (name, opcode, shape, operands, tail, is_root is not None, payload, i + 1),
                    )
                    append(instruction)
                    if opcode in callers:
                        self.callers.append((instruction, number))
                    last_fast, last_fast_pos = i, pos
                    i += 1
                    pos = match.end() + 1
                    match = fast(text, pos)
                if pos > size:
                    count = len(self.lines)
                    raise self.error(count - 1, f"'}}' to close computation '{computation}'")
                if match is not None:
                    is_root, name, shape, opcode, operand_text, tail = match.groups()
                    # complete when brackets and quotes balance by count; in doubt, the token path
                    if (
                        shape not in shapes and _PRINTED_SHAPE_TEXT(shape) is None
                    ) or "/" in operand_text:  # a comment may hide the ')': the token path
                        match = None
                    elif tail is None:
                        tail = ""
                    elif (known := opcodes.get(opcode)) is not None and (
                        seen := known[4].get(tail)
                    ) is not None:
                        tail = seen  # read and checked before: skip the checks, share the text
                        accepted = True
                    elif (
                        not tail
                        or tail[-1] in ",= \t\r"
                        or tail.count("{") != tail.count("}")
                        or tail.count("(") != tail.count(")")
                        or (("[" in tail or "]" in tail) and tail.count("[") != tail.count("]"))
                        or (
                            '"' in tail
                            and (
                                _ESCAPED.sub("", tail).count('"') & 1
                                if "\\" in tail
                                else tail.count('"') & 1
                            )
                        )
                        or "//" in tail
                        or "/*" in tail
                        or " =" in tail  # 'name =': XLA's lexer reads no attribute name there
                        or ("} " in tail and _BRACE_THEN_NAME(tail) is not None)
                    ):
                        match = None
                if match is None:
                    end = self.line_end(pos)
                    stripped = text[pos:end].strip()
                    if not stripped or stripped.startswith("//"):
                        i, pos = i + 1, end + 1
                        continue
                    if stripped == "}":
                        i, pos = i + 1, end + 1
                        break
                    if stripped[0] == "," and last_fast >= 0:
                        # the attributes of the instruction read last go on: read it again
                        # (with the get-tuple-elements its operands added, same line number)
                        i, pos = last_fast, last_fast_pos
                        while instructions and instructions[-1].line_no == i + 1:
                            dropped = instructions.pop()
                            del defined[dropped.name]
                            if dropped.is_root:
                                root = -1
                            if self.callers and self.callers[-1][0] is dropped:
                                self.callers.pop()
                            if dropped.opcode == "parameter":
                                parameters.discard((dropped.payload or "").strip())
                    line_mode, last_fast = False, -1
                    continue
                if "." not in name and (
                    problem := _reserved(
                        "%" + name if text[match.start(2) - 1 : match.start(2)] == "%" else name,
                        True,
                    )
                ):
                    raise self.error(i, f"an instruction name, not {problem}", near=name)
                index = last_fast = i
                last_fast_pos = pos
                i += 1
                pos = match.end() + 1
                fast_tail = True
            else:
                pos = self.skip(pos)
                if text.startswith("}", pos):
                    pos += 1
                    i = -1
                    break
                index = self.line_of(pos)
                (is_root, name, shape, opcode, operand_text, tail, pos) = self.token_instruction(
                    pos
                )
                line_mode, i, pos = self.resume(pos)
                last_fast = -1
                fast_tail = False
                if self.nested:
                    self.add_nested(index, defined, parameters, instructions, computation)
            known = opcodes.get(opcode)
            if known is None:
                known = self.new_opcode(opcode, index)
            opcode, expected, allowed, bad_value, tails, required = known
            if accepted:
                accepted = False
            elif not tail:
                if required:
                    self.check_required(opcode, required, "", index, pos if fast_tail else 0)
            else:
                # attribute names: the first, and each after a ',', each known and none twice
                # (a nested one may show up here too: then the exact split decides)
                names = after_comma(tail) if "," in tail else []
                names.append(tail[: tail.find("=")])
                if (allowed is not None and not allowed.issuperset(names)) or (
                    len(names) > 1 and len(set(names)) != len(names)
                ):
                    self.check_attribute_names(opcode, allowed, tail, index)
                if bad_value is not None and bad_value(tail):
                    self.check_attribute_values(opcode, tail, index)
                if "metadata=" not in tail:
                    key = None
                elif (key := _without_metadata(tail, printed)) is None:
                    self.check_metadata(tail, index)
                # (after the values: XLA reads every attribute before it misses one)
                if required and not required.issubset(names):
                    self.check_required(opcode, required, tail, index, pos if fast_tail else 0)
                # (parameter_replication is checked against the shape: not cached by the tail)
                if fast_tail and (opcode != "parameter" or "parameter_replication" not in tail):
                    tails[tail] = tail
                    if key is not None:
                        tails[key] = key
                    if opcode in callers:
                        free = _callee_free(key or tail)
                        tails[free] = free
            if shape:
                known = shapes.get(shape)
                if known is None:
                    self.check_shape(shape, index)
                    shapes[shape] = known = shape
                shape = known
            elif opcode in _PAYLOAD_OPCODES:
                raise self.error(
                    index, f"a shape before '{opcode}' (XLA infers none for it)", near=opcode
                )
            payload = None
            operands: tuple[str, ...] = ()
            if opcode in _PAYLOAD_OPCODES:
                payload = operand_text
                if opcode == "parameter":
                    if payload in parameters or not payload.isdecimal():
                        self.check_parameter(payload, parameters, index, computation)
                    else:
                        parameters.add(payload)
                    if tail and "parameter_replication" in tail:
                        self.check_replication(tail, shape, index)
                else:
                    if (
                        shape[-2:] != "[]"
                        or (plain := _PLAIN_SCALAR.get(shape)) is None
                        or plain(payload) is None
                    ):
                        self.check_literal(payload, shape, index)
                    if fast_tail:
                        literals.add((shape, payload))
            elif operand_text:
                try:
                    # fast: '%a, %b' or 'a, b'; typed_operands and operands read the rest
                    if "," in operand_text:
                        operands = tuple(
                            map(
                                look_up,
                                operand_text.replace(", %", ", ").removeprefix("%").split(", "),
                            )
                        )
                    else:
                        operands = (look_up(operand_text.removeprefix("%")),)
                except KeyError:
                    typed = self.typed_operands(operand_text, defined, instructions)
                    operands = (
                        typed
                        if typed is not None
                        else self.operands(operand_text, defined, index, instructions, computation)
                    )
            if expected is not None and len(operands) != expected:
                raise self.error(
                    index,
                    f"{expected} operand{'s' if expected != 1 else ''} for "
                    f"'{opcode}', not {len(operands)}",
                    near=opcode,
                )
            if not shape:
                shape = self.inferred_shape(opcode, operands, tail, instructions, index)  # pyright: ignore[reportArgumentType]
            if name in defined:
                raise self.error(index, f"a new instruction name, not '{name}'", near=name)
            defined[name] = name
            if "." not in name and _KEYWORD(name):  # `%true`: its users must write the '%'
                self.keyword_names.add(name)
            if is_root:
                if root >= 0:
                    raise self.error(index, f"one ROOT in computation '{computation}'", near=name)
                root = len(instructions)
            instruction = build(
                HloInstruction,
                (name, opcode, shape, operands, tail, is_root is not None, payload, index + 1),
            )
            append(instruction)
            if opcode in callers:
                self.callers.append((instruction, number))
        if not instructions:
            raise self.error(
                self.line_of(pos - 1) if i < 0 else i - 1,
                f"at least one instruction in '{computation}'",
            )
        if self.has_control or self.keyword_names:
            self.check_names(instructions, computation)
        if parameters and not parameters.issuperset(_NUMBERS[: len(parameters)]):
            self.parameter_gap(instructions, len(parameters), computation)
        if root < 0:
            instructions[-1] = instructions[-1]._replace(is_root=True)
        return tuple(instructions), pos, i

    def check_names(self, instructions: list[HloInstruction], computation: str) -> None:
        """As XLA resolves names while it reads: each instruction a control-predecessors list
        names is one defined before in the computation, and an instruction named by a keyword
        (`%true`) is named with its '%' where it is an operand (`true` alone is the keyword)."""
        seen: set[str] = set()
        for instruction in instructions:
            line = instruction.line_no - 1
            if "control-predecessors=" in instruction.attributes_text:
                for name in _LISTED_NAME(instruction.attribute("control-predecessors", "")):
                    if name not in seen:
                        raise self.error(
                            line,
                            f"an instruction defined before '{instruction.name}' in "
                            f"'{computation}' as its control predecessor, not '{name}'",
                            near=name,
                        )
            for name in self.keyword_names.intersection(instruction.operands):
                written = self.lines[line]
                start = written.find(instruction.opcode + "(") + len(instruction.opcode)
                operands = written[start : match_close(written, start) + 1 or None]
                if re.search(rf"(?<![%\w.\-]){name}(?![\w.\-])", operands):
                    raise self.error(line, f"'%{name}' as the operand, not the keyword", near=name)
            seen.add(instruction.name)

    def add_nested(
        self,
        index: int,
        defined: dict[str, str],
        parameters: set[str],
        instructions: list[HloInstruction],
        computation: str,
    ) -> None:
        """Add the instructions written as operands on line `index` (self.nested), each before
        its user, as XLA's parser does."""
        nested, self.nested = self.nested, []
        for name, shape, opcode, operand_text in nested:
            known = self.opcodes.get(opcode) or self.new_opcode(opcode, index)
            opcode, expected, required = known[0], known[1], known[5]
            if required:  # XLA reads no attributes here: an opcode that needs one fails
                self.check_required(opcode, required, "", index, 0)
            payload = None
            operands: tuple[str, ...] = ()
            if opcode in _PAYLOAD_OPCODES:
                payload = operand_text
                if not shape:
                    raise self.error(
                        index, f"a shape before '{opcode}' (XLA infers none for it)", near=opcode
                    )
                if opcode == "parameter":
                    if payload in parameters or not payload.isdecimal():
                        self.check_parameter(payload, parameters, index, computation)
                    parameters.add(payload)
                else:
                    self.check_literal(payload, shape, index)
            elif operand_text:
                operands = self.operands(operand_text, defined, index, instructions, computation)
            if expected is not None and len(operands) != expected:
                raise self.error(
                    index, f"{expected} operands for '{opcode}', not {len(operands)}", near=opcode
                )
            if opcode == "broadcast" and any(
                (operand := Shape(self.shape_of(o, instructions))).dims or operand.is_tuple
                for o in operands
            ):
                raise self.error(
                    index,
                    "a scalar operand for a broadcast written as an operand (its dimensions= "
                    "cannot be written there)",
                    near=opcode,
                )
            if shape:
                self.check_shape(shape, index)
            else:
                shape = self.inferred_shape(opcode, operands, "", instructions, index)
            shape = self.shapes.setdefault(shape, shape)
            instructions.append(
                new_instruction(name, opcode, shape, operands, "", False, payload, index + 1)
            )
            defined[name] = name

    def inferred_shape(
        self,
        opcode: str,
        operands: tuple[str, ...],
        tail: str,
        instructions: list[HloInstruction],
        index: int,
    ) -> str:
        """The shape XLA's parser infers for an instruction written without one, else the error
        asking for it."""
        try:
            shape = infer_shape(
                opcode,
                [self.shape_of(o, instructions) for o in operands],
                tail,
                self.root_shape,
            )
        except CannotInfer as problem:
            raise self.error(
                index,
                f"a shape before '{opcode}': XLA cannot infer it here ({problem})",
                near=opcode,
            ) from None
        return self.shapes.setdefault(shape, shape)

    def root_shape(self, computation: str) -> str | None:
        """The root shape of computation `computation` when it was read before, else None."""
        found = self.read.get(computation)
        if found is None:
            return None
        return next(i.shape for i in reversed(found.instructions) if i.is_root)

    def parameter_gap(
        self, instructions: list[HloInstruction], count: int, computation: str
    ) -> None:
        """XLA numbers a computation's N parameters 0 to N-1 (its parser aborts otherwise)."""
        for instruction in instructions:
            if instruction.opcode != "parameter":
                continue
            number = int(_ANY_COMMENT.sub(" ", instruction.payload or "0"))
            if number >= count:
                raise self.error(
                    instruction.line_no - 1,
                    f"parameter numbers 0 to {count - 1} in '{computation}' ({count} "
                    f"parameters), not {number}",
                    near="parameter",
                )

    def new_opcode(self, opcode: str, index: int) -> _OpcodeFacts:
        """(opcode, its fixed operand count or None, the attributes it takes or None when
        not known, a test for a typed attribute with a bad value or None, an empty dict of
        checked attribute lists), once per opcode and module."""
        if not is_opcode(opcode):
            hint = did_you_mean(opcode, OPCODE_ARITY)
            raise self.error(index, f"an XLA opcode, not '{opcode}'{hint}", near=opcode)
        sugar = async_sugar(opcode)
        if sugar is not None or opcode in _ASYNC:
            self.has_async = True
        if sugar is None:
            facts = self.opcodes[opcode] = (
                opcode,
                OPCODE_ARITY.get(opcode),
                OPCODE_ATTRIBUTES.get(opcode),
                BAD_ATTRIBUTE_VALUE.get(opcode),
                {},
                _REQUIRED.get(opcode, frozenset()),
            )
            return facts
        # `X-start` is async-start wrapping X: XLA builds X from its attributes (and from as
        # many parameters as the start's operand tuple has, or as X takes: its operands are
        # not read); `X-update` and `X-done` take what every instruction takes, and the thread
        generic, wrapped = sugar
        if wrapped in _NOT_WRAPPED:
            raise self.error(
                index, f"an opcode XLA can wrap in an async op, not '{wrapped}'", near=opcode
            )
        self.calling.add(opcode)
        if generic == "async-start":
            allowed = OPCODE_ATTRIBUTES.get(wrapped)
            facts = self.opcodes[opcode] = (
                opcode,
                None,
                None if allowed is None else allowed | _THREAD,
                _sugar_value_check(wrapped),
                {},
                _REQUIRED.get(wrapped, frozenset()),
            )
        else:
            facts = self.opcodes[opcode] = (
                opcode,
                None,
                ANY_INSTRUCTION_ATTRIBUTES | _THREAD,
                _sugar_value_check(None),
                {},
                frozenset(),
            )
        return facts

    def check_required(
        self, opcode: str, required: frozenset[str], tail: str, index: int, after: int
    ) -> None:
        """The attribute list `tail` has each attribute `opcode` requires (a conditional: its
        branch_computations, or true_computation and false_computation). `after`: for a line
        the fast path read, the offset after it: the list may go on after a ',' there."""
        if after and self.text.startswith(",", self.skip(after)):
            return
        given = {key for key, _ in split_attributes(tail)}
        if opcode == "conditional" and {"true_computation", "false_computation"} <= given:
            return
        missing = sorted(required - given)
        if missing:
            raise self.error(
                index,
                f"the attribute{'s' if len(missing) > 1 else ''} '{opcode}' requires: "
                f"{', '.join(f'{name}=...' for name in missing)}",
                near=opcode,
            )

    def check_attribute_values(self, opcode: str, tail: str, index: int) -> None:
        """Each typed attribute of `opcode` in the list `tail` has a value of its syntax."""
        sugar = async_sugar(opcode)
        other = OTHER_TYPE.get(opcode if sugar is None else sugar[1], {})
        for key, value in split_attributes(tail):
            syntax = other[key] if key in other else ATTRIBUTE_SYNTAX.get(key)
            if syntax is not None and not syntax[1].fullmatch(value):
                # at `key=` (XLA's "error parsing attribute" points there; the opcode's own
                # name may come first: slice, pad, domain)
                raise self.error(
                    index, f"{syntax[0]} for '{key}' of '{opcode}', not '{value}'", near=f"{key}="
                )

    def check_metadata(self, tail: str, index: int) -> None:
        """The metadata in the attribute list `tail`, if any, is '{' (field ','?)* '}' with
        fields XLA knows, each once, each value of its type."""
        value = next((v for k, v in split_attributes(tail) if k == "metadata"), None)
        if value is None:
            return
        if value[:1] != "{" or value[-1:] != "}":
            raise self.error(index, f"metadata as {{field=value ...}}, not '{value}'", near=value)
        body, pos, seen = value[1:-1], 0, set()
        if body.lstrip().startswith(",") and body.lstrip()[1:].strip():  # XLA skips one
            pos = body.index(",") + 1
        while body[pos:].strip():
            match = _METADATA_FIELD.match(body, pos)
            if match is None:
                rest = body[pos:].split()[0]
                raise self.error(index, f"a metadata field as name=value, not '{rest}'", near=rest)
            field, text, comma = match.groups()
            kind = _METADATA_FIELDS.get(field)
            if kind is None:
                hint = did_you_mean(field, _METADATA_FIELDS)
                raise self.error(
                    index,
                    f"a metadata field ({', '.join(sorted(_METADATA_FIELDS))}), "
                    f"not '{field}'{hint}",
                    near=field,
                )
            if field in seen:
                raise self.error(
                    index, f"each metadata field once, not '{field}' again", near=field
                )
            seen.add(field)
            if _FIELD_VALUE[kind].fullmatch(text) is None or not (
                strings_ok(text) if kind == "a string" else metadata_int_ok(field, text)
            ):
                raise self.error(
                    index, f"{kind} for metadata field '{field}', not '{text}'", near=field
                )
            pos = match.end()
            if comma and pos == len(body):
                raise self.error(index, f"a metadata field after ',' in '{value}'", near=field)

    def check_attribute_names(
        self, opcode: str, allowed: frozenset[str] | None, tail: str, index: int
    ) -> None:
        """Every attribute of the list `tail` is one `opcode` takes (XLA rejects others; None:
        any name), and none comes twice."""
        seen: set[str] = set()
        for key, value in split_attributes(tail):
            if _ATTRIBUTE_KEY(key) is None:
                piece = f"{key}={value}" if value else key
                raise self.error(
                    index,
                    f"an attribute 'name=value' after ',', not '{piece}'",
                    near=piece if piece else None,
                )
            if key in seen:
                line = self.lines[index]
                found = list(re.finditer(r"(?<![\w.\-])" + re.escape(key) + "=", line))
                column = found[-1].start() + 1 if len(found) > 1 else None
                raise HloParseError(
                    index + 1, line, f"each attribute once, not '{key}' again", column
                )
            seen.add(key)
            if allowed is not None and key not in allowed:
                own = sorted(allowed - ANY_INSTRUCTION_ATTRIBUTES)
                hint = did_you_mean(key, sorted(allowed))
                takes = f"{', '.join(own)} or " if own else ""
                raise self.error(
                    index,
                    f"an attribute '{opcode}' takes ({takes}any instruction's: "
                    f"{', '.join(sorted(ANY_INSTRUCTION_ATTRIBUTES))}), not '{key}'{hint}",
                    near=key,
                )

    def check_parameter(
        self, payload: str, parameters: set[str], index: int, computation: str
    ) -> None:
        number = _ANY_COMMENT.sub(" ", payload).strip()
        if not number.isdecimal():
            raise self.error(index, "a parameter number in 'parameter(N)'", near="parameter")
        if number in parameters or str(int(number)) in parameters:
            raise self.error(
                index,
                f"a parameter number not used before in '{computation}', not {number}",
                near="parameter",
            )
        parameters.add(number)

    def check_replication(self, tail: str, shape: str, index: int) -> None:
        """parameter_replication has one entry per leaf buffer of the parameter's shape."""
        value = next((v for k, v in split_attributes(tail) if k == "parameter_replication"), None)
        if value is None:
            return
        given = len(re.findall(r"true|false", value))
        leaves = _leaf_count(Shape(shape))
        if given != leaves:
            raise self.error(
                index,
                f"as many parameter_replication entries as the parameter has leaf buffers"
                f" ({leaves}), not {given}",
                near="parameter_replication",
            )

    def check_literal(self, payload: str, shape: str, index: int) -> None:
        """A constant's literal, as XLA's parser reads it for the shape (literal_problem): a
        scalar number or true/false needs its value checked only."""
        if shape[-2:] == "[]" and _SCALAR.fullmatch(payload.strip()) is not None:
            problem = literal_value_problem(payload, shape[:-2])
        else:
            literal = _ANY_COMMENT.sub(" ", payload) if "/" in payload else payload
            problem = literal_problem(literal, shape)
        if problem is not None:
            raise self.error(index, problem, near="constant")

    # instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' attribute)*
    def token_instruction(self, pos: int) -> tuple[str | None, str, str, str, str, str, int]:
        text = self.text
        start = pos
        what = "an instruction 'name = shape opcode(operands)'"
        match = _IDENT.match(text, pos)
        is_root = None
        if match is not None and match.group() == "ROOT":
            is_root = "ROOT "
            match = _IDENT.match(text, self.skip(match.end()))
        if match is None:
            raise self.stray(self.skip(pos) if is_root else start, what)
        word, end = match.group(), match.end()
        if (problem := _reserved(word, True)) is not None:
            raise self.error_at(match.start(), f"an instruction name, not {problem}")
        if word.removeprefix("%").startswith("__"):
            raise self.error_at(
                match.start(), f"an instruction name not starting '__' (XLA's own), not '{word}'"
            )
        if word[0] != "%" and text.startswith("=", end):
            raise self.error_at(
                match.start(),
                f"{what}: '{word}=' without a space before '=' is an attribute name to XLA",
            )
        at = self.expect(end, "=", f"'=' after the instruction name '{word}'")
        at = self.skip(at)
        if (opcode := _IDENT.match(text, at)) is not None and (
            _DTYPE_WORD.match(text, at) is None and text.startswith("(", self.skip(opcode.end()))
        ):
            shape = ""  # no shape: XLA infers it once the operands are read (see _infer)
        else:
            shape, at = self.shape(at)
        at = self.skip(at)
        match = _IDENT.match(text, at)
        if match is None or match.group()[0] == "%":
            raise self.stray(at, "an opcode followed by '(' after the shape")
        opcode = match.group()
        at = self.expect(match.end(), "(", f"'(' after the opcode '{opcode}'")
        close = self.group_end(at - 1)
        if opcode == "parameter" or opcode == "constant":
            operand_text = " ".join(_ANY_COMMENT.sub(" ", text[at : close - 1]).split())
        else:
            operand_text = self.operand_list(at, close - 1)
        pos = close
        attributes = []
        while text.startswith(",", at := self.skip(pos)):
            at = self.skip(at + 1)
            key = _ATTRIBUTE_NAME.match(text, at)
            if key is None:
                raise self.stray(at, "an attribute 'name=value' after ','")
            inline = None
            if key.group()[:-1] in _CALL_KEYS:
                inline = self.call_value(key.group()[:-1], self.skip(key.end()))
            value, pos = inline if inline is not None else self.value(key.end())
            attributes.append(key.group() + value)
        if at < len(text) and text[at] not in "}" and not self.starts_instruction(at):
            raise self.stray(at, "',' before attributes after the operand list")
        name = word.removeprefix("%")
        return is_root, name, shape, opcode, operand_text, ", ".join(attributes), pos

    # operands ::= (shape? name ('#' int)? (',' shape? name ('#' int)?)*)?
    def operand_list(self, pos: int, end: int) -> str:
        text = self.text
        names = []
        at = self.skip(pos)
        if at >= end:
            return ""
        while True:
            if text.startswith(",", at):  # an empty operand: XLA skips it
                at = self.skip(at + 1)
                if at >= end:
                    return ", ".join(names)
                continue
            shape = ""
            if text.startswith("(", at) or _DTYPE_WORD.match(text, at):
                shape, at = self.shape(at)
                shape += " "
                at = self.skip(at)
            match = _IDENT.match(text, at)
            if match is None or at >= end:
                raise self.stray(at, "operand names separated by ','")
            name = match.group().removeprefix("%")
            at = match.end()
            if match.group()[0] != "%" and text.startswith("(", self.skip(at)):
                name, at = self.nested_instruction(shape.strip(), name, self.skip(at))
                shape = ""
            if text.startswith("#", at):
                number = _INT.match(text, at + 1)
                name += "#" + (number.group() if number else "")
                at = number.end() if number else at + 1
            names.append(shape + name)
            at = self.skip(at)
            if at >= end:
                return ", ".join(names)
            if text[at] != ",":
                raise self.stray(at, "',' between operands")
            at = self.skip(at + 1)

    def nested_instruction(self, shape: str, opcode: str, pos: int) -> tuple[str, int]:
        """An instruction written as an operand, `shape? opcode(operands)` with its '(' at
        `pos` (XLA reads no attributes there): queued in `self.nested`, its operands first,
        under the name XLA gives it (`opcode.anon`, then `.1`, `.2`... when taken). Returns the
        name and the offset after its ')'."""
        close = self.group_end(pos)
        if opcode in _PAYLOAD_OPCODES:
            operands = " ".join(_ANY_COMMENT.sub(" ", self.text[pos + 1 : close - 1]).split())
        else:
            operands = self.operand_list(pos + 1, close - 1)
        name = f"{opcode}.anon"
        number = 0
        while name in self.nested_names:
            number += 1
            name = f"{opcode}.anon.{number}"
        self.nested_names.add(name)
        self.nested.append((name, shape, opcode, operands))
        return name, close

    # operands with shapes or comments, read by the fast path
    def operands(
        self,
        text: str,
        defined: dict[str, str],
        index: int,
        instructions: list[HloInstruction],
        computation: str,
    ) -> tuple[str, ...]:
        """Operand names from an operand list in any spelling XLA reads: `%a, b`, comments,
        empty operands (XLA skips `a,, b` and a leading or trailing ','), and `shape name`,
        whose shape must be the operand's (layouts and dynamic bounds aside)."""
        found: list[str] = []
        for piece in split_top_level(_ANY_COMMENT.sub(" ", text)):
            piece = piece.strip()
            if not piece:
                continue
            match = _TYPED_OPERAND(piece)
            written = _squeezed(match.group(1)) if match is not None else piece
            if match is None or (written and not is_shape(written)):
                raise self.error(
                    index,
                    f"an operand as 'name' or 'shape name' (is a ',' missing?), not '{piece}'",
                    near=piece,
                )
            name = match.group(2)
            if name not in defined:
                self.tuple_element(name, defined, index, instructions, computation)
            if written:
                if (problem := _shape_problem(written)) is not None:
                    raise self.error(
                        index, f"a shape before operand '{name}': {problem}", near=piece
                    )
                actual = self.shape_of(name, instructions)
                if not _compatible(Shape(written), Shape(actual)):
                    raise self.error(
                        index,
                        f"the shape of operand '{name}', {actual}, not {written}",
                        near=piece,
                    )
            found.append(name)
        return tuple(found)

    def typed_operands(
        self, text: str, defined: dict[str, str], instructions: list[HloInstruction]
    ) -> tuple[str, ...] | None:
        """The operand names of XLA's long form (`f32[2]{0} %a, s32[] %b`), when each names an
        instruction defined before and its written shape is in printed form and the operand's
        (layouts aside); else None, and `operands` reads the list and says what is wrong."""
        if _TYPED_OPERANDS(text) is None:
            return None
        compatible = self.compatible
        names: list[str] = []
        for written, name in _TYPED_PAIRS(text):
            if name not in defined:
                return None
            actual = self.shape_of(name, instructions)
            if written != actual and (written, actual) not in compatible:
                if (
                    _PRINTED_SHAPE_TEXT(written) is None
                    or _shape_problem(written) is not None
                    or not _compatible(Shape(written), Shape(actual))
                ):
                    return None
                compatible.add((written, actual))
            names.append(name)
        return tuple(names)

    def shape_of(self, name: str, instructions: list[HloInstruction]) -> str:
        """The shape of instruction `name` of the computation being read (`instructions`)."""
        known, index = self._shape_index
        if known is not instructions:
            index = {}
            self._shape_index = (instructions, index)
        if name not in index:
            index.update((i.name, i.shape) for i in instructions[len(index) :])
        return index[name]

    def tuple_element(
        self,
        name: str,
        defined: dict[str, str],
        index: int,
        instructions: list[HloInstruction],
        computation: str,
    ) -> None:
        """Add the get-tuple-element that operand `name#N` stands for, as XLA's parser does.

        Newer XLA prints element N of a tuple-shaped instruction as `name#N` (loop-carried
        tuples, multi-output collectives) and its parser turns each distinct one into a
        `get-tuple-element`. Here it is named `name#N` (a name XLA cannot print, so it never
        clashes) and placed just before its first user.
        """
        base, sep, element = name.partition("#")
        if not sep or base not in defined:
            raise self.error(
                index, f"operand '{name}' defined earlier in computation '{computation}'", near=name
            )
        tuple_shape = self.shape_of(base, instructions)
        elements = Shape(tuple_shape).elements
        if not element.isdecimal() or int(element) >= len(elements):
            raise self.error(index, f"'{base}#N' with N an element of its shape {tuple_shape}")
        shape = self.shapes.setdefault(elements[int(element)].text, elements[int(element)].text)
        instructions.append(
            new_instruction(
                name,
                "get-tuple-element",
                shape,
                (base,),
                f"index={element}",
                False,
                None,
                index + 1,
            )
        )
        defined[name] = name
