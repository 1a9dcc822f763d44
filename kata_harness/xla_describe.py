"""What XLA's parser makes of a text, as plain data: run in the helper process (xla_child).

Only this module touches jaxlib's private parser (`jaxlib._hlo.hlo_module_from_text`), and only
in the helper process: the module it builds, its printed forms and its instructions come back as
JSON, so no object of the parser ever lives in a test process.
"""

from __future__ import annotations

from typing import Any


def describe(text: str) -> dict[str, Any]:
    """XLA's module from ``text`` as JSON data: its canonical print ("text"), the print with each
    operand's shape ("long_text"), and per computation its name and instructions as
    [name, opcode enum name, printed instruction]. Raises what the parser raises."""
    from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # no stub

    module = _hlo.hlo_module_from_text(text)
    long_form = _hlo.HloPrintOptions()
    long_form.print_operand_shape = True
    return {
        "text": module.to_string(),
        "long_text": module.to_string(long_form),
        "computations": [
            [c.name, [[i.name, i.opcode.name, i.to_string()] for i in c.instructions()]]
            for c in module.computations()
        ],
    }
