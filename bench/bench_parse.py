"""Benchmark: xla_inspect's reader vs XLA's own C++ HLO parser, on real modules.

Run from the repository root: `uv run python bench/bench_parse.py [--layers 4 8 16]`.

Every module is text that XLA printed for a real program, not a synthetic one:

- a GPT-style next-token loss (plain JAX, `jax.grad`, one `layer_N` name scope per layer; the
  model of tests/xla_inspect/test_graph.py, wider) at each `--layers` depth: the optimized
  module and XLA's `before_optimizations` dump;
- the largest per-pass dump (`xla_dump_hlo_pass_re=.*`) of the shallowest of those;
- a flax.nnx convolutional classifier's gradient (`nnx.jit`) and an equinox MLP's
  (`eqx.filter_jit`), optimized and before optimizations;
- the TPU and GPU modules phases 11 and 12 recorded (katas/phase11/recorded, phase12/recorded);
- every module of tests/xla_inspect/corpus.

Compiled modules are kept in a folder under the system's temporary directory named after the
jax version (`--rebuild` compiles them again). Per module it prints the thread CPU time of
`parse_hlo` + `opcode_counts` (ours), of `parse_hlo` + `summarize` (the whole `xla-inspect
summary`), and of jaxlib's private `hlo_module_from_text` (C++), each the best of several
interleaved runs, and the peak memory of `parse_hlo` + `opcode_counts` under tracemalloc as a
multiple of the text's size. The summary lines give the medians over the five largest modules
and the largest peak multiple. Prints only.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GRAPH_TEST = ROOT / "tests" / "xla_inspect" / "test_graph.py"
CORPUS = ROOT / "tests" / "xla_inspect" / "corpus"
SAMPLES = (
    (ROOT / "katas" / "phase12" / "recorded", "*.hlo"),
    (ROOT / "katas" / "phase11" / "recorded", "*.hlo"),
)


def _gpt_grad(layers: int) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """`jax.grad` of a `layers`-deep GPT-style next-token loss (the graph tests' model, wider),
    with abstract arguments."""
    spec = importlib.util.spec_from_file_location("test_graph", GRAPH_TEST)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {GRAPH_TEST}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gpt_grad(layers, (512, 64, 128, 4, 512, 4))


def _flax_cnn_grad() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The gradient of a flax.nnx convolutional classifier's loss, under `nnx.jit`."""
    import jax.numpy as jnp
    import optax
    from flax import nnx

    class Classifier(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.conv1 = nnx.Conv(3, 32, (3, 3), rngs=rngs)
            self.conv2 = nnx.Conv(32, 64, (3, 3), rngs=rngs)
            self.norm = nnx.LayerNorm(64, rngs=rngs)
            self.head = nnx.Linear(64 * 8 * 8, 10, rngs=rngs)

        def __call__(self, x):
            x = nnx.avg_pool(nnx.relu(self.conv1(x)), (2, 2), (2, 2))
            x = nnx.avg_pool(nnx.relu(self.norm(self.conv2(x))), (2, 2), (2, 2))
            return self.head(x.reshape(x.shape[0], -1))

    def loss(model, images, labels):
        logits = model(images)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    model = Classifier(nnx.Rngs(0))
    grad = nnx.jit(nnx.grad(loss))
    return grad, (model, jnp.zeros((16, 32, 32, 3)), jnp.zeros((16,), jnp.int32))


def _equinox_mlp_grad() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The gradient of an equinox MLP's loss, under `eqx.filter_jit`."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    mlp = eqx.nn.MLP(64, 10, 256, 6, key=jax.random.key(0))

    def loss(model, x, y):
        return ((jax.vmap(model)(x) - y) ** 2).mean()

    return eqx.filter_jit(eqx.filter_grad(loss)), (mlp, jnp.zeros((32, 64)), jnp.zeros((32, 10)))


def _compile(
    name: str, made: tuple[Callable[..., Any], tuple[Any, ...]], folder: Path, passes: bool = False
) -> None:
    """Write `name.opt.hlo`, `name.before.hlo` (and with `passes` the largest per-pass dump,
    `name.pass.hlo`) into `folder`."""
    from xla_inspect.capture import capture

    fn, args = made
    with tempfile.TemporaryDirectory() as dump:
        captured = capture(fn, *args, dump_dir=dump, dump_passes=passes)
        (folder / f"{name}.opt.hlo").write_text(captured.optimized_hlo_text)
        files = [f for f in captured.dump_files() if f.suffix == ".txt"]
        (before,) = [f for f in files if f.name.endswith(".before_optimizations.txt")]
        (folder / f"{name}.before.hlo").write_text(before.read_text())
        if passes:
            steps = [
                f
                for f in files
                if ".after_" in f.name
                and "buffer" not in f.name
                and "live-range" not in f.name
                and "memory-usage" not in f.name
            ]
            largest = max(steps, key=lambda f: (f.stat().st_size, f.name))
            (folder / f"{name}.pass.hlo").write_text(largest.read_text())


def real_modules(layers: list[int], rebuild: bool) -> dict[str, str]:
    """Name -> text of every module the benchmark reads (compiling what is not kept yet)."""
    import jax

    folder = Path(tempfile.gettempdir()) / f"xla-katas-bench-parse-jax{jax.__version__}"
    folder.mkdir(exist_ok=True)
    wanted: dict[str, Callable[[], tuple[Callable[..., Any], tuple[Any, ...]]]] = {
        f"gpt{n}_grad": (lambda n=n: _gpt_grad(n)) for n in layers
    }
    wanted |= {"flax_cnn_grad": _flax_cnn_grad, "equinox_mlp_grad": _equinox_mlp_grad}
    shallowest = f"gpt{min(layers)}_grad"
    for name, make in wanted.items():
        passes = name == shallowest
        if (
            rebuild
            or not (folder / f"{name}.opt.hlo").exists()
            or (passes and not (folder / f"{name}.pass.hlo").exists())
        ):
            print(f"compiling {name} ...", flush=True)
            _compile(name, make(), folder, passes=passes)
    texts = {
        p.name: p.read_text()
        for p in sorted(folder.glob("*.hlo"))
        if p.name.split(".")[0] in wanted
    }
    for folder, pattern in SAMPLES:
        texts |= {p.name: p.read_text() for p in sorted(folder.glob(pattern))}
    texts |= {p.name: p.read_text() for p in sorted(CORPUS.glob("*.hlo"))}
    return texts


def best_times(runs: tuple[Callable[[], object], ...], repeats: int) -> list[float]:
    """Best thread CPU time per run, the runs interleaved per repeat so all see the same
    machine load. The C++ parser runs in the calling thread, so thread CPU time compares like
    with like even when other processes compete for the cores."""
    best = [float("inf")] * len(runs)
    for _ in range(repeats):
        for k, run in enumerate(runs):
            gc.collect()
            start = time.thread_time()
            run()
            best[k] = min(best[k], time.thread_time() - start)
    return best


def peak_multiple(text: str) -> float:
    from xla_inspect.parse import parse_hlo
    from xla_inspect.query import opcode_counts

    gc.collect()
    tracemalloc.start()
    module = parse_hlo(text)
    opcode_counts(module)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / len(text.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__ and __doc__.splitlines()[0])
    parser.add_argument(
        "--layers",
        type=int,
        nargs="+",
        default=[4, 8, 16],
        help="depths of the GPT-style model (default: 4 8 16)",
    )
    parser.add_argument("--rebuild", action="store_true", help="compile the models again")
    args = parser.parse_args()

    from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # no stub

    from xla_inspect.parse import parse_hlo
    from xla_inspect.query import opcode_counts
    from xla_inspect.summary import summarize

    texts = real_modules(sorted(set(args.layers)), args.rebuild)
    print(
        f"{'module':<48} {'MB':>6} {'instr':>7} {'C++ ms':>8} {'ratio':>6} "
        f"{'summary':>7} {'peak/text':>9}"
    )
    rows = []
    for name, text in sorted(texts.items(), key=lambda kv: -len(kv[1])):
        mb = len(text.encode()) / 1e6
        instructions = sum(opcode_counts(parse_hlo(text)).values())
        repeats = max(5, min(15, int(8 / max(mb, 0.05))))
        ours, summary, theirs = best_times(
            (
                lambda t=text: opcode_counts(parse_hlo(t)),
                lambda t=text: summarize(parse_hlo(t)),
                lambda t=text: _hlo.hlo_module_from_text(t),
            ),
            repeats,
        )
        multiple = peak_multiple(text)
        rows.append((mb, ours / theirs, summary / theirs, multiple))
        print(
            f"{name:<48} {mb:6.2f} {instructions:7d} {theirs * 1e3:8.1f} "
            f"{ours / theirs:6.2f} {summary / theirs:7.2f} {multiple:8.2f}x"
        )
    largest = rows[:5]
    print(
        f"\nfive largest ({', '.join(f'{r[0]:.2f}' for r in largest)} MB), median ratio to "
        f"C++: parse+opcode_counts {statistics.median(r[1] for r in largest):.2f}, "
        f"parse+summarize {statistics.median(r[2] for r in largest):.2f}"
    )
    print(
        f"all {len(rows)} modules: ratio {min(r[1] for r in rows):.2f}-"
        f"{max(r[1] for r in rows):.2f} (median {statistics.median(r[1] for r in rows):.2f}); "
        f"peak/text median {statistics.median(r[3] for r in rows):.2f}x, "
        f"largest {max(r[3] for r in rows):.2f}x "
        f"(five largest modules: {max(r[3] for r in largest):.2f}x)"
    )


if __name__ == "__main__":
    main()
