"""xla-inspect CLI: verbs in-process through main([...]), one console-script smoke test."""

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


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_capture_writes_every_stage(xi_cli_out: Path) -> None:
    for name in ("jaxpr.txt", "stablehlo.mlir", "hlo.txt", "optimized_hlo.txt"):
        assert (xi_cli_out / name).stat().st_size > 0
    assert json.loads((xi_cli_out / "cost.json").read_text())["flops"] == 10784
    assert json.loads((xi_cli_out / "memory.json").read_text())["output_size_in_bytes"] == 128
    assert list(xi_cli_out.glob("*after_optimizations.txt"))


def test_summary_of_a_dump_directory(xi_cli_out: Path, capsys) -> None:
    code, out, err = _run(capsys, "summary", str(xi_cli_out))
    assert (code, err) == (0, "")
    assert "after_optimizations.txt" in out
    assert "module        jit_mlp" in out
    assert "fusions       4: kCustom(__ynn_fusion) 2, kLoop 2" in out
    assert "dots          2" in out
    assert "\x1b[" not in out


def test_summary_json_counts_every_instruction(xi_cli_out: Path, capsys) -> None:
    code, out, _ = _run(capsys, "summary", str(xi_cli_out), "--json")
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
    code, out, _ = _run(capsys, "summary", str(tmp_path), "--json")
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
    code, out, _ = _run(capsys, "summary", str(tmp_path), "--json")
    modules = json.loads(out)["modules"]
    assert code == 0
    assert [Path(m["file"]).name for m in modules] == [
        "dtypes.unopt.hlo",
        "shard_map_collectives.opt.hlo",
    ]
    assert modules[1]["collectives"]["all-reduce"] >= 1


def test_diff(xi_cli_out: Path, capsys) -> None:
    before, after = str(xi_cli_out / "hlo.txt"), str(xi_cli_out / "optimized_hlo.txt")
    code, out, _ = _run(capsys, "diff", before, after)
    assert code == 0
    assert "added:   fusion x4" in out
    code, out, _ = _run(capsys, "diff", before, after, "--json")
    assert json.loads(out)["fusions_by_kind"] == {"kCustom(__ynn_fusion)": 2, "kLoop": 2}


def test_normalize(xi_cli_out: Path, capsys) -> None:
    code, out, _ = _run(capsys, "normalize", str(xi_cli_out / "optimized_hlo.txt"))
    assert code == 0
    assert out.startswith("HloModule module,")
    assert "metadata" not in out


def test_passes(xi_cli_out: Path, capsys) -> None:
    code, out, _ = _run(capsys, "passes", str(xi_cli_out))
    assert code == 0
    assert "simplification/algsimp" in out
    code, out, _ = _run(capsys, "passes", str(xi_cli_out), "--removed", "reshape")
    assert code == 0
    assert "removed" in out and "reshape" in out
    code, out, _ = _run(capsys, "passes", str(xi_cli_out), "--removed", "transpose", "--json")
    assert code == 1
    assert json.loads(out) == {"opcode": "transpose", "removed": None}
    code, out, _ = _run(capsys, "passes", str(xi_cli_out), "--json", "--added", "fusion")
    assert code == 0
    assert json.loads(out)["added"]["opcode_deltas"]["fusion"] > 0


FORMS = """\
import equinox as eqx
import jax
import jax.numpy as jnp
from flax import nnx


def affine(x, w, *, b, scale=1.0):
    return jnp.tanh(x @ w + b) * scale


def power(x, n):
    return x**n


def apply(params, x):
    return affine(x, params["w"], b=params["b"])


def example_args():
    f32 = jnp.float32
    params = {"w": jax.ShapeDtypeStruct((16, 4), f32), "b": jax.ShapeDtypeStruct((4,), f32)}
    return (params,), {"x": jnp.ones((8, 16))}


def not_a_pair():
    return [1, 2, 3]


jitted = jax.jit(affine, static_argnames="scale")
nnx_jitted = nnx.jit(affine)
eqx_jitted = eqx.filter_jit(affine)
"""
KEYWORDS = ["--arg", "f32[8,16]", "--arg", "w=f32[16,4]", "--arg", "b = f32[4]"]


def _oracle_facts(fn, *args) -> tuple[list[str], Counter[str]]:
    import jax

    text = jax.jit(fn).lower(*args).compile().as_text()
    assert text is not None
    return _optimized_facts(text)


def _optimized_facts(text: str) -> tuple[list[str], Counter[str]]:
    from xla_inspect.parse import parse_hlo
    from xla_inspect.query import opcode_counts

    module = parse_hlo(text)
    params = sorted(
        (int(i.payload or -1), i.shape)
        for i in module.entry.instructions
        if i.opcode == "parameter"
    )
    return [shape.split("{")[0] for _, shape in params], opcode_counts(module)


def _affine_oracle(scale: float, order: str):
    import jax
    import jax.numpy as jnp

    shapes = {"x": (8, 16), "w": (16, 4), "b": (4,)}
    structs = [jax.ShapeDtypeStruct(shapes[name], jnp.float32) for name in order]

    def fn(*arrays):
        named = dict(zip(order, arrays, strict=True))
        return jnp.tanh(named["x"] @ named["w"] + named["b"]) * scale

    return _oracle_facts(fn, *structs)


@pytest.mark.parametrize(
    ("target", "extra", "scale", "order", "has_jaxpr"),
    [
        ("affine", [], 1.0, "xbw", True),  # keywords are flattened by sorted name
        ("affine", ["--arg", "scale=3.0"], 3.0, "xbw", True),
        ("jitted", ["--arg", "scale=3.0"], 3.0, "xbw", True),
        ("nnx_jitted", [], 1.0, "xbw", True),
        ("eqx_jitted", ["--arg", "scale=3.0"], 3.0, "xwb", False),  # equinox: as given
    ],
)
def test_capture_keyword_and_static_args(
    target: str, extra: list[str], scale: float, order: str, has_jaxpr: bool, tmp_path: Path, capsys
) -> None:
    (tmp_path / "forms.py").write_text(FORMS)
    out = tmp_path / "out"
    argv = ["capture", f"{tmp_path / 'forms.py'}:{target}", *KEYWORDS, *extra, "--out", str(out)]
    code, stdout, err = _run(capsys, *argv)
    assert (code, err) == (0, "")
    assert stdout.startswith(f"captured {tmp_path / 'forms.py'}:{target} into {out}: ")
    shapes, counts = _optimized_facts((out / "optimized_hlo.txt").read_text())
    want_shapes, want_counts = _affine_oracle(scale, order)
    assert shapes == want_shapes
    if target == "eqx_jitted":  # equinox returns one more output, an s32[] zero
        want_counts += Counter({"constant": 1, "copy": 1, "tuple": 1})
    assert counts == want_counts
    assert (out / "jaxpr.txt").exists() is has_jaxpr
    assert ("jaxpr.txt" in stdout) is has_jaxpr
    if has_jaxpr and scale != 1.0:
        assert "3.0" in (out / "jaxpr.txt").read_text()


def test_capture_static_positional_value(tmp_path: Path, capsys) -> None:
    (tmp_path / "forms.py").write_text(FORMS)
    target = f"{tmp_path / 'forms.py'}:power"
    outs = {n: tmp_path / f"out{n}" for n in ("3", "5")}
    for n, out in outs.items():
        assert (
            _run(capsys, "capture", target, "--arg", "f32[6]", "--arg", n, "--out", str(out))[0]
            == 0
        )
    facts = {
        n: _optimized_facts((out / "optimized_hlo.txt").read_text()) for n, out in outs.items()
    }
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((6,), jnp.float32)
    for n in outs:
        assert facts[n] == _oracle_facts(lambda x, n=int(n): x**n, x)
        assert facts[n][0] == ["f32[6]"]  # the static n is no parameter
    assert facts["3"][1] != facts["5"][1]


def test_capture_args_from_a_builder(tmp_path: Path, capsys) -> None:
    (tmp_path / "forms.py").write_text(FORMS)
    forms = tmp_path / "forms.py"
    out = tmp_path / "out"
    argv = ["capture", f"{forms}:apply", "--args-from", f"{forms}:example_args", "--out", str(out)]
    code, _, err = _run(capsys, *argv)
    assert (code, err) == (0, "")
    assert _optimized_facts((out / "optimized_hlo.txt").read_text()) == _affine_oracle(1.0, "bwx")


def test_capture_of_ir_files(tmp_path: Path, capsys) -> None:
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    lowered = jax.jit(lambda a, b: jnp.sin(a) @ b).lower(x, x)
    (tmp_path / "f.mlir").write_text(lowered.as_text())
    (tmp_path / "f.hlo").write_text(lowered.as_text(dialect="hlo"))
    code, stdout, err = _run(
        capsys, "capture", str(tmp_path / "f.mlir"), "--out", str(tmp_path / "m")
    )
    assert (code, err) == (0, "")
    names = ["stablehlo.mlir", "hlo.txt", "optimized_hlo.txt", "cost.json", "memory.json"]
    assert stdout == f"captured {tmp_path / 'f.mlir'} into {tmp_path / 'm'}: {', '.join(names)}\n"
    optimized = (tmp_path / "m" / "optimized_hlo.txt").read_text()
    assert _optimized_facts(optimized) == _optimized_facts(lowered.compile().as_text() or "")
    cost = lowered.compile().cost_analysis()
    assert cost is not None
    assert json.loads((tmp_path / "m" / "cost.json").read_text())["flops"] == cost["flops"]
    code, stdout, err = _run(
        capsys, "capture", str(tmp_path / "f.hlo"), "--out", str(tmp_path / "h")
    )
    assert (code, err) == (0, "")
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["hlo.txt"]
    assert (tmp_path / "h" / "hlo.txt").read_text() == (tmp_path / "f.hlo").read_text()


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
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("xla-inspect: error: ")
    assert err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


def test_parse_errors_name_file_line_and_fix(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("HloModule m\n\nENTRY %e {\n  %p = f32[2]{0} parameter(0)\n  garbage here\n}\n")
    code, _, err = _run(capsys, "summary", str(bad))
    assert code == 2
    assert err.startswith(f"xla-inspect: error: {bad}:5:11: expected ")
    assert err.rstrip().endswith("— is this an HLO text file?")


def test_graph_without_graphviz_writes_dot_and_says_how_to_install(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    svg = tmp_path / "graphs" / "net.svg"
    code, out, err = _run(capsys, "graph", str(CORPUS / "conv_net.opt.hlo"), "--out", str(svg))
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
    code, out, err = _run(capsys, "graph", str(hlo))
    assert (code, out, err) == (0, f"{tmp_path / 'net.opt.svg'}\n", "")
    assert (tmp_path / "net.opt.svg").read_text().startswith("digraph ")


def test_help_exits_0(capsys) -> None:
    code, out, _ = _run(capsys, "--help")
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
