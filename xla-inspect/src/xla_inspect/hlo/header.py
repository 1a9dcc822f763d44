"""The header attributes XLA's ParseHloModule allows (a table: name -> reader and what it
expects) and `check_module_attributes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xla_inspect.errors import HloParseError, did_you_mean
from xla_inspect.hlo.header_values import (
    Cursor,
    Mismatch,
    aliasing,
    bool_list,
    buffer_donor,
    computation_layout,
    debug_attributes,
    frontend_attributes,
    original_array,
    read_bool,
    read_int,
    read_string,
    squeezed,
    string_or_json_dict,
    whole_value,
)


# origin_recovery_table ::= '{' (original_array ':' original_array (',' module_string)?)* '}'
# (no ',' between entries; the string holds a whole HloModule, which must parse)
def _recovery_table(cursor: Cursor) -> None:
    cursor.expect("{")
    while not cursor.eat("}"):
        original_array(cursor)
        cursor.expect(":")
        original_array(cursor)
        if cursor.eat(","):
            module = read_string(cursor)[1:-1]
            try:
                # the escapes undone (non-ASCII text is kept as bytes, which only strings hold)
                text = module.encode().decode("unicode_escape")
                problem = check_module_attributes(cursor.parse_module(text), cursor.parse_module)
            except (HloParseError, UnicodeError) as exc:
                raise Mismatch(f"a string holding an HloModule that parses ({exc})") from None
            if problem is not None:
                raise Mismatch(f"a string holding an HloModule whose {problem[0]} is {problem[1]}")


# -- the attributes XLA's ParseHloModule allows, each with its value's form ----------------------

MODULE_ATTRIBUTES: dict[str, tuple[Callable[[Cursor], None], str]] = {
    "alias_passthrough_params": (whole_value(read_bool), "true or false"),
    "allow_spmd_sharding_propagation_to_output": (
        whole_value(bool_list),
        "true, false or a braced list such as {true,false}",
    ),
    "allow_spmd_sharding_propagation_to_parameters": (
        whole_value(bool_list),
        "true, false or a braced list such as {true,false}",
    ),
    "backend_config": (whole_value(string_or_json_dict), "a quoted string or a JSON dict {...}"),
    "buffer_donor": (whole_value(buffer_donor), "{ (0, {}), (1, {0}) }: (parameter, shape index)"),
    "debug_attributes": (
        whole_value(debug_attributes),
        '{ {"name" {0}}: {op_id=1, callback_id=2, partitioned=true, log_mode=default} }',
    ),
    "entry_computation_layout": (
        whole_value(computation_layout),
        "{(shape, ...)->shape} such as {(f32[2,3]{1,0}, s32[])->f32[2]{0}}",
    ),
    "frontend_attributes": (
        whole_value(frontend_attributes),
        '{name="value", other={json}}: name=value pairs, values quoted or JSON dicts',
    ),
    "input_output_alias": (
        whole_value(aliasing),
        "{ {0}: (0, {}, may-alias) }: output index: (parameter, index, may-alias|must-alias)",
    ),
    "is_scheduled": (whole_value(read_bool), "true or false"),
    "num_partitions": (whole_value(read_int), "an integer"),
    "origin_recovery_table": (
        whole_value(_recovery_table),
        '{ {"a"}: {"b"}, "HloModule ..." }: original array: original array, module text',
    ),
    "replica_count": (whole_value(read_int), "an integer"),
}


def check_module_attributes(
    attributes: Mapping[str, str], parse_module: Callable[[str], Mapping[str, str]]
) -> tuple[str, str] | None:
    """The first header attribute XLA's parser would refuse, as (its name, what was expected:
    one line naming the alternatives, with a did-you-mean for a misspelt name), or None when
    XLA accepts them all. Checks names and value syntax; that a name is not repeated, and what
    only the module's computations can tell (an alias of an output index the result lacks), are
    left to the caller. `parse_module` reads a module's text (origin_recovery_table holds
    whole modules) and gives its header attributes."""
    for name, value in attributes.items():
        known = MODULE_ATTRIBUTES.get(name)
        if known is None:
            guess = did_you_mean(name, MODULE_ATTRIBUTES)
            return name, f"a module attribute: {', '.join(MODULE_ATTRIBUTES)}{guess}"
        read, form = known
        cursor = Cursor(squeezed(value), parse_module)
        try:
            read(cursor)
        except Mismatch as mismatch:
            return name, f"{form}; {mismatch.expected} at {cursor.excerpt()}"
    return None
