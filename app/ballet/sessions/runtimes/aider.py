"""`aider`: `aider --message-file` in the clone, one message, then exit.

Aider edits files only inside the repository and, under `--yes-always`, runs no
shell commands, so it can neither write BALLET_REPORT nor run `git commit`:
- it commits its own edits (auto-commits, aider's default);
- its prompt asks for the report as the last JSON line of its reply, which
  Ballet takes from the chat history (kept in the session directory, outside
  the clone) and writes to BALLET_REPORT once aider has exited.

Usage: aider's analytics log leaves out its commit-message call, so Ballet
meters every litellm call itself: a `sitecustomize` module on the session's
PYTHONPATH registers a litellm success callback that appends each call's tokens
and cost to a file (`aider-usage.jsonl`); the meter sums it. The same module
seeds aider's model-price cache from litellm's bundled copy, so aider does not
fetch it from GitHub. A PYTHONPATH the runtime declares follows Ballet's
directory, and a `sitecustomize` of its own, hidden behind Ballet's, is run by it.

No URL scraping (`--no-detect-urls`, which would also offer to install
Playwright), no update checks, no shell-command suggestions. litellm is pointed
at Ballet's model gateway for each provider (OPENAI_API_BASE, ANTHROPIC_API_BASE,
GEMINI_API_BASE) when the runtime holds provider keys, else at `base_url` for all
three; the model's provider picks its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ballet.core.report import Usage
from ballet.sessions.runtimes.base import (
    Invocation,
    RuntimeAdapter,
    UsageMeter,
    flag,
    json_object,
    number,
    read_session_file,
    tokens,
    write_session_file,
)

USAGE_LOG = "aider-usage.jsonl"
API_BASES = {
    "OPENAI_API_BASE": "openai",
    "ANTHROPIC_API_BASE": "anthropic",
    "GEMINI_API_BASE": "gemini",
}
CHAT_HISTORY = "aider-chat.md"
SITE_DIR = "aider-site"

# Runs inside aider's Python (its own virtualenv), so only the standard library
# and litellm; any failure leaves aider alone (the meter then finds no usage).
SITECUSTOMIZE = '''\
"""Ballet: meters every model call aider makes (see ballet.sessions.runtimes.aider)."""
import json, os, shutil, threading

def _ballet_install():
    log = os.environ.get("BALLET_AIDER_USAGE")
    if not log:
        return
    try:
        import litellm
    except Exception:
        return
    lock = threading.Lock()

    def record(kwargs, response, start_time, end_time):
        usage = getattr(response, "usage", None)
        if usage is None and isinstance(response, dict):
            usage = response.get("usage")
        get = (lambda k: usage.get(k)) if isinstance(usage, dict) else (
            lambda k: getattr(usage, k, None))
        line = {
            "model": kwargs.get("model"),
            "prompt_tokens": get("prompt_tokens") or 0,
            "completion_tokens": get("completion_tokens") or 0,
            "cost": kwargs.get("response_cost") or 0,
        }
        with lock, open(log, "a") as out:
            out.write(json.dumps(line) + "\\n")

    litellm.success_callback.append(record)
    # aider fetches litellm's price list from GitHub unless its cache is fresh.
    cache = os.path.join(os.path.expanduser("~"), ".aider", "caches")
    bundled = os.path.join(os.path.dirname(litellm.__file__),
                           "model_prices_and_context_window_backup.json")
    target = os.path.join(cache, "model_prices_and_context_window.json")
    if os.path.exists(bundled) and not os.path.exists(target):
        os.makedirs(cache, exist_ok=True)
        shutil.copyfile(bundled, target)

def _ballet_chain():
    # The runtime's own PYTHONPATH follows this directory: the sitecustomize it may
    # hold is hidden behind this one, so it is run from here, as Python would have.
    import importlib.machinery, importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.abspath(p) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

try:
    _ballet_install()
except Exception:
    pass
try:
    _ballet_chain()
except Exception as error:  # as Python reports an error in a sitecustomize
    import sys
    print(f"Error in sitecustomize: {error!r}", file=sys.stderr)
'''


class AiderAdapter(RuntimeAdapter):
    name = "aider"
    executable = "aider"
    git_excludes = (".aider*",)
    transcript = CHAT_HISTORY
    report_in_reply = True

    def arguments(self, invocation: Invocation) -> list[str]:
        files = invocation.files_dir
        return [
            "--message-file",
            str(invocation.prompt_path),
            "--yes-always",
            "--no-pretty",
            "--no-stream",
            "--no-fancy-input",
            "--no-analytics",
            "--no-check-update",
            "--no-show-release-notes",
            "--no-show-model-warnings",
            "--no-detect-urls",
            "--no-suggest-shell-commands",
            "--no-gitignore",
            "--chat-history-file",
            str(files / CHAT_HISTORY),
            "--input-history-file",
            str(files / "aider-input.txt"),
            *flag("--model", invocation.model),
            *flag("--reasoning-effort", invocation.effort),
        ]

    def environment(self, invocation: Invocation) -> dict[str, str]:
        # Ballet's meter first on the search path, then the runtime's own entries.
        search = [str(invocation.files_dir / SITE_DIR)]
        declared = invocation.declared.get("PYTHONPATH")
        if declared:
            search.append(declared)
        env = {
            **super().environment(invocation),  # LITELLM_LOCAL_MODEL_COST_MAP among them
            "PYTHONPATH": os.pathsep.join(search),
            "BALLET_AIDER_USAGE": str(invocation.files_dir / USAGE_LOG),
        }
        for name, provider in API_BASES.items():
            endpoint = invocation.endpoint(provider)
            if endpoint:
                env[name] = endpoint
        return env

    def prepare(self, invocation: Invocation) -> None:
        super().prepare(invocation)
        site = invocation.files_dir / SITE_DIR
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)

    def after_exit(self, invocation: Invocation) -> None:
        # A report already there (or anything else at its path) is left as it is.
        report = report_from_reply(invocation.files_dir / CHAT_HISTORY)
        if report is not None:
            write_session_file(invocation.report_path, report)

    def meter(self, invocation: Invocation) -> UsageMeter:
        return AiderMeter(invocation)


def report_from_reply(chat_history: Path) -> str | None:
    """The last line of aider's replies that is a JSON object with an `outcome`.

    In the chat history, the prompt's lines start with `#### ` and aider's own
    notes with `> `; everything else is what the model replied.
    """
    text = read_session_file(chat_history)
    if text is None:
        return None
    for line in reversed(text.splitlines()):
        text = line.strip()
        if text.startswith(("#", ">")) or not text.startswith("{"):
            continue
        value = json_object(text)
        if value is not None and "outcome" in value:
            return json.dumps(value)
    return None


class AiderMeter(UsageMeter):
    def __init__(self, invocation: Invocation) -> None:
        self._log = invocation.files_dir / USAGE_LOG

    def usage(self) -> Usage | None:
        text = read_session_file(self._log)
        if text is None:
            return None
        calls = [call for call in map(json_object, text.splitlines()) if call]
        if not calls:
            return None
        return Usage(
            input_tokens=sum(tokens(c.get("prompt_tokens")) for c in calls),
            output_tokens=sum(tokens(c.get("completion_tokens")) for c in calls),
            cost_usd=sum(number(c.get("cost")) for c in calls),
        )
