"""kernelevo/verify/static_access.py: routes around the import allowlist, each refused with its line,
and the names real kernels bind (an `input` argument, a `vars` buffer) left alone."""

import pytest
from test_verify_static import KERNEL, MODEL

from kernelevo.verify.static import check_source


@pytest.mark.parametrize(
    "snippet,needle",
    [
        ("f = eval\n", "line 6: eval is not allowed as a value either: it runs code from a string"),
        ("g = [getattr][0]\n", "line 6: getattr is not allowed as a value either"),
        ("def h(x=exec):\n    return x\n", "line 6: exec is not allowed as a value either"),
        ("x = [eval for eval in [1]]\ny = eval\n", "line 7: eval is not allowed"),
        (
            "class A:\n    eval = 1\n    def m(self):\n        return eval\n",
            "line 9: eval is not allowed",
        ),
        ("if False:\n    eval = 1\nf = eval\n", "line 8: eval is not allowed"),
        ("def g():\n    global eval\n    return eval\n", "line 8: eval is not allowed"),
        ("b = __builtins__\n", "line 6: __builtins__ is off limits"),
        (
            "g = (i for i in [0])\nf = g.gi_frame.f_back.f_globals\n",
            "line 7: .f_back is not allowed: frames and code objects reach the harness",
        ),
        (
            "import operator\nx = operator.attrgetter('a')\n",
            "line 7: operator.attrgetter is not allowed",
        ),
        (
            "from operator import methodcaller as mc\nx = mc('a')\n",
            "operator.methodcaller is not allowed",
        ),
        (
            "from functools import singledispatch\n@singledispatch\ndef f(x):\n    pass\n",
            "line 7: functools.singledispatch is not allowed: it evaluates annotation strings",
        ),
        ("import typing\nh = typing.get_type_hints\n", "typing.get_type_hints is not allowed"),
        (
            "x = torch.load('/tmp/x', weights_only=False)\n",
            "line 6: torch.load is not allowed: it unpickles",
        ),
        ("m = torch.hub.load('.', 'm', source='local')\n", "line 6: torch.hub is not allowed"),
        ("g = torch.fx.Graph()\n", "line 6: torch.fx is not allowed: it generates Python source"),
        (
            "r = torch.utils.collect_env.run('id')\n",
            "torch.utils.collect_env is not allowed: it runs shell",
        ),
        ("t = torch.utils.benchmark.Timer('x')\n", "torch.utils.benchmark is not allowed"),
        (
            "import typing\nx = typing.sys\n",
            "line 7: typing.sys is not allowed: it reaches the sys module",
        ),
        ("import warnings\nx = warnings.sys.modules\n", "warnings.sys is not allowed"),
    ],
)
def test_routes_around_the_allowlist_are_refused_with_their_line(snippet, needle):
    r = check_source(KERNEL + snippet + MODEL)
    assert not r.ok and any(needle in p for p in r.problems), r.problems


@pytest.mark.parametrize(
    "snippet",
    [
        "def forward(input):\n    return input\n",  # a builtin's name bound as an argument
        "def f():\n    vars = torch.empty(4)\n    return vars\n",  # a local (a published GroupNorm kernel)
        "if __name__ == '__main__':\n    pass\n",
        "def f(x):\n    return [input for input in x]\n",
        "y = tl.load\n",  # triton.language.load is not torch.load
    ],
)
def test_names_real_kernels_bind_pass(snippet):
    r = check_source(KERNEL + snippet + MODEL)
    assert r.ok, r.problems


def test_a_direct_call_is_reported_once():
    r = check_source(KERNEL + "x = eval('1')\n" + MODEL)
    assert len([p for p in r.problems if "eval" in p]) == 1, r.problems
