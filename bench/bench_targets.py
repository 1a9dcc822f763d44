"""Benchmark: deviceless compile time per target, and the size of the text it prints.

Run from the repository root, with the groups installed (`uv sync --group tpu --group gpu`):
`uv run python bench/bench_targets.py [--runs 3]`.

Programs: a bf16 matmul 1024x2048 @ 2048x4096 sharded over a 2x2 mesh, the gradient of a 2-layer
MLP (512 -> 1024 -> 256, batch 256, batch sharded over "data") and 4 FSDP-style relu(x @ w)
layers with rows of x and w sharded over both axes. Each compile is timed after `jax.clear_caches`
(median of the runs); lowering is not counted. A target whose group is missing is reported as
such. Prints only.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from xla_inspect import targets

targets.prepare_environment()

import jax  # noqa: E402  (after the environment deviceless compiles need)
import jax.numpy as jnp  # noqa: E402


def _programs(target: targets.Target) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    bf = jnp.bfloat16
    mesh = target.mesh((2, 2), ("data", "model"))

    def place(shape: tuple[int, ...], *spec: Any) -> jax.ShapeDtypeStruct:
        return target.place(jax.ShapeDtypeStruct(shape, bf), mesh, *spec)

    def loss(params: list[Any], x: Any, y: Any) -> Any:
        w1, b1, w2, b2 = params
        return jnp.mean((jax.nn.relu(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    def layers(x: Any, ws: list[Any]) -> Any:
        for w in ws:
            x = jax.nn.relu(x @ w)
        return x

    both = ("data", "model")
    return {
        "matmul": (lambda x, w: x @ w, (place((1024, 2048), *both), place((2048, 4096), *both))),
        "mlp_grad": (
            jax.grad(loss),
            (
                [place((512, 1024)), place((1024,)), place((1024, 256)), place((256,))],
                place((256, 512), "data"),
                place((256, 256), "data"),
            ),
        ),
        "fsdp4": (
            layers,
            (place((2048, 1024), both), [place((1024, 1024), both) for _ in range(4)]),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="deviceless compile time per target")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'target':<15} {'program':<9} {'compile s':>9} {'text KB':>8}")
    for name, target in targets.TARGETS.items():
        if name == "cpu":
            continue
        missing = target.missing()
        if missing is not None:
            print(f"{name:<15} {missing}")
            continue
        for program, (fn, shapes) in _programs(target).items():
            times, text = [], ""
            for _ in range(args.runs):
                jax.clear_caches()
                lowered = jax.jit(fn).lower(*shapes)  # a new Lowered: it keeps its executable
                start = time.perf_counter()
                compiled = lowered.compile()
                times.append(time.perf_counter() - start)
                text = compiled.as_text() or ""
            print(
                f"{name:<15} {program:<9} {statistics.median(times):>9.2f} {len(text) / 1024:>8.1f}"
            )


if __name__ == "__main__":
    main()
