"""What the harness adds around every test and every task call, per event.

    uv run python bench/bench_harness_overhead.py [--repeat 5]

- the predict refusal: a plain-Python prediction (a few thousand Python calls, no JAX) called
  through the refusal the harness puts around predict tasks, against the same function called
  bare; the ratio is what the refusal's watch costs the answer (its call_watch watches only the
  refused functions' own code);
- the guard's audit hook: microseconds per audited event it does not act on (a frame's
  ``f_code``, ``builtins.id``: a test run raises millions);
- JAX's caches before a test: ``clear_caches_if_used`` when JAX did nothing since the last
  clear, against ``jax.clear_caches()``;
- the contract's check around a task call: the fingerprint taken before, and the comparison
  after.

Each figure is the best of ``--repeat`` runs in this process. Prints figures only; asserts
nothing (timings depend on the machine and its load).
"""

from __future__ import annotations

import argparse
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

import jax

from kata_harness import compile_events, contract, curriculum, guard, loading, predict
from kata_harness.curriculum import Task

_ANSWER = textwrap.dedent("""
    def _row(n, i):
        return sum(max(i, j) for j in range(n))

    def predict_flops(n):
        return sum(_row(n, i) for i in range(n))
""")
_TASK = Task(phase=0, number=1, function="predict_flops", title="bench", hints=(), kind="predict")


def _best(run: Callable[[], object], calls: int, repeat: int) -> float:
    """Microseconds per call of ``run``, best of ``repeat`` timings of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def _refusal(repeat: int) -> tuple[float, float]:
    with TemporaryDirectory() as folder:
        path = Path(folder) / "bench_answer.py"
        path.write_text(_ANSWER)
        bare = loading.load_file(path, "_bench_bare", label="phase0")
        refused = loading.load_file(path, "_bench_refused", label="phase0")
        predict.refuse_in(refused, [_TASK], [])
        return (
            _best(lambda: bare.predict_flops(60), 20, repeat),
            _best(lambda: refused.predict_flops(60), 20, repeat),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    jax.config.update("jax_num_cpu_devices", curriculum.CPU_DEVICES)  # as the harness starts JAX
    jax.jit(lambda x: x + 1)(1.0)  # JAX's caches hold something, as in a test run

    bare, refused = _refusal(repeat)
    print(
        f"predict refusal: {bare:.0f} us bare, {refused:.0f} us refused, "
        f"ratio {refused / bare:.2f} (a plain-Python answer of about 3,700 calls)"
    )

    audit = _best(lambda: guard._audit("object.__getattr__", (None, "f_code")), 10_000, repeat)  # noqa: SLF001
    print(f"audit hook, an event it does not act on: {audit:.2f} us")

    compile_events.clear_caches_if_used()
    skipped = _best(compile_events.clear_caches_if_used, 2_000, repeat)
    cleared = _best(jax.clear_caches, 2_000, repeat)
    print(
        f"JAX's caches before a test: {skipped:.1f} us when JAX did nothing since the last "
        f"clear, {cleared:.1f} us to clear them, ratio {skipped / cleared:.2f}"
    )

    before = contract.fingerprint()
    taken = _best(contract.fingerprint, 500, repeat)
    compared = _best(lambda: contract.changed(before), 500, repeat)
    print(
        f"contract check around a task call: fingerprint {taken:.0f} us, comparison "
        f"{compared:.0f} us ({len(before)} libraries and settings)"
    )


if __name__ == "__main__":
    main()
