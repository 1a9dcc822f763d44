"""IREE flow listings read into a small model of dispatches (IREE's kernels).

`iree-compile ... --compile-to=flow` (or `iree.compiler.compile_str(..., extra_args=[...,
"--compile-to=flow"])`) stops after IREE has grouped the program's operations into dispatch
regions and outlined each into a `flow.executable`:

    flow.executable private @main_dispatch_0 {
      flow.executable.export public @main_dispatch_0_matmul_32x128x64_f32 workgroups() ...
      builtin.module {
        func.func @main_dispatch_0_matmul_32x128x64_f32(%arg0: ...) {
          %5 = linalg.matmul ins(...) outs(...) -> tensor<32x128xf32> loc("jit(mlp)/dot_general")
          ...

    dispatches = read_flow(text)
    [(d.kind, d.sizes, d.dtype) for d in dispatches]   # [("matmul", (32, 128, 64), "f32"), ...]
    dispatches[0].sources                               # {"dot_general", "add", "tanh", ...}

Each export's name is `<function>_dispatch_<index>_<kind>_<sizes>_<dtype>`; IREE chooses the
kind from the dispatch's root operation (`matmul`, `batch_matmul`, `matvec`, `vecmat`,
`reduction`, `softmax`, `elementwise`, `elementwise_transpose`, `conv`, ...). Sizes are the
root's iteration sizes in IREE's order (a matmul's M x N x K), `D` for a dynamic one; the dtype
part lists the element types when they differ (`bf16xbf16xf32`: inputs, then the result).
Some kinds print a tensor type instead, `softmax_8x256xf32_dispatch_tensor_store`; an
elementwise dispatch over a scalar prints neither sizes nor dtype.

`sources` are the names JAX gave the operations inside the dispatch, the last part of each
location (`loc("jit(mlp)/tanh")` -> "tanh"), the same names XLA keeps in `metadata={op_name=...}`:
they tell which JAX operations IREE put together. An operation inside a called jit is printed
as a call site, `loc(callsite("div" at "jit(f)/jit(silu)"))`: its name is the callee, "div".
Argument locations (`loc("x")`, no `/`) and file locations (`loc("f.py":3:7)`) are not
operations and are left out.

Why text and not MLIR's parser: the listing uses IREE's dialects (`flow`, `hal`,
`iree_tensor_ext`), which only IREE's own bindings register, and a recorded listing must be
readable without the `iree` group. What is read is the printed form of IREE 3.13.0; another
release may print other names or kinds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xla_inspect.errors import InspectError

__all__ = ["Dispatch", "IreeFlowError", "read_flow", "split_dispatch_name"]


class IreeFlowError(InspectError):
    """Text that is not an IREE flow listing, or a dispatch name IREE would not print."""


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One dispatch of a flow listing."""

    name: str  # the export's (and its function's) name
    executable: str  # the flow.executable it lives in
    function: str  # the function of the program it was taken from ("main")
    index: int
    kind: str  # "matmul", "batch_matmul", "elementwise_transpose", ...
    sizes: tuple[int | None, ...]  # the root's iteration sizes; None where IREE printed D
    dtype: str  # "f32", "bf16xbf16xf32", "" when the name has none
    ops: tuple[str, ...]  # MLIR operations of its function, in printed order ("linalg.matmul")
    sources: frozenset[str]  # JAX operation names of its locations ("dot_general", "tanh")


_NAME = re.compile(r"(?P<function>.+?)_dispatch_(?P<index>\d+)(?:_(?P<rest>.+))?")
_SIZES = re.compile(r"(?:\d+|D)(?:x(?:\d+|D))*")
_DTYPE = re.compile(r"[a-z]+\d+(?:x[a-z]+\d+)*")
_TENSOR = re.compile(r"(?P<sizes>(?:(?:\d+|D)x)+)(?P<dtype>[a-z]+\d+)")
_EXECUTABLE = re.compile(r"\s*flow\.executable\s+(?:(?:private|public)\s+)?@([\w$.-]+)")
_EXPORT = re.compile(r"\s*flow\.executable\.export\s+(?:(?:private|public)\s+)?@([\w$.-]+)")
_OP = re.compile(r"\s*(?:%[^=]*=\s*)?\"?([a-z_][\w]*\.[\w.]+)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_LOC_START = re.compile(r"\bloc\(")
_MOVES = frozenset(
    f"{dialect}.dispatch.tensor.{move}"
    for dialect in ("iree_tensor_ext", "flow")
    for move in ("load", "store")
)


def split_dispatch_name(name: str) -> tuple[str, int, str, tuple[int | None, ...], str]:
    """(function, index, kind, sizes, dtype) of a dispatch export name such as
    `main_dispatch_0_matmul_32x128x64_f32`; see the module docstring for the forms."""
    match = _NAME.fullmatch(name)
    if match is None:
        raise IreeFlowError(f"not an IREE dispatch name (<function>_dispatch_<i>_...): {name!r}")
    function, index, rest = match["function"], int(match["index"]), match["rest"] or ""
    parts = rest.split("_") if rest else []
    for at, part in enumerate(parts):
        if at == 0:
            continue  # the kind comes first
        if _SIZES.fullmatch(part):
            dtype = parts[at + 1] if at + 1 < len(parts) else ""
            if dtype and not _DTYPE.fullmatch(dtype):
                raise IreeFlowError(f"{name!r}: {dtype!r} after the sizes is not a dtype")
            return function, index, "_".join(parts[:at]), _sizes(part), dtype
        tensor = _TENSOR.fullmatch(part)
        if tensor:
            sizes = _sizes(tensor["sizes"].rstrip("x"))
            return function, index, "_".join(parts[:at]), sizes, tensor["dtype"]
    return function, index, rest, (), ""


def _sizes(text: str) -> tuple[int | None, ...]:
    return tuple(None if s == "D" else int(s) for s in text.split("x"))


def _strip_strings(line: str) -> str:
    return re.sub(r"\"(?:[^\"\\]|\\.)*\"", '""', line)


def _sources(lines: list[str]) -> frozenset[str]:
    """Names of the operations computed in a function body: not of its arguments or block
    arguments, nor of tensor loads and stores (they carry their producer's or consumer's name)."""
    names: set[str] = set()
    for line in lines[1:]:
        op = _OP.match(line)
        if line.lstrip().startswith("^") or (op is not None and op[1] in _MOVES):
            continue
        for start in _LOC_START.finditer(line):
            names |= _Location(line, start.end()).names(called=False)
    return frozenset(names)


class _Location:
    """The operation names of one printed location, `loc(` already read:
    `"jit(f)/tanh"` names "tanh" (a name without `/` is an argument's); `"f.py":3:7` is a file;
    `callsite("div" at ...)` is an operation "div" inside a called function (what it is
    called from is not an operation here); `fused[...]` holds several; `"name"(child)` is named
    by its name."""

    def __init__(self, text: str, at: int) -> None:
        self.text, self.at = text, at

    def names(self, called: bool) -> set[str]:
        text = self.text
        if text.startswith("callsite(", self.at):
            self.at += len("callsite(")
            found = self.names(called=True)
            self._skip_to_close()
            return found
        if text.startswith("fused", self.at):
            self.at = text.index("[", self.at) + 1
            found: set[str] = set()
            while self.at < len(text) and text[self.at] != "]":
                found |= self.names(called)
                self._skip_separator()
            return found
        string = _STRING.match(text, self.at)
        if string is None:
            return set()  # unknown, or an alias this reader does not follow
        self.at = string.end()
        if text.startswith(":", self.at):
            return set()  # a file location
        if text.startswith("(", self.at):  # a name with a child location
            self.at += 1
            self._skip_to_close()
        name = string[1]
        return {name.rsplit("/", 1)[-1]} if called or "/" in name else set()

    def _skip_to_close(self) -> None:
        """Past the `)` that closes the construct being read (strings and nesting skipped)."""
        depth = 1
        while self.at < len(self.text) and depth:
            string = _STRING.match(self.text, self.at)
            if string:
                self.at = string.end()
                continue
            depth += {"(": 1, ")": -1}.get(self.text[self.at], 0)
            self.at += 1

    def _skip_separator(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in ", ":
            self.at += 1


def _blocks(lines: list[str]) -> list[list[str]]:
    """The lines of every flow.executable, each from its header to its closing brace."""
    blocks: list[list[str]] = []
    at = 0
    while at < len(lines):
        if not _EXECUTABLE.match(lines[at]) or _EXPORT.match(lines[at]):
            at += 1
            continue
        depth, block = 0, []
        while at < len(lines):
            line = lines[at]
            block.append(line)
            plain = _strip_strings(line)
            depth += plain.count("{") - plain.count("}")
            at += 1
            if depth <= 0 and "{" in "".join(block):
                break
        if depth > 0:
            raise IreeFlowError(f"flow.executable {block[0].strip()!r} is never closed")
        blocks.append(block)
    return blocks


def read_flow(text: str) -> list[Dispatch]:
    """The dispatches of an IREE flow listing, in printed order (one per
    `flow.executable.export`)."""
    if not isinstance(text, str):
        raise IreeFlowError(f"expected the flow listing as text, got {type(text).__name__}")
    if "flow.executable" not in text and "#hal.device.target" not in text:
        raise IreeFlowError(
            "not an IREE flow listing: no flow.executable and no #hal.device.target "
            "(compile with --compile-to=flow)"
        )
    dispatches = []
    for block in _blocks(text.splitlines()):
        executable = _EXECUTABLE.match(block[0])
        assert executable is not None
        exports = [m[1] for m in map(_EXPORT.match, block) if m]
        if not exports:
            raise IreeFlowError(f"flow.executable @{executable[1]} exports no dispatch")
        for name in exports:
            body = _function_body(block, name)
            function, index, kind, sizes, dtype = split_dispatch_name(name)
            ops = tuple(m[1] for m in map(_OP.match, body[1:]) if m)
            dispatches.append(
                Dispatch(
                    name, executable[1], function, index, kind, sizes, dtype, ops, _sources(body)
                )
            )
    return dispatches


def _function_body(block: list[str], name: str) -> list[str]:
    """The lines of `func.func @name` inside an executable's block."""
    head = re.compile(
        rf"\s*(?:func\.func|util\.func)\s+(?:(?:private|public)\s+)?@{re.escape(name)}\("
    )
    for start, line in enumerate(block):
        if head.match(line):
            depth, body = 0, []
            for line in block[start:]:
                body.append(line)
                plain = _strip_strings(line)
                depth += plain.count("{") - plain.count("}")
                if depth <= 0 and "{" in "".join(body):
                    return body
            raise IreeFlowError(f"the function of dispatch {name} is never closed")
    raise IreeFlowError(f"dispatch {name} has no function of that name in its executable")
