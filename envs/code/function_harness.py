"""teamgym's function-test harness: the program ``envs.code.harness.run_function_tests`` runs
inside the sandbox as ``main.py`` (never imported by teamgym itself).

Protocol: stdin is ``"<nonce>\n<json spec>"`` (the tests, the setup, the time budgets), the
solution is ``./solution.py``. It reports on the stdout it saved before silencing the
solution's: ``"<nonce> L"`` (solution loaded), ``"<nonce> C <error>"`` (it did not),
``"<nonce> T <index> <1|0> <error>"`` per test, ``"<nonce> D"`` when done. The nonce keeps
a solution from forging these lines.

It is a file of its own (read as text by harness.py) so that it is linted and read like any
module; it uses the standard library only, since it runs in the sandbox's interpreter."""

import ast
import builtins
import collections
import decimal
import json
import math
import numbers
import operator
import os
import signal
import sys

# The harness's functions (defined below) look names up in this private copy, so a solution
# that monkeypatches the builtins module (builtins.all = ...) cannot change how they judge.
__builtins__ = dict(builtins.__dict__)


class _Timeout(BaseException):
    pass


class _Rewrite(ast.NodeTransformer):
    """assert A == B / f(x) / not f(x) / values_match(A, B) -> plain-data checks."""

    def visit_Assert(self, node):
        test = node.test
        extra = [node.msg] if isinstance(node.msg, ast.Constant) else []
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            name, args = "_tg_assert_eq", [test.left, test.comparators[0]]
        elif (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "values_match"
            and len(test.args) == 2
            and not test.keywords
        ):
            name, args = "_tg_assert_match", list(test.args)
        elif isinstance(test, ast.Call):
            name, args = "_tg_assert_true", [test]
        elif (
            isinstance(test, ast.UnaryOp)
            and isinstance(test.op, ast.Not)
            and isinstance(test.operand, ast.Call)
        ):
            name, args = "_tg_assert_false", [test.operand]
        else:
            return node
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args + extra, keywords=[])
        return ast.fix_missing_locations(ast.copy_location(ast.Expr(value=call), node))


def _text(x, limit=200):
    try:
        s = x if type(x) is str else str(x)
        if type(s) is not str:
            s = "<unprintable>"
    except BaseException:
        s = "<unprintable>"
    s = " ".join(str.split(bytes.decode(str.encode(s, "ascii", "backslashreplace"), "ascii")))
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _describe(e):
    if type(e) is _Timeout:
        return "timeout"
    msg = _text(e)
    return _text(type(e).__name__, 60) + (": " + msg if msg else "")


# exact types compared by the builtin types' own == (a class whose metaclass is exactly
# ``type`` compares by identity, so ``assert type(f(x)) == int`` works too)
_ATOMS = {id(t) for t in (bool, int, float, complex, str, bytes, type(None), decimal.Decimal, range, type)}
_LIST, _TUPLE, _DICT, _SET, _FSET, _DEQUE = list, tuple, dict, set, frozenset, collections.deque
_Integral, _Real, _Complex = numbers.Integral, numbers.Real, numbers.Complex
_isinstance, _issubclass, _index = isinstance, issubclass, operator.index
_isclose, _INF = math.isclose, math.inf


def _plain(x, budget, depth=0):
    """x as plain data built by the builtin types' own methods; TypeError otherwise."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 200:
        raise TypeError("value too large or too deeply nested to compare")
    t = type(x)
    if id(t) in _ATOMS:
        return x
    if _issubclass(t, int):
        return int.__index__(x)
    if _issubclass(t, float):
        return float.__float__(x)
    if _issubclass(t, str):
        return str.__str__(x)
    if _issubclass(t, _LIST):
        return [_plain(v, budget, depth + 1) for v in _LIST.__iter__(x)]
    if _issubclass(t, _TUPLE):
        return tuple([_plain(v, budget, depth + 1) for v in _TUPLE.__iter__(x)])
    if _issubclass(t, _DICT):
        return {_plain(k, budget, depth + 1): _plain(v, budget, depth + 1) for k, v in _DICT.items(x)}
    if _issubclass(t, _SET):
        return {_plain(v, budget, depth + 1) for v in _SET.__iter__(x)}
    if _issubclass(t, _FSET):
        return frozenset([_plain(v, budget, depth + 1) for v in _FSET.__iter__(x)])
    if t is _DEQUE:
        return _DEQUE([_plain(v, budget, depth + 1) for v in _DEQUE.__iter__(x)])
    if _isinstance(x, _Integral):
        v = _index(x)
    elif _isinstance(x, _Real):
        v = float(x)
    elif _isinstance(x, _Complex):
        v = complex(x)
    elif getattr(t, "__name__", "") in ("bool_", "bool"):  # numpy.bool_: bool() gives an exact bool
        v = bool(x)
    else:
        raise TypeError(
            "cannot compare a value of type "
            + _text(getattr(t, "__name__", "?"), 60)
            + " (only plain data: numbers, str, list, tuple, dict, set)"
        )
    if id(type(v)) not in _ATOMS:
        raise TypeError("cannot compare a value of type " + _text(getattr(t, "__name__", "?"), 60))
    return v


def _to_plain(x):
    return _plain(x, [1000000])


def _got(value, msg):
    r = repr(value)
    return "got " + _text(r, 120) + ((" (" + _text(msg, 60) + ")") if msg else "")


def _tg_assert_eq(actual, expected, msg=None):
    a, b = _to_plain(actual), _to_plain(expected)
    if not (a == b):
        raise AssertionError(_got(a, msg))


def _tg_assert_true(actual, msg=None):
    a = _to_plain(actual)
    if not a:
        raise AssertionError(_got(a, msg))


def _tg_assert_false(actual, msg=None):
    a = _to_plain(actual)
    if a:
        raise AssertionError(_got(a, msg))


def _json_key(k):
    t = type(k)
    if t is str:
        return k
    if t is bool:
        return "true" if k else "false"
    if t is int:
        return int.__repr__(k)
    if t is float:
        if k != k:
            return "NaN"
        return "Infinity" if k == _INF else "-Infinity" if k == -_INF else float.__repr__(k)
    if k is None:
        return "null"
    return None


def _match(a, e, rel_tol, abs_tol):
    ta, te = type(a), type(e)
    if ta is bool or te is bool:
        return ta is te and a == e
    if te is float or (ta is float and te is int):
        if ta is not int and ta is not float:
            return False
        if a != a and e != e:
            return True
        return _isclose(a, e, rel_tol=rel_tol, abs_tol=abs_tol)
    if te is list or te is tuple:
        if (ta is not list and ta is not tuple) or len(a) != len(e):
            return False
        return all(_match(x, y, rel_tol, abs_tol) for x, y in zip(a, e, strict=True))
    if te is dict:
        if ta is not dict or len(a) != len(e):
            return False
        keyed = {}
        for k, v in a.items():
            key = _json_key(k)
            if key is None or key in keyed:
                return False
            keyed[key] = v
        ekeyed = {_json_key(k): v for k, v in e.items()}
        if keyed.keys() != ekeyed.keys():
            return False
        return all(_match(keyed[k], ekeyed[k], rel_tol, abs_tol) for k in keyed)
    return ta is te and a == e


def values_match(actual, expected, rel_tol=1e-6, abs_tol=1e-9):
    """actual == expected for JSON-like data: floats within tolerance, list ~ tuple."""
    return _match(_to_plain(actual), _to_plain(expected), rel_tol, abs_tol)


def _tg_assert_match(actual, expected, msg=None):
    a = _to_plain(actual)
    if not _match(a, _to_plain(expected), 1e-6, 1e-9):
        raise AssertionError(_got(a, msg))


def _on_alarm(signum, frame):
    raise _Timeout()


def _call_with_budget(fn, seconds):
    """fn() with a time budget; returns None or an error string. Never raises."""
    try:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            try:
                fn()
                error = None
            except BaseException as e:
                error = _describe(e)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return error
    except BaseException as e:  # the alarm fired while an error was being described
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException:
            pass
        return "timeout" if type(e) is _Timeout else "error (unreportable)"


def _main():
    raw = b""
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            break
        raw += chunk
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    out = os.dup(1)
    os.dup2(null, 1)
    write = os.write
    head, _, body = raw.partition(b"\n")
    prefix = head.strip().decode("ascii") + " "
    spec = json.loads(body.decode("utf-8"))
    del raw, body

    def emit(line):
        write(out, str.encode(prefix + line + "\n", "ascii", "backslashreplace"))

    tests = []
    for source in spec["tests"]:
        try:
            tree = _Rewrite().visit(ast.parse(source, "<test>", "exec"))
            tests.append((compile(tree, "<test>", "exec"), None))
        except BaseException as e:
            tests.append((None, "invalid test: " + _describe(e)))
    with open("solution.py", encoding="utf-8", errors="replace") as f:
        solution = f.read()
    snapshot = dict(builtins.__dict__)
    builtin_names = frozenset(snapshot)
    recursion_limit = sys.getrecursionlimit()
    helpers = {
        "values_match": values_match,
        "_tg_assert_eq": _tg_assert_eq,
        "_tg_assert_true": _tg_assert_true,
        "_tg_assert_false": _tg_assert_false,
        "_tg_assert_match": _tg_assert_match,
    }
    namespace = {"__name__": "solution", "__file__": "solution.py", "__builtins__": builtins}

    def load():
        if spec["setup"]:
            exec(compile(spec["setup"], "setup.py", "exec"), namespace)
        exec(compile(solution, "solution.py", "exec"), namespace)

    error = _call_with_budget(load, spec["load_timeout"])
    if error is not None:
        emit("C " + error)
        os._exit(0)
    emit("L")
    bdict = builtins.__dict__
    for index, (code, error) in enumerate(tests):
        if code is not None:
            for name in [k for k in bdict if k not in builtin_names]:
                del bdict[name]
            bdict.update(snapshot)
            sys.setrecursionlimit(recursion_limit)

            def run(code=code):
                scope = {k: v for k, v in dict.items(namespace) if type(k) is str and k not in builtin_names}
                scope["__builtins__"] = dict(snapshot)  # test code: private builtins too
                scope.update(helpers)
                exec(code, scope)

            error = _call_with_budget(run, spec["test_timeout"])
        emit(f"T {index} {int(error is None)} {'' if error is None else error}")
    emit("D")
    os._exit(0)


if __name__ == "__main__":
    _main()
