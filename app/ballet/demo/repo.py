"""What the demo works on: a small repository, its `.ballet.yml`, and an issue.

The same pieces serve the end-to-end tests, which vary the `.ballet.yml` and
script other outcomes into the issue body (see `ballet.demo.agent`).
"""

from __future__ import annotations

from importlib import resources

OWNER = "acme"
NAME = "calculator"
AUTHOR = "alice"  # writes the issue and labels it; a collaborator with write

CALC = '''"""A tiny calculator."""


def add(a: int, b: int) -> int:
    return a + b
'''

TEST_CALC = """import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self) -> None:
        self.assertEqual(add(2, 3), 5)
"""

# The scripted agent as every stage's runtime: the head of the demo's `.ballet.yml`
# and of the tests' own pipelines.
SCRIPT_RUNTIME_YML = """\
trigger_label: ballet
runtimes:
  script: {adapter: command, command: [python3, .ballet/agent.py]}
default_runtime: script
"""

BALLET_YML = (
    SCRIPT_RUNTIME_YML
    + """\
pipelines:
  default:
    iteration_limit: 3
    stages:
      - {id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,
         next: {done: review}}
      - {id: review, kind: agent, skills: [reviewer], timeout_minutes: 5,
         next: {approve: verify, changes_requested: implement}}
      - {id: verify, kind: agent, skills: [verifier], timeout_minutes: 5,
         next: {pass: integrate, fail: implement}}
      - {id: integrate, kind: platform, action: merge, next: {merged: $done, returned: implement}}
"""
)

# The demo's pipeline with `policy: {merge: auto}`: Ballet lands each ticket with no
# person's approval. For load runs and the benches, which measure Ballet, not how
# fast a person approves; the demo itself shows the person's step (the default).
LANDS_ALONE_YML = "policy: {merge: auto}\n" + BALLET_YML

ISSUE_TITLE = "Add a multiply function"

ISSUE_BODY = """`calc.py` can add but not multiply. Add `multiply(a, b)`.

Acceptance: `multiply(6, 7) == 42`, with a test.

```python
def multiply(a: int, b: int) -> int:
    return a * b
```

```python
import unittest

from calc import multiply


class MultiplyTest(unittest.TestCase):
    def test_multiply(self) -> None:
        self.assertEqual(multiply(6, 7), 42)
```
"""

# The repository's CI: its tests, and red while a `.ci-red` file is present,
# so a scenario can have an agent turn CI red (`demo:break-ci=yes@1`).
CI_SCRIPT = """\
import os
import subprocess
import sys

if os.path.exists(".ci-red"):
    sys.exit("CI is red: .ci-red is present")
sys.exit(subprocess.call([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."]))
"""

CI_COMMAND = ["python3", "ci.py"]


def agent_source() -> str:
    return resources.files("ballet.demo").joinpath("agent.py").read_text()


def repo_files(ballet_yml: str = BALLET_YML) -> dict[str, str]:
    return {
        "README.md": "# calculator\n\nA demo repository for Ballet.\n",
        "calc.py": CALC,
        "ci.py": CI_SCRIPT,
        "tests/__init__.py": "",
        "tests/test_calc.py": TEST_CALC,
        ".ballet.yml": ballet_yml,
        ".ballet/agent.py": agent_source(),
    }


def new_repo_request(
    name: str = NAME, *, ballet_yml: str = BALLET_YML, collaborators: dict[str, str] | None = None
) -> dict[str, object]:
    """The body of the sandbox's `POST /_sandbox/repos` for a demo repository."""
    return {
        "owner": OWNER,
        "name": name,
        "files": repo_files(ballet_yml),
        "collaborators": collaborators or {AUTHOR: "write", "bob": "read", "carol": "admin"},
        "ci": {"command": CI_COMMAND},
    }
