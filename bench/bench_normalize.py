"""Throughput of normalize_hlo on real optimized HLO of about 0.3, 3 and 30 MB.

The 0.3 MB module is the optimized HLO of a 12-layer transformer gradient compiled here. The
larger inputs are one module made of copies of it: every `%name` gets a per-copy suffix, the
copies' stack-frame tables and module headers are dropped and their ENTRY becomes an ordinary
computation, so the text stays one well-formed module with many computations.

Prints figures; asserts nothing (timings depend on the machine).

    uv run python bench/bench_normalize.py [--repeat 3] [--sizes 0.3 3 30]
"""

from __future__ import annotations

import argparse
import re
import time

import jax
import jax.numpy as jnp

from xla_inspect.capture import capture
from xla_inspect.normalize import RULES, normalize_hlo

_NAME = re.compile(r"%([\w.\-]+)")
_FIRST_COMPUTATION = re.compile(r"^(?:ENTRY )?%[\w.\-]+ \(", re.MULTILINE)


def _layer(x, w):
    q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]
    attention = jax.nn.softmax(q @ k.T / 8.0, axis=-1)
    return x + jax.nn.gelu((attention @ v) @ w["o"])


def _loss(weights, x):
    for w in weights:
        x = _layer(x, w)
    return jnp.mean(x**2)


def base_module(layers: int = 12, width: int = 64, tokens: int = 32) -> str:
    """Optimized HLO text of the gradient of a `layers`-deep attention stack."""
    weight = jax.ShapeDtypeStruct((width, width), jnp.float32)
    weights = [{name: weight for name in "qkvo"} for _ in range(layers)]
    x = jax.ShapeDtypeStruct((tokens, width), jnp.float32)
    return capture(jax.grad(_loss), weights, x).optimized_hlo_text


def scaled(text: str, copies: int) -> str:
    """One module holding `copies` renamed copies of `text`'s computations."""
    start = _FIRST_COMPUTATION.search(text)
    assert start is not None, "no computation found in the base module"
    body = text[start.start() :]
    parts = [text]
    for k in range(1, copies):
        copy = _NAME.sub(lambda m, k=k: f"%{m.group(1)}_c{k}", body)
        parts.append("\n" + copy.replace("ENTRY %", "%", 1))
    return "".join(parts)


def best_seconds(function, argument, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU (process) seconds over `repeat` runs.

    CPU time is the figure to trust on a busy machine: wall time includes waiting for a core.
    """
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        function(argument)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best counts")
    parser.add_argument(
        "--sizes", type=float, nargs="+", default=[0.3, 3.0, 30.0], help="sizes in MB"
    )
    args = parser.parse_args()
    base = base_module()
    print(f"base module: {len(base) / 1e6:.2f} MB, {base.count(chr(10))} lines")
    for target_mb in args.sizes:
        copies = max(1, round(target_mb * 1e6 / len(base)))
        text = scaled(base, copies)
        mb = len(text.encode()) / 1e6
        wall, cpu = best_seconds(normalize_hlo, text, args.repeat)
        print(
            f"{mb:7.2f} MB: cpu {cpu * 1e3:8.1f} ms {mb / cpu:6.1f} MB/s | "
            f"wall {wall * 1e3:8.1f} ms {mb / wall:6.1f} MB/s"
        )
    text = scaled(base, max(1, round(3e6 / len(base))))
    print("per rule on ~3 MB (each on the previous rule's output):")
    for rule in RULES:
        _, cpu = best_seconds(rule, text, args.repeat)
        print(f"  {rule.name:<32}{cpu * 1e3:8.1f} ms cpu")
        text = rule(text)


if __name__ == "__main__":
    main()
