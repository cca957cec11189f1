"""Keep a version manager's shim out of the `python3` a bench's processes start.

On a machine with pyenv (this one), `python3` on PATH is a shell shim that costs
~170 ms of CPU a start; the demo's agents and the sandbox's CI start it several
times a ticket. That is the machine's, not Ballet's: a bench that measures
Ballet puts the interpreter's own directory first on PATH, which every process
it starts inherits.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def put_first_on_path() -> None:
    real = Path(os.path.realpath(sys.executable)).parent
    os.environ["PATH"] = f"{real}{os.pathsep}{os.environ['PATH']}"
