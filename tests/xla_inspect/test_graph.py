"""xla_inspect.graph: fusion graphs drawn from corpus text (no compiling), SVG through graphviz."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from xla_inspect.errors import InspectError
from xla_inspect.graph import GraphvizMissing, fusion_graph_dot, render_svg, save_graph
from xla_inspect.parse import parse_hlo
from xla_inspect.query import fusions

CORPUS = Path(__file__).parent / "corpus"


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


def test_one_node_per_entry_instruction_and_an_edge_per_operand(block_text):
    module = parse_hlo(block_text)
    dot = fusion_graph_dot(block_text)
    assert dot.startswith(f'digraph "{module.name}" {{') and dot.endswith("}\n")
    entry = module.entry.instructions
    assert dot.count(" [label=") == len(entry)
    operands = sum(1 for i in entry for o in i.operands if module.entry.instruction(o))
    assert dot.count(" -> ") == operands


def test_fusion_nodes_name_kind_and_absorbed_ops(block_text):
    module = parse_hlo(block_text)
    dot = fusion_graph_dot(module)
    in_entry = [f for f in fusions(module) if module.entry.instruction(f.name) is not None]
    assert dot.count('[label="fusion ') == len(in_entry) > 0
    assert '[label="fusion kCustom(__ynn_fusion)\\ndot\\n' in dot
    assert "fusion kLoop\\n" in dot and "shape=ellipse" in dot


def test_accepts_a_parsed_module_and_escapes_the_title(block_text):
    module = parse_hlo(block_text)
    assert fusion_graph_dot(module) == fusion_graph_dot(block_text)
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
def test_real_dot_draws_an_svg(block_text, tmp_path):
    path = render_svg(fusion_graph_dot(block_text), tmp_path / "block.svg")
    svg = path.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "kCustom(__ynn_fusion)" in svg
