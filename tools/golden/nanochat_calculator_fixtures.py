#!/usr/bin/env python3
"""What nanochat's calculator tool answers, for tests/infer/test_calculator.cpp:

    python3 tools/golden/nanochat_calculator_fixtures.py NANOCHAT_GIT_DIR tests/fixtures/nanochat

NANOCHAT_GIT_DIR is a clone of karpathy/nanochat (a bare one will do) holding commit 92d63d4. The
script reads nanochat/engine.py at that commit with `git show`, takes its calculator functions
(timeout, eval_with_timeout, use_calculator) out of the module with `ast` (the module itself
imports torch, which the functions never use) and runs them unchanged on every expression below.
Nothing of nanochat is copied into this repository.

Written: calculator_92d63d4.json, a list of {"expr": ..., "result": ...}: result is what
Engine.generate forces between <|output_start|> and <|output_end|>, str(use_calculator(expr)), or
null where use_calculator returns None (nothing is forced). Where str() itself raises (an integer
of more than sys.get_int_max_str_digits() digits: Engine.generate would raise), the entry has
"engine_raises": the exception's type name. The Python version is recorded: float formatting and
the integer digit limit (3.11+) are Python's.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

COMMIT = "92d63d4"
FUNCTIONS = ("timeout", "eval_with_timeout", "use_calculator")

EXPRESSIONS = [
    # integers, arbitrary precision
    "1+1", "2 + 3 * 4", "(2 + 3) * 4", "10 - 25", "7 * -3", "--5", "-+-5", "5--3", "+7", " 12 ", "  3*3",
    "123456789 * 987654321", "99999999999999999999 * 99999999999999999999 + 1", "0", "00", "000 + 1",
    "1,000 + 2,000", "1,234,567 * 3", "7 // 2", "-7 // 2", "7 // -2", "2 // 0", "12345678901234567890 // 7",
    "(1)", "((2))", "((((((((((5))))))))))", "()", "( )", "(())",
    # true division: floats, correctly rounded, Python's repr
    "7 / 2", "6 / 3", "1 / 3", "2 / 3", "-1 / 3", "1 / 7", "10 / 4", "1 / 0", "0 / 5", "-0 / 5",
    "12345678901234567890 / 3", "98765432109876543210987654321 / 123456789", "1 / 12345678901234567890",
    "100000000000000000000 / 10", "10000000000000000 / 1", "1234567890123456 / 1", "1 / 10000", "1 / 100000",
    "3 / 100000000", "123456789012345678 / 1000", "9007199254740993 / 1", "9007199254740995 / 1",
    # floats
    "0.1 + 0.2", "1.5 * 2", "1. + 1", ".5 + .25", "3.14159 * 2", "2.5 // 1", "-2.5 // 1", "7.5 // -2",
    "7.0 // 0.5", "1e", "0.1 * 3", "1.0 / 3.0", "5.0 - 5", "-0.0 * 1", "0.0 * -1", "1.5 / 0", "1.5 // 0.0",
    "00.5 + 1", "01.5 * 2", "123.456 - 0.456", "1000000.0 * 1000000.0 * 10000.0", "0.00001 * 1",
    "0.0001 * 1", "12345678901234567.0 * 1", "2.0 // 3", "-2.0 // 3", "1.5 + 2", "3 * 0.5",
    "99999999999999999999999 * 1.0", "10.0 // 3.0", "-10.0 // 3.0", "0.3 // 0.1",
    # what Python refuses
    "01", "007 + 1", "2 ** 10", "2 * * 3", "1 2", "1..2", "1.2.3", "(1", "1)", "2(3)", "(1)(2)", "1 +",
    "* 2", "", "   ", "1 . 5", "5 . 0", "1 / ()", "() + 1", "5 % 2", "2 ^ 3", "abs(-3)", "1_000",
    "1e5", "3 x 4",
    # strings: .count() only
    "'strawberry'.count('r')", "\"strawberry\".count(\"r\")", "'banana'.count('an')", "'aaaa'.count('aa')",
    "'abc'.count('')", "''.count('')", "'Mississippi'.count('ss')", "'hello world'.count('o')",
    "('abc').count('a')", "'ab' 'cab'.count('ab')", "'a b c'.count(' ')", "'x'.count('y')",
    "'abc'.upper().count('A')", "'ABC'.lower().count('a')", "'a.b.c'.count('.')", "'a1a1'.count('1')",
    "r'abc'.count('b')", "f'abc'.count('c')", "b'abc'.count(b'a')", "b'abc'.count('a')", "u'xyz'.count('x')",
    "'''abc'''.count('b')", "'abc'.count('b') + 1", "'abc'.count(b)", "x.count('a')", "'abc'.find('b')",
    "'__'.count('_')", "'import'.count('i')", "'abc'.count('a'", "'abc'.count('a') 1", "'a,b,a'.count('a')",
    "'abc'.count('A')", "'abc' .count('a')", "'a.count('.upper()", "b'x.count('.lower()", "'''x'''.count('x')", "'abc'. count('a')", "'a'.count('a').count(1)",
    "(1).count(1)", "'abc'.count", "'abc'.index('c')", "'evaluate'.count('e')", "'open'.count('o')",
    "'Dir'.count('D')", "'abc'.count('a') 'b'",
]


def calculator(nanochat_git_dir: str):
    source = subprocess.run(["git", "-C", nanochat_git_dir, "show", f"{COMMIT}:nanochat/engine.py"],
                            check=True, capture_output=True, text=True).stdout
    tree = ast.parse(source)
    nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS]
    assert sorted(n.name for n in nodes) == sorted(FUNCTIONS), "engine.py's calculator functions moved"
    module = ast.Module(body=nodes, type_ignores=[])
    scope: dict = {}
    exec("import signal, warnings\nfrom contextlib import contextmanager\n", scope)
    exec(compile(module, f"nanochat@{COMMIT}/nanochat/engine.py", "exec"), scope)
    return scope["use_calculator"]


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(textwrap.dedent(__doc__))
    use_calculator = calculator(sys.argv[1])
    entries = []
    for expr in EXPRESSIONS + ["9" * 5000 + " * 1", "9" * 4000 + " * " + "9" * 400, "1" * 400 + ".0 * 1",
                               "1 / 1" + "0" * 320, "1 / 1" + "0" * 400, "1" + "0" * 400 + " / 1", "1" + "0" * 400 + " * 1.0",
                               "3" * 330 + " / " + "7" * 20, "0 / -5", "-0.0 + 0", "0.0 - 0",
                               "(" * 150 + "1" + ")" * 150, "(" * 199 + "1" + ")" * 199, "(" * 200 + "1" + ")" * 200,
                               "(" * 201 + "1" + ")" * 201, "(" * 250 + "1" + ")" * 250, "-" * 300 + "1",
                               "-" * 3000 + "1", "-" * 5000 + "1", "-" * 7000 + "1", "1" + " + 1" * 3000]:
        result = use_calculator(expr)
        entry = {"expr": expr}
        if result is None:
            entry["result"] = None
        else:
            try:
                entry["result"] = str(result)
            except Exception as e:  # what Engine.generate's str(result) raises
                entry["engine_raises"] = type(e).__name__
        entries.append(entry)
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    document = {"commit": COMMIT, "python": sys.version.split()[0], "cases": entries}
    (out / f"calculator_{COMMIT}.json").write_text(json.dumps(document, indent=1, ensure_ascii=True) + "\n")
    print(f"{len(entries)} expressions -> {out / f'calculator_{COMMIT}.json'}")


if __name__ == "__main__":
    main()
