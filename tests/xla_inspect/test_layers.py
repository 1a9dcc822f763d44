"""No module of xla_inspect imports another's private name (the import layers themselves are
checked by `uv run lint-imports`, from the contracts in pyproject.toml)."""

import ast
from pathlib import Path

import xla_inspect

PACKAGE = Path(xla_inspect.__file__).parent


def test_no_private_name_is_imported_from_another_module():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xla_inspect"):
                found += [
                    f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert not found, "private names imported across modules: " + ", ".join(found)
