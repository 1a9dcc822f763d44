"""No module of xla_inspect imports another's private name, and each private module serves one
public module (the import layers themselves are checked by `uv run lint-imports`, from the
contracts in pyproject.toml). Both cover every module of xla_inspect, the `hlo` reader too."""

import ast
from pathlib import Path

import xla_inspect

PACKAGE = Path(xla_inspect.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("xla_inspect", *parts)).removesuffix(".__init__")


def _private(name: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in name.split("."))


def _imports() -> dict[str, set[str]]:
    """Module -> the xla_inspect modules it imports (`from M import x` counts as M, and as M.x
    when M.x is a module)."""
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xla_inspect"):
                imported.add(node.module or "")
                imported |= {f"{node.module}.{a.name}" for a in node.names} & modules
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.startswith("xla_inspect")}
        found[_module_name(path)] = imported
    return found


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


def test_each_private_module_serves_one_public_module():
    """A private module (`_graph_labels`) is a part of one public module (`graph`): the public
    modules that reach it, directly or through other private modules, are that one alone. What
    two public modules share is a public module of its own."""
    imports = _imports()
    users: dict[str, set[str]] = {}
    for module, imported in imports.items():
        if _private(module):
            continue
        stack, seen = [m for m in imported if _private(m)], set()
        while stack:
            part = stack.pop()
            if part not in seen:
                seen.add(part)
                users.setdefault(part, set()).add(module)
                stack += [m for m in imports.get(part, ()) if _private(m)]
    shared = {part: sorted(who) for part, who in users.items() if len(who) > 1}
    assert not shared, f"private modules used by several public modules: {shared}"
