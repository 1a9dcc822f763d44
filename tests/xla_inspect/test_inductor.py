"""xla_inspect.inductor and inductor_capture: Inductor's generated code read into kernels.

The fixtures are modules torch 2.15.0 generated on this project's CPU host (copied from
katas/phase16/recorded/; each file's header names the version and the program). The live test
compiles with Inductor and skips, naming the group, without torch.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from xla_inspect import inductor_capture, targets
from xla_inspect.inductor import InductorCodeError, fused_ops, read_inductor, reduction_count

FIXTURES = Path(__file__).parent / "fixtures" / "inductor"


def _graphs(name: str) -> list[str]:
    """The graphs of a fixture file, each after its `# ---- graph` line."""
    graphs: list[list[str]] = []
    for line in (FIXTURES / f"{name}.txt").read_text(encoding="utf-8").splitlines(True):
        if line.startswith("# ---- graph "):
            graphs.append([])
        elif graphs:
            graphs[-1].append(line)
    return ["".join(g) for g in graphs]


def test_forward_graph_of_a_training_step() -> None:
    forward = read_inductor(_graphs("train_mlp_gelu")[0])
    assert not forward.is_backward
    assert [(c.kind, c.short_name) for c in forward.calls] == [
        ("extern", "addmm"),
        ("fused", "gelu"),
        ("extern", "addmm"),
        ("fused", "mean_mul_pow_sub"),
    ]
    assert forward.inputs == tuple(f"primals_{i}" for i in range(1, 7))
    assert len(forward.outputs) == 6  # the loss and five tensors saved for the backward
    first = forward.calls[0]
    assert first.aten == ("aten.t", "aten.addmm") and first.source_nodes == ("linear",)
    assert first.arguments == ("primals_3", "primals_1", "primals_2") and first.out == "buf0"
    assert set(forward.kernels) == {"cpp_fused_gelu_0", "cpp_fused_mean_mul_pow_sub_1"}


def test_backward_graph_of_a_training_step() -> None:
    backward = read_inductor(_graphs("train_mlp_gelu")[1])
    assert backward.is_backward
    assert [c.short_name for c in backward.calls].count("mm") == 3
    assert [n for n in backward.inputs if not n.startswith("tangents_")] == [
        "primals_1",
        "addmm",
        "mul_2",
        "mul_3",
        "permute_2",
    ]
    assert None in backward.outputs  # no gradient for the data arguments


def test_one_kernel_with_four_reductions() -> None:
    graph = read_inductor(_graphs("layernorm_softmax")[0])
    [call] = graph.calls
    assert call.kind == "fused" and call.short_name == "_softmax_native_layer_norm"
    assert reduction_count(graph.kernels[call.kernel]) == 4
    assert reduction_count("") == 0


def test_an_aten_fallback_assigned_to_a_buffer() -> None:
    [call] = read_inductor(_graphs("addmm_gelu")[0]).calls
    assert call.kind == "fallback" and call.short_name == "_addmm_activation"
    assert call.kernel == "torch.ops.aten._addmm_activation.default" and call.out == "buf0"


def test_call_at_module_level_and_a_kernel_called_twice() -> None:
    code = (
        "cpp_fused_relu_4 = async_compile.cpp_pybinding(['float*'], r'''float tmp_acc0 = 0;''')\n"
        "def call(args):\n"
        "    a, b = args\n"
        "    cpp_fused_relu_4(a)\n"
        "    extern_kernels.bmm(a, reinterpret_tensor(b, (2, 2), (1, 2), 0), out=c)\n"
        "    cpp_fused_relu_4(c)\n"
        "    return (c, None)\n"
    )
    graph = read_inductor(code)
    assert [c.short_name for c in graph.calls] == ["relu", "bmm", "relu"]
    assert graph.calls[1].arguments == ("a", "b") and graph.outputs == ("c", None)
    assert reduction_count(graph.kernels["cpp_fused_relu_4"]) == 1
    assert fused_ops("cpp_fused__softmax_native_layer_norm_12") == "_softmax_native_layer_norm"
    assert fused_ops("cpp_fused_0") == ""  # no named operator (torch 2.15: a layout copy)
    assert fused_ops("cpp_fused_atan2_10") == "atan2"


def test_a_profiled_module_runs_its_kernels_inside_record_function() -> None:
    # torch._inductor.config.profiler_mark_wrapper_call: call's body is one `with` block
    graph = read_inductor(_graphs("mlp_gelu_marked")[0])
    assert [(c.kind, c.short_name) for c in graph.calls] == [
        ("extern", "addmm"),
        ("fused", "gelu"),
        ("extern", "addmm"),
    ]
    assert len(graph.inputs) == 5 and len(graph.outputs) == 1


def test_a_convolution_is_a_library_call_assigned_to_a_buffer() -> None:
    graph = read_inductor(_graphs("conv_relu")[0])
    assert [(c.kind, c.short_name) for c in graph.calls] == [
        ("fused", "convolution"),
        ("extern", "convolution"),
        ("fused", "relu"),
    ]
    assert graph.calls[1].out == "buf2"


def test_argmax_and_var_mean_accumulators_are_reductions() -> None:
    # `IndexValue<float> tmp_acc1 = ...` (argmax) beside the float sums of var_mean
    graph = read_inductor(_graphs("row_stats")[0])
    [call] = graph.calls
    assert reduction_count(graph.kernels[call.kernel]) == 3


def test_a_comment_naming_a_kernel_is_not_a_call() -> None:
    code = (
        "def call(args):\n"
        "    a, = args\n"
        "    # cpp_fused_relu_0(a) would run here; extern_kernels.mm(a, a, out=b) too\n"
        "    if a is not None:\n"
        "        cpp_fused_relu_0(a)\n"
        "    return (a, )\n"
    )
    assert [c.short_name for c in read_inductor(code).calls] == ["relu"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("def call(:\n", "not Python (line 1"),
        ("x = 1\n", "no `call` function"),
        ("HloModule m\nENTRY %e () -> f32[] {}", "not Python"),
    ],
)
def test_text_that_is_not_generated_code(text: str, says: str) -> None:
    with pytest.raises(InductorCodeError, match=r"run_and_get_code") as error:
        read_inductor(text)
    assert says in str(error.value)


def test_a_missing_group_names_its_install_command(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda m, *a: None if m == "torch" else real(m, *a)
    )
    missing = inductor_capture.missing()
    assert missing is not None and "uv sync --group torch" in missing
    assert targets.group_missing("torch") == missing
    with pytest.raises(inductor_capture.InductorUnavailable, match="uv sync --group torch"):
        inductor_capture.generated_code(lambda x: x, 1, cache_dir=FIXTURES)


@pytest.mark.timeout(600)  # a first compile with an empty Inductor cache takes about a minute
def test_generated_code_of_a_live_compile(tmp_path) -> None:
    missing = inductor_capture.missing()
    if missing is not None:
        pytest.skip(f"needs: {inductor_capture.INSTALL} ({missing})")
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    cache = Path(__file__).resolve().parents[2] / ".cache" / "inductor"
    x, w, b = torch.ones(4, 8), torch.ones(3, 8), torch.ones(3)
    codes = inductor_capture.generated_code(
        lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b)), x, w, b, cache_dir=cache
    )
    [graph] = [read_inductor(code) for code in codes]
    assert [c.short_name for c in graph.calls] == ["addmm", "relu"]
