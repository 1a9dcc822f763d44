"""What a prediction may not call: every path from a program to the compiler (kata_harness.predict
refuses each one, under any name, while a predict task's answer runs).

- JAX's public staging functions (``jit``, ``make_jaxpr``, ``eval_shape``, ``closure_convert``,
  ``Traced.lower``, ``Lowered.compile`` and the analyses of compiled programs), and
  ``jax.export.deserialize``: an ``Exported`` pasted into the file as bytes holds the StableHLO
  JAX lowered when it was made, the lowering's answer without a lowering now;
- the tracing core under them: every route from a Python function to a jaxpr (those functions,
  ``jax.linearize``, a control-flow primitive tracing its body, an eager ``jnp`` operation, and
  any public function added later) builds a ``DynamicJaxprTrace`` (or the older ``JaxprTrace``),
  and only the public ``jit`` records a trace event, so a route that skips it passes there;
- the lowering layer under them: ``jit(f).lower()``, ``jax.export`` and a closed jaxpr handed
  straight to ``jax.interpreters.mlir.lower_jaxpr_to_module`` all build a ``ModuleContext`` and
  lower each equation through ``jaxpr_subcomp``, so a path that skips the public functions (and
  the monitoring events they record) still passes there;
- the compile methods of jaxlib's XLA client, where text that was never traced compiles.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CLIENT_COMPILES = frozenset(
    {
        "compile",
        "compile_and_load",
        "compile_ifrt_program",
        "compile_and_load_ifrt_program",
        "deserialize_executable",
    }
)

# JAX's lowering layer (jax._src.interpreters.mlir, published as jax.interpreters.mlir)
_LOWERING = ("lower_jaxpr_to_module", "lower_jaxpr_to_fun", "jaxpr_subcomp")


def refused(allowed: Iterable[str] = ()) -> list[tuple[Any, str]]:
    """``(owner, attribute)`` of every function a prediction may not call, but the ``allowed``
    names (``eval_shape`` where a task may ask for an output's shape: it traces, so the tracing
    core is then left to :func:`tracing_core`'s callers to judge)."""
    keep = set(allowed)
    core = [] if "eval_shape" in keep else tracing_core()
    return [(o, n) for o, n in _public() + core if n not in keep]


def allowed_pairs(allowed: Iterable[str]) -> list[tuple[Any, str]]:
    """``(owner, attribute)`` of the refused functions a task's ``allowed`` names."""
    keep = set(allowed)
    return [(o, n) for o, n in _public() if n in keep]


def _public() -> list[tuple[Any, str]]:
    import jax
    import jax.export
    import jax.stages

    return [
        (jax, "jit"),
        (jax, "make_jaxpr"),
        (jax, "eval_shape"),
        (jax, "closure_convert"),
        (jax.export, "deserialize"),  # what JAX lowered before, kept as bytes in the file
        (jax.stages.Traced, "lower"),
        (jax.stages.Lowered, "compile"),
        (jax.stages.Lowered, "cost_analysis"),
        (jax.stages.Compiled, "cost_analysis"),
        (jax.stages.Compiled, "memory_analysis"),
        *lowering_layer(),
        *client_compiles(),
    ]


def tracing_core() -> list[tuple[Any, str]]:
    """The constructors of JAX's traces that build jaxprs: what every trace runs, by whatever
    public function (or none) it was asked for."""
    from jax._src.interpreters import partial_eval as pe

    pairs = [(pe.DynamicJaxprTrace, "__init__"), (pe.JaxprTrace, "__init__")]
    return [(owner, name) for owner, name in pairs if name in vars(owner)]


def lowering_layer() -> list[tuple[Any, str]]:
    """The functions of JAX's lowering that every lowering runs, public entry point or not."""
    from jax._src.interpreters import mlir

    pairs = [(mlir, name) for name in _LOWERING] + [(mlir.ModuleContext, "__init__")]
    return [(owner, name) for owner, name in pairs if name in vars(owner)]


def client_compiles() -> list[tuple[Any, str]]:
    """The compile methods of jaxlib's XLA client: text that was never traced compiles there."""
    import jax.extend.backend

    client = type(jax.extend.backend.get_backend())
    return [(client, name) for name in sorted(CLIENT_COMPILES) if hasattr(client, name)]


def label(owner: Any, name: str) -> str:
    """How a refusal names what was called."""
    if name in CLIENT_COMPILES and getattr(owner, "__name__", "") == "Client":
        return "XLA's compiler (an eager jnp operation compiles too)"
    if name == "__init__" and getattr(owner, "__name__", "").endswith("JaxprTrace"):
        return f"JAX's tracing ({owner.__name__}; an eager jnp operation traces too)"
    if name == "__init__" or getattr(owner, "__name__", "") == "jax._src.interpreters.mlir":
        where = f"{getattr(owner, '__name__', owner)}.{name}".replace("._src.", ".")
        return f"JAX's lowering ({where}; an eager jnp operation lowers too)"
    return f"{getattr(owner, '__name__', owner)}.{name}"
