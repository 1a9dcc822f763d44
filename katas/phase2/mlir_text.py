"""Reading the StableHLO text stablehlo_of returns, for phase 2's tests: MLIR's own parser
(pytest.fail when it refuses the text), @main's signature and attributes, the module's
attributes and functions, and how two sets of attributes differ."""

import pytest

from kata_harness.oracles import jaxprs as oracle


def parse_module(text):
    """(module, @main's input types, its result types, the module's attributes, @main's
    attributes, the sorted names of the module's functions) of StableHLO text."""
    from jax._src.interpreters import mlir
    from jax.extend.mlir import ir

    assert isinstance(text, str), f"expected StableHLO text (a str), got {type(text).__name__}"
    with mlir.make_ir_context():
        try:
            module = ir.Module.parse(text)
        except Exception as error:  # MLIRError lives in a private module
            pytest.fail(f"not StableHLO (MLIR's parser refused it: {str(error)[:120]})")
        mains = [
            op
            for op in module.body.operations
            if op.operation.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == "main"
        ]
        assert len(mains) == 1, "expected one func.func @main"
        signature = ir.FunctionType(ir.TypeAttr(mains[0].attributes["function_type"]).value)
        inputs, results = [str(t) for t in signature.inputs], [str(t) for t in signature.results]
        attributes = module.operation.attributes
        named = {str(name): str(attributes[name]) for name in attributes}
        main = oracle.function_attributes(mains[0].operation.attributes)
    return module, inputs, results, named, main, function_names(module)


def function_names(module) -> list[str]:
    """The sym_name of each func.func of a module, sorted."""
    from jax.extend.mlir import ir

    functions = [op for op in module.body.operations if op.operation.name == "func.func"]
    return sorted(ir.StringAttr(op.attributes["sym_name"]).value for op in functions)


def differences(named, expected):
    missing = sorted(set(expected) - set(named))
    extra = {k: named[k] for k in sorted(set(named) - set(expected))}
    changed = {k: (named[k], expected[k]) for k in sorted(set(named) & set(expected))}
    changed = {k: pair for k, pair in changed.items() if pair[0] != pair[1]}
    return (
        (f"; missing {missing}" if missing else "")
        + (f"; not set by jit's lowering: {extra}" if extra else "")
        + (f"; other values (got, jit's): {changed}" if changed else "")
    )
