"""Python's name scopes for the source scan (:mod:`.source_scan`): which function, class body,
comprehension or the module a name written at some node belongs to.

The scan follows what a name is bound to (``m = np`` makes ``m`` the library's); with scopes,
a ``counts`` bound to a call's result in one function is not the ``counts`` another function
binds to a ``Counter()``, while a name a function only reads, declares ``global`` or
``nonlocal``, or stores into (``box[0] = np``) is still the enclosing scope's.
"""

from __future__ import annotations

import ast

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class Scopes:
    """The scope of every node of ``tree`` and the names each scope binds (Python's rules:
    a name stored anywhere in a function is local to all of it; a class body's names are not
    seen from its methods; a comprehension's first iterable is read outside it)."""

    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        self._scope: dict[int, ast.AST] = {id(tree): tree}
        self._parent: dict[int, ast.AST] = {}
        self._bound: dict[int, set[str]] = {id(tree): set()}
        self._declared: dict[int, set[str]] = {}  # global and nonlocal names
        self._global: dict[int, set[str]] = {}
        self._owners: dict[tuple[int, str], ast.AST] = {}
        self.all: list[ast.AST] = [tree]  # every scope, the module first
        for child in ast.iter_child_nodes(tree):
            self._enter(child, tree)

    def of(self, node: ast.AST) -> ast.AST:
        """The scope code at ``node`` runs in."""
        return self._scope.get(id(node), self.tree)

    def owner(self, scope: ast.AST, name: str) -> ast.AST:
        """The scope whose ``name`` code in ``scope`` reads or writes."""
        key = (id(scope), name)
        if key not in self._owners:
            self._owners[key] = self._resolve(scope, name)
        return self._owners[key]

    def _resolve(self, scope: ast.AST, name: str) -> ast.AST:
        first = True
        while scope is not self.tree:
            if name in self._global.get(id(scope), ()):
                return self.tree
            seen = first or not isinstance(scope, ast.ClassDef)
            if seen and name in self._bound[id(scope)] - self._declared.get(id(scope), set()):
                return scope
            scope, first = self._parent[id(scope)], False
        return scope

    def _open(self, node: ast.AST, scope: ast.AST) -> ast.AST:
        self._parent[id(node)] = scope
        self._bound[id(node)] = set()
        self.all.append(node)
        return node

    def _bind(self, scope: ast.AST, name: str) -> None:
        self._bound[id(scope)].add(name)

    def _enter(self, node: ast.AST, scope: ast.AST) -> None:
        self._scope[id(node)] = scope
        if isinstance(node, _FUNCTIONS):
            self._function(node, scope)
        elif isinstance(node, ast.ClassDef):
            self._bind(scope, node.name)
            for outer in (*node.decorator_list, *node.bases, *node.keywords):
                self._enter(outer, scope)
            inner = self._open(node, scope)
            for statement in node.body:
                self._enter(statement, inner)
        elif isinstance(node, _COMPREHENSIONS):
            self._comprehension(node, scope)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            home = scope  # := in a comprehension binds in the function around it
            while isinstance(home, _COMPREHENSIONS):
                home = self._parent[id(home)]
            self._scope[id(node.target)] = home
            self._bind(home, node.target.id)
            self._enter(node.value, scope)
        else:
            self._statement(node, scope)
        for child in ast.iter_child_nodes(node):  # what no rule above placed runs where node is
            if id(child) not in self._scope:
                self._enter(child, scope)

    def _statement(self, node: ast.AST, scope: ast.AST) -> None:
        """The names a node other than a scope binds or declares in ``scope``."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self._bind(scope, node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                self._bind(scope, (alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self._declared.setdefault(id(scope), set()).update(node.names)
            if isinstance(node, ast.Global):
                self._global.setdefault(id(scope), set()).update(node.names)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, scope) -> None:
        """Decorators, defaults and annotations run where the function is defined; the
        parameters and the body in the function's own scope."""
        arguments = node.args
        parameters = [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
        ]
        outer = [
            *arguments.defaults,
            *(d for d in arguments.kw_defaults if d is not None),
            *(p.annotation for p in parameters if p.annotation is not None),
        ]
        if not isinstance(node, ast.Lambda):
            self._bind(scope, node.name)
            outer += [*node.decorator_list, *([node.returns] if node.returns else [])]
        for expression in outer:
            self._enter(expression, scope)
        inner = self._open(node, scope)
        self._scope[id(arguments)] = inner
        for parameter in parameters:
            self._scope[id(parameter)] = inner
            self._bind(inner, parameter.arg)
        for statement in node.body if isinstance(node.body, list) else [node.body]:
            self._enter(statement, inner)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, scope: ast.AST
    ) -> None:
        """The first iterable is read where the comprehension is; the rest runs in its own
        scope (its targets are its own names)."""
        self._enter(node.generators[0].iter, scope)
        inner = self._open(node, scope)
        for n, generator in enumerate(node.generators):
            self._scope[id(generator)] = inner
            for part in (generator.target, *([generator.iter] if n else []), *generator.ifs):
                self._enter(part, inner)
        results = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
        for part in results:
            self._enter(part, inner)
