"""The sandbox bootstrap as a module: importable without side effects, standard library only
(it runs in another interpreter without site-packages), and its traceback printer hides its
own frames. The end-to-end behaviour is tested through run_python in test_sandbox_programs.py,
test_sandbox_limits.py and test_sandbox_isolation.py."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import envs.sandbox.bootstrap as bootstrap


def test_importing_the_bootstrap_does_nothing():
    cwd = os.getcwd()
    assert bootstrap.C == {} and bootstrap.W == "" and os.getcwd() == cwd
    assert callable(bootstrap.main)


def test_the_bootstrap_imports_only_the_standard_library():
    tree = ast.parse(Path(bootstrap.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the bootstrap cannot import from this package"
            imported.add(node.module.split(".")[0])
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_report_prints_the_programs_frames_without_the_bootstraps(capsys):
    program = compile("def user_code():\n    raise ValueError('boom')\n", "main.py", "exec")
    namespace: dict = {}
    exec(program, namespace)
    runner = compile("def run(f):\n    f()\n", "<sandbox>", "exec")
    exec(runner, namespace)
    try:
        namespace["run"](namespace["user_code"])
    except ValueError as exc:
        bootstrap.report(exc)
    printed = capsys.readouterr().err
    assert 'File "main.py", line 2, in user_code' in printed and "ValueError: boom" in printed
    assert "<sandbox>" not in printed
