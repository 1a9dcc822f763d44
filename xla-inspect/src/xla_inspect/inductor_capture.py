"""Compile a PyTorch function with Inductor and keep the code it generates.

The only module of xla_inspect that imports torch, and only when called: without the optional
group (`uv sync --group torch`) `missing()` says so and `generated_code` raises one
`InductorUnavailable` naming the command.

Inductor compiles C++ with the host's g++ and keeps what it built in a cache: the first compile
of a process with an empty cache builds a large precompiled header (tens of seconds), later ones
take seconds. `prepare_environment` (called by `generated_code`) points the cache at a directory
the caller chooses unless `TORCHINDUCTOR_CACHE_DIR` is set, and compiles with one worker unless
`TORCHINDUCTOR_COMPILE_THREADS` is set: a pool of compile workers costs more than it saves on a
small machine and keeps processes alive after the compile. (torch 2.15 keeps the precompiled
header in `<tempdir>/torchinductor_<user>` whatever the cache directory is.)
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xla_inspect.errors import InspectError

__all__ = ["INSTALL", "InductorUnavailable", "generated_code", "missing", "prepare_environment"]

INSTALL = "uv sync --group torch"


class InductorUnavailable(InspectError):
    """torch (and with it Inductor) is not installed here."""


def missing() -> str | None:
    """Why Inductor cannot compile here (what to install), or None when it can."""
    if importlib.util.find_spec("torch") is None:
        return f"PyTorch's Inductor needs torch: {INSTALL}"
    return None


def prepare_environment(cache_dir: Path | str) -> None:
    """Inductor's cache in `cache_dir` and one compile worker, keeping what the user set.
    Takes effect when called before torch is imported."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(cache_dir).resolve()))
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


def generated_code(
    fn: Callable[..., Any],
    *args: Any,
    cache_dir: Path | str,
    inference: bool = True,
    backward: bool = False,
    dynamic: bool | None = None,
) -> list[str]:
    """The modules Inductor generates for `torch.compile(fn)(*args)`, in the order compiled.

    `inference` runs under `torch.no_grad()` (one inference graph); otherwise the arguments
    that require grad make AOTAutograd split a forward and a backward graph, and `backward`
    calls `.backward()` on the (scalar) result, or on its first element when `fn` returns a
    tuple (the loss, then other outputs), so that the backward graph is compiled too.
    `dynamic` is `torch.compile`'s own argument (True: sizes become symbols, passed to `call`
    among its inputs). Dynamo's caches are reset first, so every call compiles afresh.
    """
    reason = missing()
    if reason is not None:
        raise InductorUnavailable(reason)
    prepare_environment(cache_dir)
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)
    import torch._dynamo  # pyright: ignore[reportMissingImports]  (the torch group)
    from torch._inductor.utils import run_and_get_code  # pyright: ignore[reportMissingImports]  (the torch group)

    torch._dynamo.reset()
    compiled = torch.compile(fn, dynamic=dynamic)

    def run() -> Any:
        out = compiled(*args)
        if backward:
            (out[0] if isinstance(out, tuple) else out).backward()
        return out

    if inference:
        with torch.no_grad():
            _, codes = run_and_get_code(run)
    else:
        _, codes = run_and_get_code(run)
    return list(codes)
