"""Each agent CLI's JSON events read into steps (see steps.py for what a step is).

Written against the events the pinned CLIs really print (captured into
tests/fixtures/session-events/ from a session against the scripted model
server): Claude Code's `stream-json`, Codex's `exec --json`, Gemini CLI's
`stream-json` and opencode's `--format json`. Each renderer takes what it
knows and shows any other event raw, as a note: a CLI's next version may add
events, and a session may print anything that looks like one.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

import orjson

from ballet.sessionlog.steps import Draft, StepKind, StepRenderer, render_aider_history

# Tools that write files, by CLI, and the input field that names the file.
EDIT_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",  # Claude Code
    "write_file": "file_path",
    "replace": "file_path",  # Gemini CLI
    "write": "filePath",
    "edit": "filePath",
    "patch": "filePath",
    "multiedit": "filePath",  # opencode
}
SHELL_TOOLS = ("Bash", "run_shell_command", "bash", "shell")
# What names a tool call best, for a tool that is neither a shell nor an edit.
BRIEF_KEYS = ("file_path", "filePath", "path", "pattern", "url", "query", "description", "prompt")


def renderer_for(adapter: str, cwd: str = "") -> StepRenderer:
    """The adapter's renderer; a `command` runtime (or any other) prints output only.
    `cwd`: the clone, so the files a CLI names absolute are shown as the repository's."""
    kinds: dict[str, type[StepRenderer]] = {
        "claude-code": ClaudeRenderer,
        "codex": CodexRenderer,
        "gemini": GeminiRenderer,
        "opencode": OpencodeRenderer,
    }
    renderer = kinds.get(adapter, StepRenderer)()
    renderer.cwd = cwd
    return renderer


def transcript_renderer(adapter: str) -> Callable[[str, StepRenderer], object] | None:
    """How the adapter's transcript file (RuntimeAdapter.transcript) is rendered."""
    return render_aider_history if adapter == "aider" else None


class ToolRenderer(StepRenderer):
    """What the event renderers share: tool calls that wait for their results."""

    reads_events = True

    def __init__(self) -> None:
        super().__init__()
        self._tools: dict[str, Draft] = {}

    def tool(self, key: str, name: str, arguments: object, seq: int) -> Draft | None:
        args = arguments if isinstance(arguments, dict) else {}
        kind: StepKind = "tool"
        if name in SHELL_TOOLS or (name not in EDIT_TOOLS and isinstance(args.get("command"), str)):
            command = _command(args.get("command"))
            heading, body = f"$ {command}", command if "\n" in command else ""
        elif name in EDIT_TOOLS:
            kind, heading = "edit", self.relative(str(args.get(EDIT_TOOLS[name], name)))
            body = _edit_body(args)
        else:
            brief = next((str(args[k]) for k in BRIEF_KEYS if isinstance(args.get(k), str)), "")
            heading, body = f"{name} {brief}".strip(), _json(args) if args else ""
        made = self.draft(kind, heading, seq)
        if made is not None:
            made.add(body if body.endswith("\n") else body + "\n" if body else "")
            self._tools[key] = made
        return made

    def result(self, key: str, output: str, exit_code: int | None, failed: bool = False) -> None:
        made = self._tools.pop(key, None)
        if made is None:
            return
        if exit_code is not None:
            made.exit_code = exit_code
        if failed and exit_code is None:
            made.title += " (failed)"
        if output.strip():
            made.add(("\n" if made.parts else "") + output)

    def turn(self, text: str, seq: int, heading: str | None = None) -> None:
        if text.strip():
            made = self.draft("turn", heading or text, seq)
            if made is not None:
                made.add(text)

    def raw(self, event: dict[str, Any], seq: int) -> bool:
        self.note(str(event.get("type", "event")), _json(event), seq, stream="stdout")
        return True

    def relative(self, path: str) -> str:
        """A path inside the clone, as the clone's own (the CLI prints them absolute)."""
        root = self.cwd.rstrip("/") + "/"
        if self.cwd and path.startswith(root):
            return path[len(root) :]
        return path


class ClaudeRenderer(ToolRenderer):
    def event(self, event: dict[str, Any], seq: int) -> bool:
        kind = event.get("type")
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        blocks = message.get("content") if isinstance(message, dict) else None
        if kind == "system" and event.get("subtype") == "init":
            self.cwd = str(event.get("cwd") or self.cwd)
            version = event.get("claude_code_version", "")
            self.note(f"Claude Code {version}, model {event.get('model')}", "", seq, "stdout")
        elif kind == "assistant" and isinstance(blocks, list):
            for block in blocks:
                self._assistant(block if isinstance(block, dict) else {}, seq)
        elif kind == "user" and isinstance(blocks, list):
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    self._result(block)
        elif kind == "result":
            self.note(_finished(event), "", seq, "stdout")
        elif kind in ("user", "assistant", "system"):
            return True  # a prompt, an empty message, a hook's notice: nothing to show
        else:
            return self.raw(event, seq)
        return True

    def _assistant(self, block: dict[str, Any], seq: int) -> None:
        if block.get("type") == "text":
            self.turn(str(block.get("text", "")), seq)
        elif block.get("type") == "thinking":
            self.turn(str(block.get("thinking", "")), seq, heading="thinking")
        elif block.get("type") == "tool_use":
            self.tool(str(block.get("id")), str(block.get("name")), block.get("input"), seq)

    def _result(self, block: dict[str, Any]) -> None:
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        text = str(content or "")
        key = str(block.get("tool_use_id"))
        shell = key in self._tools and self._tools[key].title.startswith("$ ")
        code: int | None = None
        if block.get("is_error"):
            first, _, rest = text.partition("\n")
            if first.startswith("Exit code ") and first[10:].strip().isdigit():
                code, text = int(first[10:]), rest
        elif shell:
            code = 0  # Claude Code reports a shell command's non-zero exit as an error
        self.result(key, text, code, failed=bool(block.get("is_error")))


class CodexRenderer(ToolRenderer):
    QUIET = ("thread.started", "turn.started", "turn.completed")

    def event(self, event: dict[str, Any], seq: int) -> bool:
        kind = str(event.get("type"))
        item = event.get("item")
        if kind in self.QUIET:
            return True
        if kind.startswith("item.") and isinstance(item, dict):
            self._item(kind, item, seq)
        elif kind in ("error", "turn.failed"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else event.get("message")
            self.note(f"{kind}: {message}", "", seq, "stdout")
        else:
            return self.raw(event, seq)
        return True

    def _item(self, kind: str, item: dict[str, Any], seq: int) -> None:
        key, what = str(item.get("id")), item.get("type")
        done = kind == "item.completed"
        if what in ("agent_message", "reasoning") and done:
            self.turn(str(item.get("text", "")), seq, None if what == "agent_message" else what)
        elif what == "command_execution":
            if key not in self._tools:
                self.tool(key, "shell", {"command": _unwrap(str(item.get("command")))}, seq)
            if done:
                code = item.get("exit_code")
                output = str(item.get("aggregated_output") or "")
                self.result(key, output, code if isinstance(code, int) else None)
        elif what == "file_change" and done:
            changes = [c for c in item.get("changes") or () if isinstance(c, dict)]
            paths = ", ".join(self.relative(str(c.get("path"))) for c in changes)
            made = self.draft("edit", paths or "files", seq)
            if made is not None:
                made.add(
                    "".join(
                        f"{c.get('kind')} {self.relative(str(c.get('path')))}\n" for c in changes
                    )
                )
        elif what in ("mcp_tool_call", "web_search"):
            if key not in self._tools:
                name = (
                    f"{item.get('server')}.{item.get('tool')}" if what == "mcp_tool_call" else what
                )
                self.tool(key, name, item.get("arguments") or {"query": item.get("query")}, seq)
            if done:
                failed = item.get("status") == "failed"
                outcome = item.get("result") or item.get("error") or ""
                self.result(
                    key, outcome if isinstance(outcome, str) else _json(outcome), None, failed
                )
        elif what == "error" and done:
            self.note(f"error: {item.get('message')}", "", seq, "stdout")
        elif what == "todo_list" and done:
            items = [i for i in item.get("items") or () if isinstance(i, dict)]
            body = "".join(
                f"[{'x' if i.get('completed') else ' '}] {i.get('text')}\n" for i in items
            )
            self.note("plan", body, seq, "stdout")
        elif done and what not in ("agent_message", "reasoning", "file_change"):
            self.raw(item, seq)


class GeminiRenderer(ToolRenderer):
    def __init__(self) -> None:
        super().__init__()
        self._speaking: Draft | None = None  # the turn assistant deltas add to

    def event(self, event: dict[str, Any], seq: int) -> bool:
        kind = event.get("type")
        if kind != "message" or event.get("role") != "assistant":
            self._speaking = None
        if kind == "init":
            self.note(f"Gemini CLI, model {event.get('model')}", "", seq, "stdout")
        elif kind == "message":
            if event.get("role") == "assistant":
                self._say(str(event.get("content", "")), seq)
        elif kind == "tool_use":
            name = str(event.get("tool_name"))
            self.tool(str(event.get("tool_id")), name, event.get("parameters"), seq)
        elif kind == "tool_result":
            error = event.get("error")
            output = str(event.get("output") or "")
            if isinstance(error, dict):
                output += ("\n" if output else "") + str(error.get("message", ""))
            failed = event.get("status") not in ("success", None)
            self.result(str(event.get("tool_id")), output, None, failed)
        elif kind == "result":
            stats = event.get("stats") if isinstance(event.get("stats"), dict) else {}
            calls = stats.get("tool_calls") if isinstance(stats, dict) else None
            self.note(f"finished: {event.get('status')}, {calls} tool calls", "", seq, "stdout")
        elif kind == "error":
            self.note(
                f"{event.get('severity', 'error')}: {event.get('message')}", "", seq, "stdout"
            )
        else:
            return self.raw(event, seq)
        return True

    def _say(self, text: str, seq: int) -> None:
        if self._speaking is None:
            self._speaking = self.draft("turn", text, seq)
            if self._speaking is None:
                return
        self._speaking.add(text)
        if not self._speaking.title.strip():
            self._speaking.title = text


class OpencodeRenderer(ToolRenderer):
    QUIET = ("step_start", "step_finish")

    def event(self, event: dict[str, Any], seq: int) -> bool:
        kind = event.get("type")
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        assert isinstance(part, dict)
        if kind in self.QUIET:
            return True
        if kind in ("text", "reasoning"):
            self.turn(str(part.get("text", "")), seq, None if kind == "text" else "reasoning")
        elif kind == "tool_use":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            assert isinstance(state, dict)
            key, name = str(part.get("callID") or part.get("id")), str(part.get("tool"))
            self.tool(key, name, state.get("input"), seq)
            meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
            assert isinstance(meta, dict)
            code = meta.get("exit")
            output = str(state.get("output") or state.get("error") or "")
            failed = state.get("status") == "error"
            self.result(key, output, code if isinstance(code, int) else None, failed)
        elif kind == "error":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            assert isinstance(error, dict)
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            message = data.get("message") if isinstance(data, dict) else None
            self.note(f"error: {message or error.get('name')}", "", seq, "stdout")
        else:
            return self.raw(event, seq)
        return True


def _command(value: object) -> str:
    if isinstance(value, list):
        return _unwrap(shlex.join(str(v) for v in value))
    return str(value or "")


def _unwrap(command: str) -> str:
    """`/bin/bash -lc '<script>'` (how Codex runs a command) as its script."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0].endswith(("bash", "sh", "zsh")) and words[1] in ("-lc", "-c"):
        return words[2]
    return command


def _edit_body(args: dict[str, Any]) -> str:
    for old_key, new_key in (("old_string", "new_string"), ("oldString", "newString")):
        if isinstance(args.get(old_key), str):
            old = "".join(f"- {line}\n" for line in str(args[old_key]).splitlines())
            return old + "".join(f"+ {line}\n" for line in str(args.get(new_key, "")).splitlines())
    content = args.get("content")
    return content if isinstance(content, str) else ""


def _finished(event: dict[str, Any]) -> str:
    cost = event.get("total_cost_usd")
    spent = f", ${cost:.4f}" if isinstance(cost, int | float) else ""
    return f"finished: {event.get('subtype')} after {event.get('num_turns')} turns{spent}"


def _json(value: object) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(value)
