"""xla_inspect.graph: fusion graphs of corpus text and of a compiled 4-layer transformer
gradient, SVG through graphviz.

`gpt_grad_hlo` builds the transformer (plain JAX: embeddings, attention, MLP, layer norm, 4
layers in `layer_N` name scopes, `jax.grad` of a next-token loss, small dims);
bench/bench_graph.py times the graph of the same model.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xla_inspect.errors import InspectError
from xla_inspect.graph import (
    DEFAULT_MAX_EDGES,
    DEFAULT_MAX_NODES,
    GraphvizMissing,
    fusion_graph,
    fusion_graph_dot,
    instruction_flops,
    render_svg,
    save_graph,
)
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fused_computation_names, fusions

CORPUS = Path(__file__).parent / "corpus"
_NODE = re.compile(r'^\s*"([^"]+)" \[label=', re.M)
_EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)"', re.M)
LAYERS = 4


GPT_SIZES = (64, 16, 32, 4, 64, 2)  # vocab, sequence, width, heads, feed-forward, batch


def gpt_grad(layers: int = LAYERS, sizes: tuple[int, ...] = GPT_SIZES) -> tuple[Any, tuple]:
    """`jax.grad` of a `layers`-deep GPT-style next-token loss and its abstract arguments
    (also read by bench/bench_parse.py and bench/bench_graph.py)."""
    import jax
    import jax.numpy as jnp

    vocab, seq, d, heads, ff, batch = sizes

    def layer_norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b

    def attention(p, x):
        q, k, v = (
            jnp.einsum("btd,de->bte", x, p[w]).reshape(batch, seq, heads, d // heads)
            for w in ("wq", "wk", "wv")
        )
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / (d // heads) ** 0.5
        scores = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), scores, -1e9)
        out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, -1), v)
        return out.reshape(batch, seq, d) @ p["wo"]

    def loss(params, tokens):
        x = params["embed"][tokens] + params["pos"]
        for n, p in enumerate(params["layers"]):
            with jax.named_scope(f"layer_{n}"):
                x = x + attention(p, layer_norm(x, p["g1"], p["b1"]))
                x = x + jax.nn.gelu(layer_norm(x, p["g2"], p["b2"]) @ p["w1"]) @ p["w2"]
        logits = layer_norm(x, params["gf"], params["bf"]) @ params["embed"].T
        logp = jax.nn.log_softmax(logits[:, :-1])
        return -jnp.take_along_axis(logp, tokens[:, 1:, None], -1).mean()

    def f32(*shape: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jnp.float32)

    square = ("wq", "wk", "wv", "wo")
    layer = {w: f32(d, d) for w in square} | {"w1": f32(d, ff), "w2": f32(ff, d)}
    layer |= {v: f32(d) for v in ("g1", "b1", "g2", "b2")}
    params: dict[str, object] = {"embed": f32(vocab, d), "pos": f32(seq, d)}
    params |= {"gf": f32(d), "bf": f32(d), "layers": [layer] * layers}
    return jax.grad(loss), (params, jax.ShapeDtypeStruct((batch, seq), jnp.int32))


def gpt_grad_hlo() -> str:
    """Optimized HLO of the gradient of a 4-layer GPT-style next-token loss (compiles it)."""
    import jax

    grad, args = gpt_grad()
    # LLVM's optimization level for the machine code (no HLO pass reads it): the optimized HLO
    # text is the same byte for byte (checked with the locked jax 0.12.0.1), and the compile
    # takes half the time (3.4 s -> 1.6 s), most of it LLVM's on 4 layers' fused loops
    options = {"xla_backend_optimization_level": 0}
    text = jax.jit(grad).trace(*args).lower().compile(compiler_options=options).as_text()
    assert text is not None, "the CPU backend prints its optimized HLO"
    return text


@pytest.fixture(scope="module")
def gpt_text() -> str:
    return gpt_grad_hlo()


@pytest.fixture(scope="module")
def block_text() -> str:
    return (CORPUS / "transformer_block.opt.hlo").read_text()


@pytest.fixture
def no_dot(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def _fake_dot(folder: Path, script: str) -> None:
    folder.mkdir()
    fake = folder / "dot"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)


def test_small_module_drawn_whole_with_every_operand_edge(block_text):
    module = parse_hlo(block_text)
    graph = fusion_graph(block_text)
    dot = graph.dot
    assert dot.startswith(f'digraph "{module.name}" {{') and dot.endswith("}\n")
    assert graph.collapsed == () and graph.note == ""
    hidden = fused_computation_names(module)
    drawn = [c for c in module.computations if c.name not in hidden]
    assert graph.computations == tuple(c.name for c in drawn)
    for computation in drawn:
        assert f'label="{"ENTRY " if computation.is_entry else ""}{computation.name}";' in dot
    # every instruction is a node (a parameter used in several clusters once per cluster)
    nodes = _NODE.findall(dot)
    assert len(nodes) == len(set(nodes)) == graph.nodes
    instructions = {f"n{c}_{n}" for c, comp in enumerate(drawn) for n in range(len(comp))}
    assert {node.partition("@")[0] for node in nodes} == instructions
    # every operand is an edge (once per pair of nodes)
    edges = set(_EDGE.findall(dot))
    assert len(edges) == graph.edges
    entry = drawn.index(module.entry)
    index = {i.name: n for n, i in enumerate(module.entry.instructions)}
    pairs = {
        (f"n{entry}_{index[o]}", f"n{entry}_{n}")
        for n, i in enumerate(module.entry.instructions)
        for o in i.operands
        if o in index
    }
    assert {(a.partition("@")[0], b) for a, b in edges if b.startswith(f"n{entry}_")} == pairs


def test_nodes_show_bytes_and_source_lines(block_text):
    dot = fusion_graph_dot(block_text)
    # f32[2,8,32] is 2*8*32*4 bytes; the source line comes through the stack-frame tables
    assert re.search(
        r"f32\[2,8,32\]\{2,1,0\}\\n2\.0 KiB, (?:[0-9.]+ [kMG]?flop, )?make_corpus\.py:\d+", dot
    )
    assert "source_file" not in block_text  # so the lines above came from stack_frame_id
    flops = fusion_graph(block_text, flops={parse_hlo(block_text).entry.root.name: 3.5e6})
    assert "3.5 Mflop" in flops.dot


def test_fused_computations_on_request(block_text):
    module = parse_hlo(block_text)
    everything = fusion_graph(block_text, fused=True, max_nodes=10**6, max_edges=10**6)
    assert everything.computations == tuple(c.name for c in module.computations)
    assert set(fusion_graph(block_text).computations) < set(everything.computations)


def test_while_bodies_and_conditions_are_drawn_with_call_edges():
    text = (CORPUS / "control_flow.opt.hlo").read_text()
    module = parse_hlo(text)
    graph = fusion_graph(text)
    loops = [i for c in module.computations for i in c if i.opcode == "while"]
    assert loops
    for loop in loops:
        assert {loop.attribute("body"), loop.attribute("condition")} <= {
            f"%{name}" for name in graph.computations
        } | set(graph.computations)
    assert graph.dot.count("style=dashed, constraint=false") >= 2 * len(loops)


def test_transformer_grad_is_collapsed_into_layers_under_the_budget(gpt_text):
    module = parse_hlo(gpt_text)
    full = fusion_graph(gpt_text, max_nodes=10**6, max_edges=10**6)
    assert full.collapsed == () and full.nodes > DEFAULT_MAX_NODES
    graph = fusion_graph(gpt_text)
    assert graph.nodes <= DEFAULT_MAX_NODES and graph.edges <= DEFAULT_MAX_EDGES
    assert len(_NODE.findall(graph.dot)) == graph.nodes
    assert len(_EDGE.findall(graph.dot)) == graph.edges
    # a forward and a backward cluster per layer, named from the op metadata's name scope
    entry = module.entry.name
    for n in range(LAYERS):
        assert {f"{entry}/layer_{n}", f"{entry}/layer_{n} (backward)"} <= set(graph.clusters)
    # what was collapsed is said, in the result and in the drawn title
    assert graph.collapsed and set(graph.collapsed) <= set(graph.clusters)
    assert graph.note.startswith(f"collapsed {len(graph.collapsed)} clusters into one node each")
    assert all(name in graph.note for name in graph.collapsed)
    assert f'\\n{graph.note}"; labelloc=t;' in graph.dot
    summaries = Counter(line for line in graph.dot.splitlines() if "(collapsed)" in line)
    assert sum(summaries.values()) == len(graph.collapsed)
    # every drawn computation is there, fused ones only on request
    hidden = fused_computation_names(module)
    assert graph.computations == tuple(c.name for c in module.computations if c.name not in hidden)


def test_fused_computations_over_the_budget_are_left_out_first(gpt_text):
    module = parse_hlo(gpt_text)
    fused = len(fused_computation_names(module))
    graph = fusion_graph(gpt_text, fused=True)
    assert graph.note.startswith(f"left out {fused} of {fused + 1} computations: fused_")
    assert "; collapsed " in graph.note
    assert graph.computations == (module.entry.name,)
    assert graph.nodes <= DEFAULT_MAX_NODES and graph.edges <= DEFAULT_MAX_EDGES
    # a small budget overrun leaves out only the largest fused computations
    block = (CORPUS / "transformer_block.opt.hlo").read_text()
    whole = fusion_graph(block, fused=True, max_nodes=10**6, max_edges=10**6)
    some = fusion_graph(block, fused=True, max_nodes=whole.nodes - 1, max_edges=whole.edges)
    assert some.note.startswith("left out ") and "collapsed" not in some.note
    assert module.entry.name not in some.note
    assert len(whole.computations) == len(some.computations) + 1


def test_a_tiny_budget_keeps_the_entry_and_says_what_it_left_out():
    text = (CORPUS / "control_flow.opt.hlo").read_text()
    module = parse_hlo(text)
    whole = fusion_graph(text)
    assert len(whole.computations) > 2 and whole.note == ""
    tiny = fusion_graph(text, max_nodes=5, max_edges=5)
    assert tiny.computations == (module.entry.name,)
    left = len(whole.computations) - 1
    assert tiny.note.startswith(f"left out {left} of {len(whole.computations)} computations: ")
    assert f'label="ENTRY {module.entry.name}";' in tiny.dot
    assert len(_NODE.findall(tiny.dot)) == tiny.nodes


def test_without_name_scopes_runs_of_instructions_are_clustered(gpt_text):
    # the same module as if written without `jax.named_scope`
    text = re.sub(r"jvp\(layer_\d\)", "jvp()", gpt_text)
    assert not re.search(r"jvp\(layer_\d", text)
    graph = fusion_graph(text)
    runs = [name for name in graph.clusters if "/instructions " in name]
    assert len(runs) >= 4 and set(graph.collapsed) <= set(graph.clusters)
    assert graph.nodes <= DEFAULT_MAX_NODES and graph.edges <= DEFAULT_MAX_EDGES
    assert 0 < len(graph.collapsed) < len(graph.clusters)


def test_parameter_fan_out_is_drawn_once_per_cluster(gpt_text):
    graph = fusion_graph(gpt_text, max_nodes=10**6, max_edges=10**6)
    copies = Counter(node.partition("@")[0] for node in _NODE.findall(graph.dot) if "@" in node)
    assert copies and all(n >= 2 for n in copies.values())
    # each copy feeds only nodes of its own cluster
    for source, target in _EDGE.findall(graph.dot):
        if "@" in source:
            assert target.startswith("n") or target.startswith("u")


@pytest.mark.battery
def test_dot_text_is_deterministic_across_hash_seeds(tmp_path):
    script = (
        "import sys; from pathlib import Path; from xla_inspect.graph import fusion_graph_dot; "
        "sys.stdout.write(fusion_graph_dot(Path(sys.argv[1]).read_text()))"
    )
    hlo = CORPUS / "transformer_grad.opt.hlo"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script, str(hlo)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(outputs) == 1 and outputs.pop() == fusion_graph_dot(hlo.read_text())


def test_fusion_nodes_name_kind_and_absorbed_ops(block_text):
    module = parse_hlo(block_text)
    dot = fusion_graph_dot(module)
    in_entry = [f for f in fusions(module) if module.entry.instruction(f.name) is not None]
    assert dot.count('[label="fusion ') == len(in_entry) > 0
    assert '[label="fusion kCustom(__ynn_fusion)\\ndot\\n' in dot
    assert "fusion kLoop\\n" in dot and "shape=ellipse" in dot


def test_accepts_a_parsed_module_and_escapes_the_title(block_text):
    module = parse_hlo(block_text)
    # a parsed module has no stack-frame tables, so its nodes have no source lines
    without_sources = re.sub(r", make_corpus\.py:\d+", "", fusion_graph_dot(block_text))
    assert fusion_graph_dot(module) == without_sources != fusion_graph_dot(block_text)
    titled = fusion_graph_dot(module, title='say "hi"\\')
    assert 'label="say \\"hi\\"\\\\"; labelloc=t;' in titled


def test_render_without_dot_raises_graphviz_missing(no_dot, tmp_path):
    with pytest.raises(GraphvizMissing, match="apt-get install graphviz.*brew install graphviz"):
        render_svg("digraph g {}\n", tmp_path / "g.svg")
    assert issubclass(GraphvizMissing, InspectError)


def test_save_without_dot_writes_the_dot_file(no_dot, tmp_path):
    path, is_svg = save_graph("digraph g {}\n", tmp_path / "out" / "g.svg")
    assert (path, is_svg) == (tmp_path / "out" / "g.dot", False)
    assert path.read_text() == "digraph g {}\n"


def test_render_feeds_dot_on_stdin(tmp_path, monkeypatch):
    _fake_dot(tmp_path / "bin", 'cat > "$3"')  # fake dot -Tsvg -o OUT: echo the input
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    path, is_svg = save_graph("digraph g {}\n", tmp_path / "svg" / "g.svg")
    assert is_svg and path.read_text() == "digraph g {}\n"


def test_dot_failure_is_an_inspect_error(tmp_path, monkeypatch):
    _fake_dot(tmp_path / "bin", 'echo "Error: syntax error in line 1" >&2; exit 1')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(InspectError, match="dot failed \\(Error: syntax error in line 1\\)"):
        render_svg("digraph {", tmp_path / "g.svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed")
def test_real_dot_draws_the_transformer_grad(gpt_text, tmp_path):
    svg = render_svg(fusion_graph_dot(gpt_text), tmp_path / "gpt.svg").read_text()
    assert "<svg" in svg and "(collapsed)" in svg and "layer_3" in svg


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed")
def test_real_dot_draws_an_svg(block_text, tmp_path):
    path = render_svg(fusion_graph_dot(block_text), tmp_path / "block.svg")
    svg = path.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "kCustom(__ynn_fusion)" in svg


def _mlp(w1, b1, w2, x):
    import jax

    return jax.nn.relu(x @ w1 + b1) @ w2


def _flops_programs():
    """(name, function, abstract arguments, relative tolerance) for the flops checks."""
    import jax
    import jax.numpy as jnp

    def f32(*shape: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jnp.float32)

    mlp_args = (f32(64, 128), f32(128), f32(128, 32), f32(16, 64))
    return [
        ("mlp", _mlp, mlp_args, 0.0),
        ("mlp grad", jax.grad(lambda *a: (_mlp(*a) ** 2).sum()), mlp_args, 0.0),
        (
            "attention scores",
            lambda q, k: jax.nn.softmax(jnp.einsum("bqd,bkd->bqk", q, k)),
            (f32(4, 32, 16), f32(4, 32, 16)),
            0.01,
        ),
        # XLA takes the padding off a convolution's window; from shapes it is an upper bound
        (
            "same-padded convolution",
            lambda x, w: jax.lax.conv(x, w, (1, 1), "SAME"),
            (f32(2, 3, 16, 16), f32(8, 3, 3, 3)),
            0.1,
        ),
    ]


@pytest.mark.parametrize("case", range(4), ids=["mlp", "mlp grad", "attention", "conv"])
def test_node_flops_add_up_to_xla_cost_analysis(case: int) -> None:
    import jax

    name, fn, args, tolerance = _flops_programs()[case]
    compiled = jax.jit(fn).trace(*args).lower().compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    text = compiled.as_text()
    assert cost is not None and text is not None, "the CPU backend reports both"
    module = parse_hlo(text)
    total = sum(instruction_flops(module).values())
    assert total == pytest.approx(cost["flops"], rel=tolerance), name
    if name == "same-padded convolution":
        assert total >= cost["flops"]


def test_nodes_show_flops_from_shapes(block_text) -> None:
    module = parse_hlo(block_text)
    flops = instruction_flops(module)
    heaviest = max(flops, key=lambda n: flops[n])
    assert flops[heaviest] > 0 and module.entry.instruction(heaviest) is not None
    graph = fusion_graph(block_text)
    assert "flop" in graph.dot
