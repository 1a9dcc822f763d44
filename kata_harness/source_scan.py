"""The scan of a learner's file before it is imported (:func:`scan`): what the guard
(:mod:`.guard`) refuses by reading the source.

Importing pytest, the harness, the reference or anything that loads code by path, the builtins
that run or import code from a string, assigning to (or deleting, or ``setattr`` on) an attribute
of an imported module (``np.allclose = ...``) or calling a mutating method on what one holds
(``os.environ.update(...)``), reaching a private name through ``getattr`` or ``__getattr__``,
threads, and signal handlers and timers are refused with one line naming the line. Kata code
never needs them; they are how a file would skip its own tests, patch pytest's reports or the
functions the tests compare with, load the reference, carry what a read task measured into the
copy that answers predictions, or run code between the harness's checks.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator

from .guard_lists import (
    DUNDER_REFLECTION,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_MODULES,
    FORBIDDEN_NAMES,
    HOOK_NOTE,
    MODULE_HOOKS,
    MUTATORS,
    NOTES,
    PROCESS_ATTRIBUTES,
    STATE,
)
from .scan_scopes import Scopes

# Builtins whose first argument is the function they apply, not what they hand back
_APPLIERS = frozenset({"map", "filter"})

# Builtins that reach an attribute by a name given as a string: only called directly with a
# literal name (checked by `_named_attribute`), never passed on as a value, where the name they
# get is out of the scan's sight (`reduce(getattr, ["f_" + "locals"], frame)`, `put = setattr`).
REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def scan(source: str, filename: str, libraries: frozenset[str] | None = None) -> str | None:
    """The first forbidden construct in a kata file's source, as 'line N: what' (None if clean).

    ``libraries``: the third-party packages the file's phase may import (the standard library
    aside); None leaves imports to the other rules. A file that does not parse is left to the
    import, which reports the syntax error.
    """
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return None
    scopes = Scopes(tree)
    imported = _imported_names(tree, scopes)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    plain = _module_names(tree)
    for node in ast.walk(tree):
        modules = imported[id(scopes.of(node))]
        found = (
            _forbidden(node)
            or _patches(node, modules)
            or _mutates(node, modules, plain)
            or _passed_on(node, called)
            or _module_hook(node, scopes)
        )
        if found:
            return f"line {getattr(node, 'lineno', '?')} {found}"
    return _foreign_library(tree, libraries) if libraries is not None else None


def _imports(tree: ast.AST) -> Iterator[tuple[ast.stmt, str]]:
    """Each absolute import anywhere in ``tree`` (a function too) with the top-level package it
    imports: ``torch`` for ``from torch.utils import flop_counter``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node, node.module.split(".")[0]


def imported_roots(source: str) -> set[str]:
    """The top-level packages a file imports anywhere; empty for a file that does not parse."""
    try:
        return {root for _, root in _imports(ast.parse(source))}
    except SyntaxError:
        return set()


def _foreign_library(tree: ast.AST, libraries: frozenset[str]) -> str | None:
    """An import of a third-party package the phase does not use, as 'line N imports x: ...'."""
    for node, root in _imports(tree):
        if root not in libraries and root not in sys.stdlib_module_names:
            allowed = ", ".join(sorted(libraries))
            return (
                f"line {node.lineno} imports {root}: this phase's kata file may import the "
                f"standard library and {allowed} (another compiler or measuring library "
                "would answer a prediction in the compiler's place)"
            )
    return None


class _Names(set[str]):
    """Names bound to what the file imports (the set), ``stdlib``: those bound to the standard
    library (``logging``, ``reduce`` in ``from functools import reduce``), and ``handing``: the
    file's functions that return or yield one of them."""

    stdlib: frozenset[str] = frozenset()
    handing: frozenset[str] = frozenset()


def _imported_names(tree: ast.AST, scopes: Scopes) -> dict[int, _Names]:
    """For each scope (by id, :mod:`.scan_scopes`), the names there bound to what the file
    imports, and their aliases.

    ``np`` in ``import numpy as np``, ``jit`` in ``from jax import jit``, and every name later
    assigned an expression that reaches one of them (``C = jax.stages.Compiled``,
    ``m = getattr(np, "sum")``, ``T = type(np.float32(1))``), however many steps it takes. A
    name is its scope's: ``counts`` bound to a call's result in one function is not another
    function's ``counts``.
    """
    bound: set[tuple[int, str]] = set()
    stdlib: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
            bound |= {(id(scopes.owner(scopes.of(node), name)), name) for name in names}
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if (module or "").split(".")[0] in sys.stdlib_module_names:
                stdlib |= names
    aliases = [
        (target, node.value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    ]
    for node in ast.walk(tree):  # for x in (np, jnp): ... / with ... as x
        if isinstance(node, (ast.For, ast.comprehension)):
            aliases.append((node.target, node.iter))

    handing: set[str] = set()
    returned = [  # what a function of the file hands back, read in its own scope
        (function.name, node.value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None
        for function in [scopes.of(node)]
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]

    def views() -> dict[int, _Names]:
        found = {}
        for scope in scopes.all:
            found[id(scope)] = _Names(
                name for home, name in bound if id(scopes.owner(scope, name)) == home
            )
            found[id(scope)].stdlib = frozenset(stdlib)
            found[id(scope)].handing = frozenset(handing)
        return found

    grew = True
    while grew:
        grew, seen = False, views()
        for name, value in returned:
            if name not in handing and _reference(value, seen[id(scopes.of(value))], False):
                handing.add(name)
                grew = True
        for target, value in aliases:
            if not _reference(value, seen[id(scopes.of(value))]):
                continue
            for part in ast.walk(target):
                if isinstance(part, ast.Name):
                    key = (id(scopes.owner(scopes.of(part), part.id)), part.id)
                    grew = grew or key not in bound
                    bound.add(key)
    return views()


def _reference(value: ast.AST, names: set[str], calls: bool = True) -> bool:
    """Whether ``value`` is (an attribute, item or class of) one of ``names`` rather than a new
    object: ``jax.stages.Compiled`` and ``type(x)`` are, ``np.zeros(3)`` and ``Counter()`` not.

    What a call hands back counts as what it was given when the scan cannot tell it is new: a
    builtin, a lambda, the file's own function or the standard library's given one of ``names``
    (``next(iter((jax,)))``, ``functools.reduce(pick, [np])``), and the standard library's
    getters of the objects it keeps for the whole process (``logging.getLogger(...)``); with
    ``calls`` False, only what ``value`` itself names (what a function returns is judged so)."""
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.Attribute) and value.attr == "__class__":
        return True  # get_backend().__class__ is a library class
    if isinstance(value, (ast.Attribute, ast.Subscript, ast.Starred)):
        return _reference(value.value, names, calls)
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return any(_reference(e, names, calls) for e in value.elts)
    if isinstance(value, ast.Dict):
        return any(_reference(v, names, calls) for v in value.values)
    if isinstance(value, ast.IfExp):
        return _reference(value.body, names, calls) or _reference(value.orelse, names, calls)
    if isinstance(value, ast.NamedExpr):
        return _reference(value.value, names, calls)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        if value.func.id == "type":
            return True
        if value.func.id in ("getattr", "vars") and value.args:
            return _reference(value.args[0], names)
    if isinstance(value, ast.Call) and calls:
        return _hands_back(value, names)
    return False


def _hands_back(call: ast.Call, names: set[str]) -> bool:
    """Whether ``call`` may hand back one of ``names`` (see :func:`_reference`)."""
    stdlib = getattr(names, "stdlib", frozenset())
    root = _base(call.func)
    library = isinstance(root, ast.Name) and root.id in names
    from_stdlib = isinstance(root, ast.Name) and root.id in stdlib
    last = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if from_stdlib and last.startswith("get"):
        return True  # logging.getLogger: the process's one logger of that name
    if library and not from_stdlib:
        return False  # a library's function makes a new object (jax.tree.map, np.asarray)
    if last in getattr(names, "handing", ()):
        return True  # the file's function (or a method of that name) returning one of them
    given = call.args[1:] if last in _APPLIERS else call.args
    return any(_reference(argument, names) for argument in given)


def _base(node: ast.AST) -> ast.AST:
    """What an assignment target is stored into: ``a`` in ``a.b[c].d`` (not ``c``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


def _foreign(base: ast.AST, modules: set[str]) -> bool:
    """Something the kata file did not make: an imported name, an alias of one, or a class
    reached through ``type(...)`` or ``getattr``/``vars`` of one."""
    return _reference(base, modules)


def _stores(target: ast.AST) -> list[ast.AST]:
    """The attribute and item stores of an assignment target (tuples unpacked)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [store for element in target.elts for store in _stores(element)]
    if isinstance(target, ast.Starred):
        return _stores(target.value)
    if isinstance(target, ast.Attribute):
        return [target]
    if isinstance(target, ast.Subscript):
        return [target]
    return []


def _patches(node: ast.AST, modules: set[str]) -> str | None:
    """An assignment to, or deletion of, something inside an imported module, class or function
    (through any alias), or ``setattr``/``delattr`` on one."""
    targets: list[ast.AST] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr", "vars")
        and node.args
    ):
        if _foreign(node.args[0], modules) or _foreign(_base(node.args[0]), modules):
            return f"uses {node.func.id} on {ast.unparse(node.args[0])}"
    if (
        isinstance(node, ast.Attribute)
        and _private(node.attr)
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ):
        return f"uses .{node.attr}"  # a library's internals (xla_client._xla, backend._client)
    for target in targets:
        for store in _stores(target):
            if isinstance(store, ast.Attribute) and store.attr == "__class__":
                return f"changes {ast.unparse(store)}"
            if _foreign(_base(store), modules):
                return f"changes {ast.unparse(store)}"
    return None


def _module_names(tree: ast.AST) -> set[str]:
    """Names the file binds to a module itself (``np``, ``jnp`` in ``from jax import numpy as
    jnp``): ``np.add(a, b)`` calls a function, where ``os.environ.update(...)`` changes state."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {
                a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in sys.modules
            }
    return names


def _mutates(node: ast.AST, modules: set[str], plain: set[str]) -> str | None:
    """A mutating method called on state an imported module holds (``os.environ.update``,
    ``sys.path.append``, ``np.typecodes.update``, through any alias): process-wide state, shared
    with the sealed copy that answers predictions, like an assignment to it."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATORS
    ):
        return None
    owner = node.func.value
    if isinstance(owner, ast.Name) and owner.id in plain:
        return None  # a module's own function (np.append), not a method of its state
    if ast.unparse(owner) == "jax.config":
        return None  # JAX's settings, checked by name and value (explain_cache_misses)
    if _foreign(owner, modules):
        return f"changes {ast.unparse(owner)} (.{node.func.attr}): {STATE}"
    return None


def _dunder_reflection(call: ast.Call) -> str | None:
    """``m.__getattr__("_orig_mod")``, ``nn.Module.__getattr__(m, name)``: judged like getattr,
    by the name it is given (the last positional argument)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in DUNDER_REFLECTION):
        return None
    name = call.args[-1] if call.args else None
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return f"uses {call.func.attr} with a computed name"
    if name.value in FORBIDDEN_ATTRIBUTES or _private(name.value):
        return f"uses .{name.value}"
    return None


def _forbidden(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] in FORBIDDEN_MODULES or _private(alias.name):
                return f"imports {alias.name}"
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            return "uses a relative import"
        module = node.module or ""
        if module.split(".")[0] in FORBIDDEN_MODULES or _private(module):
            return f"imports from {module}"
        for alias in node.names:
            if alias.name in FORBIDDEN_ATTRIBUTES | PROCESS_ATTRIBUTES or _private(alias.name):
                return f"imports {alias.name} from {module}"
    elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
        return f"uses {node.id}"
    elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
        return f"uses .{node.attr}{NOTES.get(node.attr, '')}"
    elif isinstance(node, ast.Attribute) and node.attr in PROCESS_ATTRIBUTES:
        return f"uses .{node.attr}"  # os.popen under any name
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _named_attribute(node)
    elif isinstance(node, ast.Call):
        return _dunder_reflection(node)
    return None


def _passed_on(node: ast.AST, called: set[int]) -> str | None:
    """A reflection builtin or method used other than by calling it (its names would go
    unchecked)."""
    if isinstance(node, ast.Name) and node.id in REFLECTION and id(node) not in called:
        return f"uses {node.id} other than by calling it"
    if (
        isinstance(node, ast.Attribute)
        and node.attr in DUNDER_REFLECTION
        and id(node) not in called
    ):
        return f"uses {node.attr} other than by calling it"
    return None


def _module_hook(node: ast.AST, scopes: Scopes) -> str | None:
    """A module-level ``__getattr__``/``__dir__`` (PEP 562: bound by a def, an assignment, an
    import, ``global``, or named as a string or keyword, ``globals()["__getattr__"]``); a
    class's own ``__getattr__`` method is left alone."""
    if isinstance(node, ast.Constant) and node.value in MODULE_HOOKS:
        return f"names {node.value}{HOOK_NOTE}"
    if isinstance(node, ast.keyword) and node.arg in MODULE_HOOKS:
        return f"names {node.arg}{HOOK_NOTE}"
    if isinstance(node, ast.Global) and MODULE_HOOKS & set(node.names):
        return f"declares {sorted(MODULE_HOOKS & set(node.names))[0]} global{HOOK_NOTE}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names = [node.name]
    elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        names = [node.id]
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    else:
        return None
    for name in names:
        if name in MODULE_HOOKS and scopes.owner(scopes.of(node), name) is scopes.tree:
            return f"defines a module-level {name}{HOOK_NOTE}"
    return None


def _private(dotted: str) -> bool:
    """A private module or name (``jax._src``); ``__future__`` is not one."""
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split("."))


def _named_attribute(call: ast.Call) -> str | None:
    """``getattr(sys, "modules")``: a forbidden attribute reached by its name as a string."""
    if call.func.id not in ("getattr", "hasattr", "setattr", "delattr") or len(call.args) < 2:  # type: ignore[union-attr]
        return None
    name = call.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return f"uses {call.func.id} with a computed name"  # type: ignore[union-attr]
    if name.value in FORBIDDEN_ATTRIBUTES or _private(name.value):
        return f"uses .{name.value}"
    return None
