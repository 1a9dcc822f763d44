"""Reading HLO text, in layers that import only downward (docs/architecture.md):

    lexical <- model <- opcodes, values, strings, shardings, value_forms, literals, layouts,
    shapes, infer_rules, infer <- attributes, rules, metadata, line_forms, header_values,
    header <- tokens <- instruction_checks <- operands <- token_path <- instructions, frames
    <- module <- calls <- async_ops <- reader

`reader.parse_hlo` is the entry point (re-exported as `xla_inspect.parse.parse_hlo`).
"""
