"""Reading HLO text, in layers that import only downward (docs/architecture.md; the contract is
in pyproject.toml and `uv run lint-imports` checks it). From the top:

    reader                          parse_hlo
    async_ops, calls                passes over the computations read
    module                          header, computations, inline computations
    instructions | frames           a computation's body | the frame tables
    token_path, operands            one instruction read token by token, its operands
    instruction_checks              the checks the fast line path and the token path share
    tokens | header                 offsets, errors, values, shapes | header attributes
    attributes, rules, infer, ...   tables of the grammar and small checkers
    model, lexical                  the data classes and the lexical pieces they need
"""
