"""A pytest plugin for bench_suite.py: every backend compile of a run, with its module fingerprint.

Durations come from jax.monitoring's ``/jax/core/compile/backend_compile_duration`` event (eager
ops included). The fingerprint is a hash of the StableHLO module handed to XLA (without source
locations) plus the compiler options and device count, taken by wrapping
``jax._src.compiler.compile_or_get_cached``, which the event brackets. Two compiles with one
fingerprint compiled the same program twice. Also totals the trace and lowering events.

    PYTHONPATH=bench COMPILE_CENSUS_OUT=census.json uv run pytest -p compile_census ...
"""

from __future__ import annotations

import hashlib
import json
import os

import jax
import pytest
from jax._src import compiler

EVENT = "/jax/core/compile/backend_compile_duration"
STAGES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    EVENT: "compile",
}
_records: list[dict] = []
_stage_seconds: dict[str, float] = dict.fromkeys(STAGES.values(), 0.0)
_state: dict[str, str | None] = {"test": "(collection)", "fingerprint": None}


def _fingerprinting(original):
    def compile_or_get_cached(backend, computation, devices, compile_options, *args, **kwargs):
        asm = computation.operation.get_asm(enable_debug_info=False)
        options = repr(sorted(compile_options.env_option_overrides))
        key = f"{asm}\n{options}\n{devices.size}".encode()
        _state["fingerprint"] = hashlib.sha256(key).hexdigest()[:16]
        return original(backend, computation, devices, compile_options, *args, **kwargs)

    return compile_or_get_cached


def _listener(event: str, duration_secs: float, **kwargs: str | int) -> None:
    if event in STAGES:
        _stage_seconds[STAGES[event]] += duration_secs
    if event == EVENT:
        _records.append(
            {
                "test": _state["test"],
                "function": kwargs.get("fun_name", "?"),
                "fingerprint": _state["fingerprint"],
                "seconds": duration_secs,
            }
        )


def pytest_configure(config: pytest.Config) -> None:
    compiler.compile_or_get_cached = _fingerprinting(compiler.compile_or_get_cached)
    jax.monitoring.register_event_duration_secs_listener(_listener)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _state["test"] = item.nodeid
    try:
        return (yield)
    finally:
        _state["test"] = "(between tests)"


def pytest_unconfigure(config: pytest.Config) -> None:
    with open(os.environ["COMPILE_CENSUS_OUT"], "w", encoding="utf-8") as out:
        json.dump({"compiles": _records, "stages": _stage_seconds}, out)
