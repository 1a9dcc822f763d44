"""xla-inspect CLI: verbs in-process through main([...]), one console-script smoke test (how
`capture` reads a function's arguments: test_cli_capture.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from xla_inspect.cli import main

from .conftest import run_cli

CORPUS = Path(__file__).parent / "corpus"
MODEL = """\
import jax
import jax.numpy as jnp


def mlp(x, w1, b1, w2, b2):
    return jnp.dot(jax.nn.relu(jnp.dot(x, w1) + b1), w2) + b2
"""
MLP_ARGS = ["--arg", "f32[8,16]", "--arg", "f32[16,32]", "--arg", "f32[32]"]
MLP_ARGS += ["--arg", "f32[32,4]", "--arg", "f32[4]"]


@pytest.fixture(scope="module")
def xi_cli_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    (root / "model.py").write_text(MODEL)
    out = root / "out"
    assert (
        main(["capture", f"{root / 'model.py'}:mlp", *MLP_ARGS, "--out", str(out), "--passes"]) == 0
    )
    return out


def test_capture_writes_every_stage(xi_cli_out: Path) -> None:
    for name in ("jaxpr.txt", "stablehlo.mlir", "hlo.txt", "optimized_hlo.txt"):
        assert (xi_cli_out / name).stat().st_size > 0
    assert json.loads((xi_cli_out / "cost.json").read_text())["flops"] == 10784
    assert json.loads((xi_cli_out / "memory.json").read_text())["output_size_in_bytes"] == 128
    assert list(xi_cli_out.glob("*after_optimizations.txt"))


def test_summary_of_a_dump_directory(xi_cli_out: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "summary", str(xi_cli_out))
    assert (code, err) == (0, "")
    assert "after_optimizations.txt" in out
    assert "module        jit_mlp" in out
    assert "fusions       4: kCustom(__ynn_fusion) 2, kLoop 2" in out
    assert "dots          2" in out
    assert "\x1b[" not in out


def test_summary_json_counts_every_instruction(xi_cli_out: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "summary", str(xi_cli_out), "--json")
    (module,) = json.loads(out)["modules"]
    assert code == 0
    assert module["module"] == "jit_mlp"
    assert sum(module["opcode_counts"].values()) == module["instructions"]
    assert module["opcode_counts"]["fusion"] == 4
    assert module["opcode_counts"]["dot"] == 2
    assert module["fusions_by_kind"] == {"kCustom(__ynn_fusion)": 2, "kLoop": 2}


def test_summary_json_of_a_dump_directory_with_many_modules(tmp_path: Path, capsys) -> None:
    names = ("control_flow", "sharded_auto", "transformer_grad")
    for number, name in enumerate(names):
        text = (CORPUS / f"{name}.opt.hlo").read_text()
        (tmp_path / f"module_{number:04d}.jit_{name}.cpu_after_optimizations.txt").write_text(text)
        (tmp_path / f"module_{number:04d}.jit_{name}.before_optimizations.txt").write_text(text)
    code, out, _ = run_cli(capsys, "summary", str(tmp_path), "--json")
    modules = json.loads(out)["modules"]
    assert code == 0
    assert [Path(m["file"]).name.split(".")[1] for m in modules] == [f"jit_{n}" for n in names]
    for name, module in zip(names, modules, strict=True):
        printed = re.findall(
            r"^\s*(?:ROOT )?%\S+ = .*? ([a-z][a-z0-9-]*)\(",
            (CORPUS / f"{name}.opt.hlo").read_text(),
            re.MULTILINE,
        )
        assert module["opcode_counts"] == dict(Counter(printed)), name


def test_summary_falls_back_to_every_hlo_file(tmp_path: Path, capsys) -> None:
    for name in ("shard_map_collectives.opt.hlo", "dtypes.unopt.hlo"):
        shutil.copy(CORPUS / name, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not HLO\n")
    code, out, _ = run_cli(capsys, "summary", str(tmp_path), "--json")
    modules = json.loads(out)["modules"]
    assert code == 0
    assert [Path(m["file"]).name for m in modules] == [
        "dtypes.unopt.hlo",
        "shard_map_collectives.opt.hlo",
    ]
    assert modules[1]["collectives"]["all-reduce"] >= 1


def test_diff(xi_cli_out: Path, capsys) -> None:
    before, after = str(xi_cli_out / "hlo.txt"), str(xi_cli_out / "optimized_hlo.txt")
    code, out, _ = run_cli(capsys, "diff", before, after)
    assert code == 0
    assert "added:   fusion x4" in out
    code, out, _ = run_cli(capsys, "diff", before, after, "--json")
    assert json.loads(out)["fusions_by_kind"] == {"kCustom(__ynn_fusion)": 2, "kLoop": 2}


def test_normalize(xi_cli_out: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "normalize", str(xi_cli_out / "optimized_hlo.txt"))
    assert code == 0
    assert out.startswith("HloModule module,")
    assert "metadata" not in out


def test_passes(xi_cli_out: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "passes", str(xi_cli_out))
    assert code == 0
    assert "simplification/algsimp" in out
    code, out, _ = run_cli(capsys, "passes", str(xi_cli_out), "--removed", "reshape")
    assert code == 0
    assert "removed" in out and "reshape" in out
    code, out, _ = run_cli(capsys, "passes", str(xi_cli_out), "--removed", "transpose", "--json")
    assert code == 1
    assert json.loads(out) == {"opcode": "transpose", "removed": None}
    code, out, _ = run_cli(capsys, "passes", str(xi_cli_out), "--json", "--added", "fusion")
    assert code == 0
    assert json.loads(out)["added"]["opcode_deltas"]["fusion"] > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["summary", "missing.txt"], "missing.txt: no such file or directory — check the path"),
        (["diff", "missing.txt", "x"], "missing.txt: no such file — check the path"),
        (["normalize", "{model}"], "model.py:1:8: expected"),
        (["capture", "{model}:mlp", "--arg", "f33[2]", "--out", "{tmp}"], "bad --arg 'f33[2]'"),
        (["capture", "no_such_module_xi:f", "--out", "{tmp}"], "cannot import no_such_module_xi"),
        (["capture", "{model}:nope", "--out", "{tmp}"], "has no attribute 'nope'"),
        (["capture", "{model}:mlp", "--arg", "f32[2]", "--out", "{tmp}"], "capturing"),
        (["capture", "nocolon", "--out", "{tmp}"], "write MODULE:FUNCTION"),
        (["capture", "{model}:mlp", "--arg", "x=f32[2", "--out", "{tmp}"], "bad --arg 'x=f32[2'"),
        (["capture", "{model}:mlp", "--arg", "n=three", "--out", "{tmp}"], "[NAME=]LITERAL"),
        (
            ["capture", "{model}:mlp", "--arg", "a=1", "--arg", "a=2", "--out", "{tmp}"],
            "same keyword",
        ),
        (
            ["capture", "{model}:mlp", "--args-from", "{model}:mlp", "--out", "{tmp}"],
            "raised TypeError",
        ),
        (
            ["capture", "{model}:mlp", "--args-from", "{model}:MODEL_PAIR", "--out", "{tmp}"],
            "return (args, kwargs)",
        ),
        (
            [
                "capture",
                "{model}:mlp",
                "--arg",
                "f32[2]",
                "--args-from",
                "{model}:mlp",
                "--out",
                "{tmp}",
            ],
            "--arg and --args-from together",
        ),
        (["capture", "{tmp}/none.mlir", "--out", "{tmp}"], "none.mlir: no such file"),
        (["capture", "{model}", "--out", "{tmp}"], "write MODULE:FUNCTION"),
        (
            ["capture", "{hlo}", "--passes", "--out", "{tmp}"],
            "takes no --arg, --args-from, --passes or --target",
        ),
        (["capture", "{bad_hlo}", "--out", "{tmp}"], "bad.hlo:1:8: expected"),
        (["capture", "{bad_mlir}", "--out", "{tmp}"], "compiling the StableHLO failed"),
        (["passes", "{tmp}"], "no per-pass dump files"),
        (["graph", "{model}"], "model.py:1:8: expected"),
        (["graph", "missing.hlo"], "missing.hlo: no such file — check the path"),
        (["bogus"], "invalid choice: 'bogus'"),
        ([], "required: verb"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys
) -> None:
    model = tmp_path / "model.py"
    model.write_text(MODEL + "\nMODEL_PAIR = 3\n")
    files = {"hlo": "good.hlo", "bad_hlo": "bad.hlo", "bad_mlir": "bad.mlir"}
    (tmp_path / "good.hlo").write_text((CORPUS / "conv_net.opt.hlo").read_text())
    (tmp_path / "bad.hlo").write_text("module @m {}\n")
    (tmp_path / "bad.mlir").write_text("module @m { nonsense }\n")
    paths = {key: tmp_path / name for key, name in files.items()}
    argv = [a.format(model=model, tmp=tmp_path, **paths) for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("xla-inspect: error: ")
    assert err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


def test_parse_errors_name_file_line_and_fix(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("HloModule m\n\nENTRY %e {\n  %p = f32[2]{0} parameter(0)\n  garbage here\n}\n")
    code, _, err = run_cli(capsys, "summary", str(bad))
    assert code == 2
    assert err.startswith(f"xla-inspect: error: {bad}:5:11: expected ")
    assert err.rstrip().endswith("— is this an HLO text file?")


def test_graph_without_graphviz_writes_dot_and_says_how_to_install(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    svg = tmp_path / "graphs" / "net.svg"
    code, out, err = run_cli(capsys, "graph", str(CORPUS / "conv_net.opt.hlo"), "--out", str(svg))
    dot = svg.with_suffix(".dot")
    assert (code, out) == (0, f"{dot}\n")
    assert dot.read_text().startswith("digraph ") and not svg.exists()
    assert "apt-get install graphviz" in err and "brew install graphviz" in err
    assert err.count("\n") == 1


def test_graph_writes_the_svg_beside_the_file_by_default(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\ncat > "$3"\n')  # fake dot -Tsvg -o OUT: echo the input
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    hlo = tmp_path / "net.opt.hlo"
    hlo.write_text((CORPUS / "conv_net.opt.hlo").read_text())
    code, out, err = run_cli(capsys, "graph", str(hlo))
    assert (code, out, err) == (0, f"{tmp_path / 'net.opt.svg'}\n", "")
    assert (tmp_path / "net.opt.svg").read_text().startswith("digraph ")


def test_help_exits_0(capsys) -> None:
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    assert "summary" in out and "capture" in out and "graph" in out


def test_console_script_smoke(xi_cli_out: Path) -> None:
    script = Path(sys.executable).with_name("xla-inspect")
    result = subprocess.run(
        [str(script), "summary", str(xi_cli_out), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["modules"][0]["module"] == "jit_mlp"
