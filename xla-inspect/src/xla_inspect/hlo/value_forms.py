"""Value forms shared by many attributes: statistics, tolerances, result accuracy, enums,
control predecessors, origins, domains, shape indices and aliasing, as regexes plus checks.
"""

from __future__ import annotations

import re

from xla_inspect.hlo.lexical import DTYPE
from xla_inspect.hlo.shardings import sharding_ok
from xla_inspect.hlo.strings import NAME_EQ, Scanned
from xla_inspect.hlo.values import (
    END_OF_WORD,
    INT,
    INT_LIST,
    QUOTED,
    Checked,
    braced,
    ints_fit,
)


def float_ok(text: str) -> bool:
    """Within float's range (XLA reads a double and rejects one a float cannot hold)."""
    return text.lstrip("-") == "nan" or abs(float(text)) <= 3.4028234663852886e38


# a number token: XLA's lexer reads '1.5', '1e3' and '.5' as decimals, '-2' as an integer
_WHOLE = r"-?[0-9]++(?![0-9.]|[eE][+-]?[0-9])"


_NUMBER = r"-?(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++)(?:[eE][+-]?[0-9]++)?"


# statistics ::= '{' (name '=' int (',' name '=' number)*)? '}' (the first is the index shown)
STATISTICS = rf"\{{\s*(?:{NAME_EQ}\s*{_WHOLE}(?:\s*,\s*{NAME_EQ}\s*{_NUMBER})*+)?\s*\}}"


BOOL_WORD = rf"(?:true|false){END_OF_WORD}"


# result_accuracy ::= '{' ('mode=' mode | 'tolerance={' (tol '=' number (',' ...)*)? '}') '}'
_TOLERANCE = rf"(?:atol|rtol|ulps)=\s*(?:{_NUMBER}|-?inf{END_OF_WORD})"


_TOLERANCE_VALUE = re.compile(r"(atol|rtol|ulps)=\s*([^\s,{}]+)")


def tolerances_ok(text: str) -> bool:
    """No tolerance XLA refuses (it aborts the process on one): atol and rtol not negative and
    not NaN; ulps, read as a double and cast to an int64, not negative (so below 2^63)."""
    for name, number in _TOLERANCE_VALUE.findall(text):
        value = float(number)
        if value != value or (value <= -1 if name == "ulps" else value < 0):
            return False
        if name == "ulps" and value >= 2.0**63:
            return False
    return True


RESULT_ACCURACY = (
    rf"\{{\s*(?:mode=\s*(?i:default|highest){END_OF_WORD}"
    rf"|tolerance=\s*\{{\s*(?:{_TOLERANCE}(?:\s*,\s*{_TOLERANCE})*+)?\s*\}})\s*\}}"
)


# an enumeration value as XLA's parser first reads it: an identifier token, so no keyword and no
# element type name (which word names a value is checked when the instruction is built)
_ENUM_WORD = (
    r"(?!(?:true|false|inf|nan|HloModule|ENTRY|ROOT|FileNames|FunctionNames|FileLocations"
    r"|StackFrames|maximal|replicated|manual|last_tile_dim_replicate|shard_as|shard_like"
    rf"|unknown|unreduced|{DTYPE}){END_OF_WORD})[A-Za-z_][\w.\-]*+"
)


# control-predecessors ::= '{' name (',' name)* '}'  (at least one)
_INSTRUCTION_NAME = r"%?[A-Za-z_][\w.\-]*+"


CONTROL_PREDECESSORS = rf"\{{\s*{_INSTRUCTION_NAME}(?:\s*,\s*{_INSTRUCTION_NAME})*+\s*\}}"


# origin ::= '{' '[synthetic_call]' '}' | '{' tree '}', tree: arrays '{' string shape_index? '}'
# (or '{}', an empty leaf) in parentheses and commas (a tuple tree)
_ORIGINAL_ARRAY = rf"\{{\s*(?:(?:{QUOTED})(?:\s*\{{[^{{}}]*+\}})?)?\s*\}}"


ORIGIN = rf"\{{\s*(?:\[\s*synthetic_call\s*\]|(?:[(),\s]|{_ORIGINAL_ARRAY})*+)\s*\}}"


# domain ::= '{' kind="sharding" ',' entry=sharding ',' exit=sharding '}' (any order, each
# once; XLA's parser knows no other kind)
_DOMAIN_PART = r"kind=\s*(?:\"sharding\"|'sharding')|" + rf"(?:entry|exit)=\s*{braced(4)}"


DOMAIN = rf"\{{\s*(?:{_DOMAIN_PART})(?:\s*,\s*(?:{_DOMAIN_PART}))*+\s*\}}"


_DOMAIN_NAMES = re.compile(r"(?:[{,]\s*)(kind|entry|exit)=")


_DOMAIN_SHARDING = re.compile(rf"(?:[{{,]\s*)(?:entry|exit)=\s*({braced(4)})")


def domain_ok(text: str) -> bool:
    """kind, entry and exit each once; entry and exit each a sharding XLA reads."""
    names = _DOMAIN_NAMES.findall(text)
    return sorted(names) == ["entry", "exit", "kind"] and all(
        map(sharding_ok, _DOMAIN_SHARDING.findall(text))
    )


# output_to_operand_aliasing ::= '{' (entry (',' entry)* ','?)? '}',
# entry ::= shape_index ':' '(' int ',' shape_index ')', shape_index ::= '{' (ints ','?)? '}'
_SHAPE_INDEX = rf"\{{\s*(?:{INT_LIST}(?:\s*,)?)?\s*\}}"


ALIASING = rf"{_SHAPE_INDEX}\s*:\s*\(\s*{INT}\s*,\s*{_SHAPE_INDEX}\s*\)"


def enum(words: str, ignore_case: bool = False) -> re.Pattern[str]:
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(f"(?:{'|'.join(words.split())}){END_OF_WORD}", flags)


def fits_int64(text: str) -> bool:
    """Whether XLA's lexer reads integer `text`: -2^63 to 2^64-1 (2^63 on wrapped)."""
    return len(text) < 19 or -(2**63) <= int(text) < 2**64


INT_LISTS = (
    "dimensions lhs_contracting_dims rhs_contracting_dims lhs_batch_dims rhs_batch_dims"
    " lhs_ragged_dims rhs_group_dims offset_dims collapsed_slice_dims start_index_map"
    " operand_batching_dims start_indices_batching_dims update_window_dims"
    " inserted_window_dims scatter_dims_to_operand_dims input_batching_dims"
    " scatter_indices_batching_dims dynamic_slice_sizes fft_length slice_sizes"
)


INTS = (
    "index iota_dimension feature_index index_vector_dim channel_id exponent_bits mantissa_bits"
    " feature_group_count batch_group_count k inferred_dimension cross_program_prefetch_index"
    " delta num_carries"
)


BOOLS = (
    "is_stable indices_are_sorted unique_indices constrain_layout use_global_device_ids"
    " is_host_transfer largest lower left_side unit_diagonal is_composite"
    " custom_call_has_side_effect has_dynamic_root is_reverse is_associative"
)


ValueSyntax = re.Pattern[str] | Checked | Scanned


def in_range(syntax: re.Pattern[str] | Checked) -> Checked:
    """`syntax`, its integer tokens also within the lexer's range."""
    if isinstance(syntax, Checked):
        valid = syntax._valid  # pyright: ignore[reportPrivateUsage]
        pattern = syntax._pattern  # pyright: ignore[reportPrivateUsage]
        return Checked(pattern.pattern, lambda t: ints_fit(t) and valid(t), pattern.flags)
    return Checked(syntax.pattern, ints_fit, syntax.flags)
