"""From what a user passes to `capture` to a JAX `Lowered`: a stage object, a jit wrapper
(jax, flax.nnx, equinox) or a plain function with its arguments, placed on a target when asked.
JAX is imported only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xla_inspect._capture_common import CaptureError, kind, stage

if TYPE_CHECKING:
    import jax.stages
    from jax.extend.core import Jaxpr

__all__ = ["on_target", "trace_and_lower"]


def trace_and_lower(
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    jit_options: dict[str, Any],
    given: list[str],
) -> tuple[Jaxpr | None, jax.stages.Lowered]:
    """The closed jaxpr (None when `fn` does not expose it) and the JAX `Lowered` of `fn`."""
    import jax
    import jax.stages

    lowered = stage(fn, "lowered")
    traced = stage(fn, "traced")
    own_trace = isinstance(fn, jax.stages.Wrapped)
    own_lower = callable(getattr(fn, "lower", None))
    if lowered is not None or traced is not None:
        if args or kwargs or given:
            raise CaptureError(f"{kind(fn)} is already traced: pass no arguments or jit options")
    elif given and (own_trace or own_lower):
        raise CaptureError(
            f"{kind(fn)} is already jit-wrapped: pass {'/'.join(given)} to its jit instead"
        )
    if lowered is not None:
        return None, lowered
    try:
        if traced is not None:
            return traced.jaxpr, _lowering(fn.lower())
        if own_trace:
            traced_obj = fn.trace(*args, **kwargs)
            traced = stage(traced_obj, "traced")
            if traced is None:
                raise CaptureError(f"{kind(fn)}.trace gave {kind(traced_obj)}, not a Traced")
            return traced.jaxpr, _lowering(traced_obj.lower())
        if own_lower:
            args, kwargs = _as_arrays((args, kwargs))
            return None, _lowering(fn.lower(*args, **kwargs))
        if not callable(fn):
            raise CaptureError(f"cannot capture {kind(fn)}: not callable and not a JAX stage")
        try:
            jitted = jax.jit(fn, **jit_options)
        except (TypeError, ValueError) as exc:
            raise CaptureError(f"cannot jit {fn!r}: {exc}") from exc
        traced = jitted.trace(*args, **kwargs)
        return traced.jaxpr, traced.lower()
    except CaptureError:
        raise
    except Exception as exc:  # whatever the traced Python code raises; the cause stays chained
        raise CaptureError(f"tracing or lowering failed: {type(exc).__name__}: {exc}") from exc


def on_target(
    name: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`args` and `kwargs` with their arrays placed on the target called `name`."""
    import jax.stages

    from xla_inspect.targets import TargetError, get

    if stage(fn, "lowered") is not None or stage(fn, "traced") is not None:
        raise CaptureError(
            f"{kind(fn)} was lowered for its own devices already: lower it with arguments "
            "placed by xla_inspect.targets.get(NAME).place(...) instead of passing target="
        )
    if callable(getattr(fn, "lower", None)) and not isinstance(fn, jax.stages.Wrapped):
        raise CaptureError(
            f"{kind(fn)} traces only concrete arrays, which cannot live on a target without "
            "its hardware: capture plain jax.jit(f) with target="
        )
    try:
        placed = get(name).place_tree((args, kwargs))
    except TargetError as exc:
        raise CaptureError(str(exc)) from exc
    return placed[0], placed[1]


def _as_arrays(tree: Any) -> Any:
    """`tree` with every `jax.ShapeDtypeStruct` leaf made a zero array of its shape and dtype."""
    import jax
    import jax.numpy as jnp

    def concrete(leaf: Any) -> Any:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            return jnp.zeros(leaf.shape, leaf.dtype)
        return leaf

    return jax.tree_util.tree_map(concrete, tree)


def _lowering(obj: Any) -> jax.stages.Lowered:
    lowered = stage(obj, "lowered")
    if lowered is None:
        raise CaptureError(f"lowering gave {kind(obj)}, not a jax.stages.Lowered")
    return lowered
