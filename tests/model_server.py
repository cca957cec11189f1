"""A scripted model server on loopback that the real agent CLIs talk to.

It speaks the four wire protocols the CLIs use — Anthropic Messages (SSE),
OpenAI Responses (SSE; codex), OpenAI Chat Completions (aider, opencode) and
Gemini generateContent/streamGenerateContent (gemini-cli) — and plays a model
that does one ticket's work in one tool call:

- a request that offers a shell tool and carries no tool result yet gets a call
  of that tool with `script.command` (write a file, `git commit`, write the
  report where Ballet's prompt says);
- a request that carries a tool result gets the final text;
- any other request (a CLI's title, topic or next-speaker call, which offer no
  tools) gets a short text, or a JSON object when the request asks for one;
- aider has no shell tool: its request gets `script.aider_reply`, a reply in
  aider's whole-file edit format that ends with the report as a JSON block.

Every response carries a distinct, known usage, recorded in `served`, so a
test can assert that Ballet metered exactly what the CLI was served.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

REPORT_PATH = re.compile(r"Write this JSON to `([^`]+)`")
SHELL_TOOLS = ("Bash", "bash", "run_shell_command", "shell", "shell_command", "exec_command")


@dataclass(frozen=True)
class Served:
    api: str  # anthropic, responses, chat, gemini
    kind: str  # tool_call, final, side
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0  # part of input_tokens (OpenAI, Gemini) / extra (Anthropic)


@dataclass
class ModelServer:
    file_name: str = "greeting.txt"
    file_text: str = "hello from the model"
    summary: str = "greeted"
    claimed_usage: dict[str, Any] | None = None  # a `usage` the agent's report claims
    before_command: str = ""  # shell run first in the tool call, e.g. `env > seen; `
    served: list[Served] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- the script -----------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        report: dict[str, Any] = {"outcome": "done", "summary": self.summary}
        if self.claimed_usage is not None:
            report["usage"] = self.claimed_usage
        return report

    def command(self, prompt: str) -> str:
        found = REPORT_PATH.search(prompt)
        target = shlex.quote(found.group(1)) if found else '"$BALLET_REPORT"'
        return (
            f"{self.before_command}printf '%s\\n' {shlex.quote(self.file_text)} > {self.file_name}"
            f" && git add {self.file_name} && git commit -q -m 'Add {self.file_name}'"
            f" && printf '%s' {shlex.quote(json.dumps(self.report()))} > {target}"
        )

    def aider_reply(self, system: str) -> str:
        """One reply in aider's edit format (SEARCH/REPLACE or whole file), then the
        report as the last JSON line, as Ballet's prompt asks of aider."""
        if "SEARCH/REPLACE" in system:
            edit = (
                f"{self.file_name}\n```\n<<<<<<< SEARCH\n=======\n{self.file_text}\n"
                ">>>>>>> REPLACE\n```\n"
            )
        else:
            edit = f"{self.file_name}\n```\n{self.file_text}\n```\n"
        return f"I add the file.\n\n{edit}\n{json.dumps(self.report())}\n"

    def usage(self, api: str, kind: str) -> Served:
        """The next call's usage: distinct per call, so a missed call changes the sum."""
        with self._lock:
            n = len(self.served) + 1
            served = Served(api, kind, 1000 * n + 17, 100 * n + 3, 10 * n)
            self.served.append(served)
            return served

    def total(self) -> tuple[int, int]:
        """Tokens served: input (fresh plus cached) and output."""
        return (
            sum(s.input_tokens for s in self.served),
            sum(s.output_tokens for s in self.served),
        )

    def record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers})

    # -- the app --------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/{version}/models/{call:path}", self._gemini, methods=["POST"]),
            ]
        )

    async def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(await request.body() or b"{}")
        self.record(request.url.path, body, dict(request.headers))
        return body

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": []})

    async def _count_tokens(self, request: Request) -> Response:
        await self._body(request)
        return JSONResponse({"input_tokens": 10})

    # Anthropic Messages ---------------------------------------------------------------

    async def _anthropic(self, request: Request) -> Response:
        body = await self._body(request)
        tools = {t.get("name") for t in body.get("tools") or []}
        messages = body.get("messages") or []
        has_result = any(
            isinstance(block, dict) and block.get("type") == "tool_result"
            for m in messages
            if isinstance(m.get("content"), list)
            for block in m["content"]
        )
        if "Bash" in tools and not has_result:
            kind = "tool_call"
            blocks: list[dict[str, Any]] = [
                {
                    "type": "tool_use",
                    "id": "toolu_ballet_1",
                    "name": "Bash",
                    "input": {
                        "command": self.command(_text_of(messages)),
                        "description": "Commit and report",
                    },
                }
            ]
            stop = "tool_use"
        else:
            kind = "final" if tools else "side"
            blocks = [{"type": "text", "text": "Done." if tools else "Greeting work"}]
            stop = "end_turn"
        served = self.usage("anthropic", kind)
        usage = {
            "input_tokens": served.input_tokens - served.cached_tokens,
            "cache_read_input_tokens": served.cached_tokens,
            "cache_creation_input_tokens": 0,
            "output_tokens": served.output_tokens,
        }
        message = {
            "id": f"msg_{len(self.served)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-sonnet-4-5"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(message)

        def events() -> Iterator[tuple[str, dict[str, Any]]]:
            start = {**message, "content": [], "stop_reason": None}
            start["usage"] = {**usage, "output_tokens": 1}
            yield "message_start", {"type": "message_start", "message": start}
            for index, block in enumerate(blocks):
                if block["type"] == "text":
                    yield (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "text", "text": ""},
                        },
                    )
                    delta = {"type": "text_delta", "text": block["text"]}
                else:
                    yield (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {**block, "input": {}},
                        },
                    )
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": delta,
                    },
                )
                yield "content_block_stop", {"type": "content_block_stop", "index": index}
            yield (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": usage,
                },
            )
            yield "message_stop", {"type": "message_stop"}

        return _sse((f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events()))

    # OpenAI Responses (codex) ---------------------------------------------------------

    async def _responses(self, request: Request) -> Response:
        body = await self._body(request)
        tools = {_tool_name(t): t for t in body.get("tools") or []}
        items = body.get("input") or []
        has_result = any(
            isinstance(item, dict) and str(item.get("type", "")).endswith("_output")
            for item in items
        )
        shell = next((name for name in SHELL_TOOLS if name in tools), None)
        if shell and not has_result:
            kind = "tool_call"
            command = self.command(_text_of(items))
            arguments: dict[str, Any]
            if shell == "shell":
                arguments = {"command": ["bash", "-lc", command]}
            elif shell == "exec_command":
                arguments = {"cmd": command}
            else:
                arguments = {"command": command}
            output: dict[str, Any] = {
                "type": "function_call",
                "id": "fc_ballet_1",
                "call_id": "call_ballet_1",
                "name": shell,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        else:
            kind = "final" if tools else "side"
            output = {
                "type": "message",
                "id": "msg_ballet",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            }
        served = self.usage("responses", kind)
        response = {
            "id": f"resp_{len(self.served)}",
            "object": "response",
            "status": "completed",
            "model": body.get("model"),
            "output": [output],
            "usage": {
                "input_tokens": served.input_tokens,
                "input_tokens_details": {"cached_tokens": served.cached_tokens},
                "output_tokens": served.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": served.input_tokens + served.output_tokens,
            },
        }
        if not body.get("stream"):
            return JSONResponse(response)
        created = {**response, "status": "in_progress", "output": [], "usage": None}
        events = [
            ("response.created", {"type": "response.created", "response": created}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": output},
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": output},
            ),
            ("response.completed", {"type": "response.completed", "response": response}),
        ]
        return _sse(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)

    # OpenAI Chat Completions (aider, opencode) ----------------------------------------

    async def _chat(self, request: Request) -> Response:
        body = await self._body(request)
        tools = {_tool_name(t): t for t in body.get("tools") or []}
        messages = body.get("messages") or []
        has_result = any(m.get("role") == "tool" for m in messages)
        shell = next((name for name in SHELL_TOOLS if name in tools), None)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if shell and not has_result:
            kind = "tool_call"
            arguments = {"command": self.command(_text_of(messages)), "description": "Commit"}
            message["tool_calls"] = [
                {
                    "id": "call_ballet_1",
                    "type": "function",
                    "function": {"name": shell, "arguments": json.dumps(arguments)},
                }
            ]
            finish = "tool_calls"
        elif not tools and "expert software developer" in _text_of(messages[:1]):
            kind = "aider"  # aider's one turn: the edit and the report, in its reply
            message["content"] = self.aider_reply(_text_of(messages[:1]))
            finish = "stop"
        elif not tools and "Git commit messages" in _text_of(messages[:1]):
            kind = "side"  # aider's commit-message call
            message["content"] = f"feat: add {self.file_name}"
            finish = "stop"
        else:
            kind = "final" if tools else "side"
            message["content"] = "Done." if tools else "Greeting work"
            finish = "stop"
        served = self.usage("chat", kind)
        usage = {
            "prompt_tokens": served.input_tokens,
            "completion_tokens": served.output_tokens,
            "total_tokens": served.input_tokens + served.output_tokens,
            "prompt_tokens_details": {"cached_tokens": served.cached_tokens},
        }
        base = {
            "id": f"chatcmpl-{len(self.served)}",
            "created": 1_700_000_000,
            "model": body.get("model"),
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return JSONResponse(
                {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        delta: dict[str, Any] = {"role": "assistant"}
        if message.get("content"):
            delta["content"] = message["content"]
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": usage},
        ]
        lines = [
            f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', **c})}\n\n"
            for c in chunks
        ]
        return _sse([*lines, "data: [DONE]\n\n"])

    # Gemini ---------------------------------------------------------------------------

    async def _gemini(self, request: Request) -> Response:
        call = request.path_params["call"]
        body = await self._body(request)
        if call.endswith(":countTokens"):
            return JSONResponse({"totalTokens": 10})
        tools = {
            declaration.get("name")
            for tool in body.get("tools") or []
            for declaration in tool.get("functionDeclarations") or []
        }
        contents = body.get("contents") or []
        has_result = any(
            "functionResponse" in part for c in contents for part in c.get("parts") or []
        )
        config = body.get("generationConfig") or {}
        if "run_shell_command" in tools and not has_result:
            kind = "tool_call"
            command = self.command(_text_of(contents))
            part: dict[str, Any] = {
                "functionCall": {
                    "name": "run_shell_command",
                    "args": {"command": command, "description": "Commit and report"},
                }
            }
        elif tools:
            kind, part = "final", {"text": "Done."}
        else:
            kind = "side"
            wants_json = config.get("responseMimeType") == "application/json"
            # Gemini's side calls ask for JSON (next speaker, model routing, loop check).
            side = {
                "reasoning": "The work is done.",
                "next_speaker": "user",
                "model_choice": "flash",
                "is_stuck": False,
                "unproductive_state_analysis": "",
                "unproductive_state_confidence": 0,
            }
            part = {"text": json.dumps(side) if wants_json else "Greeting work"}
        served = self.usage("gemini", kind)
        response = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [part]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": served.input_tokens,
                "candidatesTokenCount": served.output_tokens,
                "cachedContentTokenCount": served.cached_tokens,
                "totalTokenCount": served.input_tokens + served.output_tokens,
            },
            "modelVersion": call.split(":")[0],
        }
        if ":streamGenerateContent" in call:
            return _sse([f"data: {json.dumps(response)}\n\n"])
        return JSONResponse(response)


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    if isinstance(function, dict):
        return str(function.get("name"))
    return str(tool.get("name") or tool.get("type"))


def _text_of(value: object) -> str:
    """Every string in a request's messages, joined: where a prompt's report path is."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(_text_of(v) for v in value.values())
    return ""


def _sse(chunks: Any) -> StreamingResponse:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk.encode()
            await asyncio.sleep(0)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )


def serve(server: ModelServer) -> Callable[[], None]:
    """Start `server` on 127.0.0.1:<ephemeral> in a thread; returns its stop function."""
    # Named TCP: asyncio turns Nagle off only on sockets that say so (sandbox/server.py).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    host, port = sock.getsockname()
    server.url = f"http://{host}:{port}"
    config = uvicorn.Config(server.app(), log_level="warning", ws="none")
    running = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(running.serve(sockets=[sock])), daemon=True
    )
    thread.start()
    while not running.started:
        threading.Event().wait(0.01)

    def stop() -> None:
        running.should_exit = True
        thread.join(timeout=10)
        sock.close()

    return stop


@contextmanager
def running_model_server() -> Iterator[ModelServer]:
    """A scripted model server on 127.0.0.1:<ephemeral> for the block."""
    server = ModelServer()
    stop = serve(server)
    try:
        yield server
    finally:
        stop()
