"""What the harness's LLVM level saves: every phase's shown program compiled at 0 and at 2.

    uv run python bench/bench_llvm_level.py [--repeat 3]

The harness compiles with ``--xla_backend_optimization_level=0`` (kata_harness/options.py,
``OWN_XLA_FLAGS``): LLVM's level for the machine code XLA emits, which no test reads. This
lowers every recipe of every phase's programs.py on the reference (what `katas show` compiles),
then compiles each afresh at level 0 and at XLA's default level 2 through ``compiler_options``,
in alternation, ``--repeat`` times, and prints the CPU seconds of each level (best of the repeats),
their ratio, and how many optimized HLO texts differ between the levels (expected: none).
Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import jax

from kata_harness import curriculum, loading
from kata_harness.programs import recipes

LEVELS = (0, 2)


def _programs() -> list[tuple[str, Any, tuple[Any, ...]]]:
    out = []
    for phase in curriculum.phases():
        table = recipes(phase)
        if not table or phase.number == 16:  # phase 16's recipes are PyTorch programs
            continue
        module = loading.load_impl(phase, "reference")
        for name, recipe in table.items():
            fn, args = recipe.build(module)
            jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
            out.append((f"{phase.name} {name}", jitted, args))
    return out


def _compile(jitted: Any, args: tuple[Any, ...], level: int) -> tuple[float, str]:
    """CPU seconds of one compile at `level` from a fresh lowering (JAX's caches cleared: a
    Lowered object keeps what it compiled), and the optimized HLO text."""
    jax.clear_caches()
    lowered = jitted.lower(*args)
    start = time.process_time()
    compiled = lowered.compile({"xla_backend_optimization_level": level})
    return time.process_time() - start, compiled.as_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="compiles of each program per level")
    repeat = parser.parse_args().repeat
    jax.config.update("jax_num_cpu_devices", curriculum.CPU_DEVICES)  # as the harness starts JAX
    programs = _programs()
    seconds = {level: [0.0] * repeat for level in LEVELS}
    differ = set()
    for run in range(repeat):
        for label, jitted, args in programs:
            texts = {}
            for level in LEVELS:
                used, texts[level] = _compile(jitted, args, level)
                seconds[level][run] += used
            if texts[0] != texts[2]:
                differ.add(label)
    best = {level: min(runs) for level, runs in seconds.items()}
    print(f"{len(programs)} programs, best of {repeat} runs, CPU seconds to compile them all:")
    for level in LEVELS:
        print(f"  level {level}: {best[level]:.2f} s")
    print(f"  ratio level 0 / level 2: {best[0] / best[2]:.2f}")
    print(f"optimized HLO texts that differ between the levels: {len(differ)}")
    for label in sorted(differ):
        print(f"  {label}")


if __name__ == "__main__":
    main()
