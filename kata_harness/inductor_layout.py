"""Inductor's generated code laid out otherwise: the same Python, other lines (phase 16).

Inductor prints `call` one statement a line, save where it joins two itself (`buf1 = buf0; del
buf0  # reuse`). :func:`relaid` writes the same statements as Python also accepts them: comments
dropped, blocks whose body is simple statements written on the line of their header (`if
len(args) == 0: cpp_fused_relu_0(buf1)`, `else: del buf0; extern_kernels.mm(...)`), runs of
simple statements joined by `; ` (among them, where `call`'s blocks allow it, two kernel
statements on one line and a kernel statement after another statement), and a space between a
kernel's name and its `(`. Its syntax tree is the one of the code it was given (checked with
:func:`ast.dump`): the kernels `call` runs, their order and their arguments stay, so a test
compares a reading of the re-laid text with the oracles' reading of the text before.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize

_KERNEL = re.compile(
    r"^((?:\w+ = )?(?:cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.aten\.\w+\.\w+))\("
)
_CALL_DEF = re.compile(r"^\s*def call\((?:self, )?args\):\s*$")
_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Pass, ast.Return)


def _call_rows(lines: list[str]) -> tuple[int, int]:
    """The rows (0-based) of `def call(...)` and of the first row after its body."""
    first = next(i for i, line in enumerate(lines) if _CALL_DEF.match(line))
    depth = len(lines[first]) - len(lines[first].lstrip())
    last = first + 1
    while last < len(lines) and (
        not lines[last].strip() or len(lines[last]) - len(lines[last].lstrip()) > depth
    ):
        last += 1
    while not lines[last - 1].strip():
        last -= 1
    return first, last


def _uncommented(code: str) -> str:
    """`code` with its comments removed."""
    lines = code.split("\n")
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        row, col = token.start
        if token.type == tokenize.COMMENT:
            lines[row - 1] = lines[row - 1][:col].rstrip()
    return "\n".join(lines)


def _simple_rows(call: ast.FunctionDef, lines: list[str]) -> set[int]:
    """The 0-based rows of `call` that hold only whole simple statements (`a; b` too)."""
    starts: dict[int, list[ast.stmt]] = {}
    for node in ast.walk(call):
        if isinstance(node, ast.stmt) and node is not call:
            starts.setdefault(node.lineno - 1, []).append(node)
    rows = set()
    for row, found in starts.items():
        one_line = all(s.end_lineno == s.lineno for s in found)
        if one_line and all(isinstance(s, _SIMPLE) for s in found):
            line = lines[row].encode()
            written = "; ".join(line[s.col_offset : s.end_col_offset].decode() for s in found)
            if written == lines[row].strip():
                rows.add(row)
    return rows


def relaid(code: str, rng: random.Random) -> str:
    """`code` with `call`'s body laid out otherwise (see the module's docstring): the same
    syntax tree, other lines."""
    lines = code.split("\n")
    start, end = _call_rows(lines)
    depth = len(lines[start]) - len(lines[start].lstrip())
    given = "\n".join(line[depth:] for line in lines[start:end])  # call alone, dedented
    text = _uncommented(given)
    call = ast.parse(text).body[0]
    assert isinstance(call, ast.FunctionDef) and call.end_lineno is not None
    body = text.split("\n")
    simple = _simple_rows(call, body)
    # (indent, text, simple) for each non-blank row of the body
    rows = [
        (len(line) - len(line.lstrip()), line.strip(), i in simple)
        for i, line in enumerate(body[1:], 1)
        if line.strip()
    ]
    rows = [(d, _spaced(t, rng) if s else t, s) for d, t, s in rows]
    rows = _joined(_collapsed(rows, rng), rng)
    new = [body[0]] + [" " * d + t for d, t, _ in rows]
    assert _tree(ast.parse("\n".join(new))) == _tree(ast.parse(given)), "relaid changed call"
    indent = lines[start][:depth]
    return "\n".join(lines[:start] + [indent + line for line in new] + lines[end:])


def _tree(tree: ast.Module) -> list[str]:
    """The nodes of `tree` in the order ast.walk gives them, each with its name or value (what
    ast.dump shows of them, at a fraction of its cost)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            found.append(repr(node.value))
        else:
            name = getattr(node, "id", None) or getattr(node, "attr", None) or ""
            found.append(f"{type(node).__name__} {name} {getattr(node, 'arg', '')}")
    return found


def _spaced(statements: str, rng: random.Random) -> str:
    """Each kernel statement of a row maybe with a space before its `(`."""
    parts = statements.split("; ")
    return "; ".join(_KERNEL.sub(r"\1 (", p) if rng.random() < 0.5 else p for p in parts)


Row = tuple[int, str, bool]


def _collapsed(rows: list[Row], rng: random.Random) -> list[Row]:
    """Blocks whose body is only simple rows, maybe written on their header's line."""
    out: list[Row] = []
    i = 0
    while i < len(rows):
        depth, text, _ = rows[i]
        end = i + 1
        while end < len(rows) and rows[end][0] > depth:
            end += 1
        body = rows[i + 1 : end]
        if text.endswith(":") and body and all(s for _, _, s in body) and rng.random() < 0.6:
            out.append((depth, f"{text} {'; '.join(t for _, t, _ in body)}", False))
            i = end
            continue
        out.append(rows[i])
        i += 1
    return out


def _joined(rows: list[Row], rng: random.Random) -> list[Row]:
    """Runs of simple rows of one block maybe joined by `; `: a drawn stretch from a simple row
    to a kernel row after it, holding two kernel statements where the block has them so close,
    always, and other neighbours at random."""
    joins = [
        i
        for i in range(len(rows) - 1)
        if rows[i][2] and rows[i + 1][2] and rows[i][0] == rows[i + 1][0]
    ]
    chosen = {i for i in joins if rng.random() < 0.3}
    kernels = [i for i, (_, t, s) in enumerate(rows) if s and _has_kernel(t)]
    stretches = [
        (a, b)
        for a in range(len(rows))
        for b in kernels
        if a < b and all(k in joins for k in range(a, b))
    ]
    two = [(a, b) for a, b in stretches if a in kernels]
    for pool in (two, stretches):
        if pool:
            a, b = rng.choice(pool)
            chosen.update(range(a, b))
    out: list[Row] = []
    for i, row in enumerate(rows):
        if i - 1 in chosen:
            depth, text, _ = out[-1]
            out[-1] = (depth, f"{text}; {row[1]}", True)
        else:
            out.append(row)
    return out


def _has_kernel(statements: str) -> bool:
    return any(_KERNEL.match(p.replace(" (", "(", 1)) for p in statements.split("; "))
