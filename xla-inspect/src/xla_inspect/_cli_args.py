"""The arguments `xla-inspect capture` calls a function with: `--arg` specs
(`[NAME=]DTYPE[DIMS]` arrays, `[NAME=]LITERAL` static values) or an `--args-from` builder, and
importing `MODULE:FUNCTION`. JAX is imported only when an array spec is read.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xla_inspect._cli_common import UsageError

__all__ = ["DTYPES", "call_args", "import_function"]

DTYPES = {
    "pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
    "bf16": "bfloat16", "f32": "float32", "f64": "float64", "c64": "complex64",
    "c128": "complex128",
}  # fmt: skip
_ARG_SPEC = re.compile(r"([a-z0-9]+)\[((?:\d+(?:,\d+)*)?)\]")
_SPEC_HINT = (
    "write [NAME=]DTYPE[DIMS] (f32[8,16], s32[]) for an array or [NAME=]LITERAL (3, 0.5, True, "
    f"'mean') for a static value; DTYPE is one of {', '.join(DTYPES)}"
)


@dataclass(frozen=True)
class _Spec:
    """One `--arg`: its keyword name (None: positional), its value, and whether it is static."""

    name: str | None
    value: Any
    static: bool


def _parse_spec(spec: str) -> _Spec:
    """`[NAME=]DTYPE[DIMS]` is an array placeholder, `[NAME=]LITERAL` a static Python value."""
    import jax
    import jax.numpy as jnp

    name, sep, value = spec.partition("=")
    if not sep or not name.strip().isidentifier():
        name, value = "", spec
    text = value.replace(" ", "")
    shaped = re.fullmatch(r"(\w+)\[(.*)\]", text)
    if shaped:
        match = _ARG_SPEC.fullmatch(text)
        if not match or match.group(1) not in DTYPES:
            raise UsageError(f"bad --arg {spec!r}", _SPEC_HINT)
        dims = tuple(int(d) for d in match.group(2).split(",")) if match.group(2) else ()
        struct = jax.ShapeDtypeStruct(dims, jnp.dtype(DTYPES[match.group(1)]))
        return _Spec(name.strip() or None, struct, static=False)
    try:
        literal = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise UsageError(f"bad --arg {spec!r}", _SPEC_HINT) from exc
    return _Spec(name.strip() or None, literal, static=True)


def call_args(
    specs: list[str], args_from: str | None
) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
    """Positional args, keyword args and the jit options that mark the static ones."""
    if args_from is not None:
        if specs:
            raise UsageError("--arg and --args-from together", "give the arguments one way")
        built = import_function(args_from)
        try:
            result = built() if callable(built) else None
        except Exception as exc:  # anything the user's builder raises is bad input here
            raise UsageError(
                f"--args-from {args_from} raised {type(exc).__name__}: {exc}", "fix the builder"
            ) from exc
        if not (
            isinstance(result, tuple)
            and len(result) == 2
            and isinstance(result[0], (tuple, list))
            and isinstance(result[1], dict)
        ):
            raise UsageError(
                f"--args-from {args_from} gave {type(result).__name__}",
                "return (args, kwargs): a tuple or list of example arrays or ShapeDtypeStructs "
                "(pytrees too) and a dict of keyword arguments",
            )
        return tuple(result[0]), dict(result[1]), {}
    parsed = [_parse_spec(spec) for spec in specs]
    positional = [p for p in parsed if p.name is None]
    keywords = {p.name: p.value for p in parsed if p.name is not None}
    if len(keywords) != len(parsed) - len(positional):
        raise UsageError("the same keyword in two --arg", "give each NAME= once")
    options = {
        "static_argnums": tuple(i for i, p in enumerate(positional) if p.static),
        "static_argnames": tuple(p.name for p in parsed if p.name is not None and p.static),
    }
    return tuple(p.value for p in positional), keywords, options


def import_function(target: str) -> Any:
    """The object `MODULE:FUNCTION` names (MODULE dotted, or a path to a `.py` file)."""
    module_name, sep, attribute = target.rpartition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"bad target {target!r}", "write MODULE:FUNCTION, e.g. pkg.mod:f")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if spec is None or spec.loader is None or not Path(module_name).is_file():
                raise FileNotFoundError(module_name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        function: Any = module
        for part in attribute.split("."):
            function = getattr(function, part)
    except Exception as exc:  # anything the imported code raises is bad input here
        raise UsageError(
            f"cannot import {target}: {type(exc).__name__}: {exc}",
            "check the module path and function name",
        ) from exc
    return function
