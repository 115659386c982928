"""The command line builds only the parser of the command typed (a shell's `kernelevo verify`
imports one command module, not the search's, the server's and the rest), and every command's
for help, a typo or a command a module of another name registers."""

import json

from support import fresh_python

CODE = """
import json, sys
from kernelevo.cli import build_parser
parser = build_parser({command!r})
commands = next(a for a in parser._actions if a.dest == "command").choices
print(json.dumps({{"commands": sorted(commands),
                  "modules": sorted(m for m in sys.modules if m.startswith("kernelevo.cli."))}}))
"""


def _built(command):
    done = fresh_python(CODE.format(command=command), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_command_named_by_its_module_builds_only_its_own_parser():
    got = _built("verify")
    assert got["commands"] == ["verify"]
    assert "kernelevo.cli.optimize" not in got["modules"]
    assert "kernelevo.cli.serve" not in got["modules"]


def test_help_a_typo_and_a_command_of_another_module_get_every_command():
    every = _built(None)["commands"]
    assert {"verify", "optimize", "serve", "show", "runs"} <= set(every)
    assert _built("verfy")["commands"] == every
    assert _built("show")["commands"] == every  # registered by the `runs` module
    assert _built("--version")["commands"] == every
