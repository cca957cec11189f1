"""What one answer of a model provider used, read from the answer itself.

The model gateway feeds each answer's bytes to a `UsageReader` as it relays
them (decoded: the gateway asks providers for no content encoding), and at the
end the reader says the answer's tokens, as the provider counted them:

- Anthropic Messages: `usage` {input_tokens, cache_read_input_tokens,
  cache_creation_input_tokens (of which `cache_creation`'s
  ephemeral_1h_input_tokens kept an hour), output_tokens}; streamed, `message_start`'s
  `message.usage`, then each `message_delta`'s `usage` (cumulative counts; the
  newer API also restates input and cache counts there).
- OpenAI Chat Completions: `usage` {prompt_tokens (cached included),
  prompt_tokens_details.cached_tokens, completion_tokens (reasoning
  included)}; streamed, in the last chunk before `[DONE]` when the request set
  `stream_options.include_usage` (a stream without it says no usage: the
  gateway sets it, `usage_asked`).
- OpenAI Responses: `usage` {input_tokens (cached included),
  input_tokens_details.cached_tokens, output_tokens (reasoning included)};
  streamed, `response.usage` of `response.completed` (or `.incomplete`,
  `.failed`).
- Gemini generateContent: `usageMetadata` {promptTokenCount (cached
  included), cachedContentTokenCount, toolUsePromptTokenCount,
  candidatesTokenCount, thoughtsTokenCount}; streamGenerateContent repeats it,
  cumulative, in each chunk (SSE with `alt=sse`, else one JSON array): the last
  one counts.

`MeteredUsage` holds fresh input apart from cache reads and writes, and output
with reasoning included, whatever the API's own split.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ballet.core.json_picker import ANY_ITEM, JsonPicker, Path
from ballet.core.sse_events import Find, Piece, SseEvents, find_needle

Api = Literal["anthropic_messages", "openai_chat", "openai_responses", "gemini"]

_GEMINI_CALL = re.compile(r"/(?:tuned)?[mM]odels/([^/:]+):(?:stream[gG]|g)enerateContent$")
MODEL_BOUND = 200  # a model name longer than this is not one


def api_of(provider: str, method: str, path: str) -> Api | None:
    """The metered API a request is a call of (None: nothing this module meters).

    `path` is below the provider's prefix, as the CLI sent it: `/v1/messages`,
    `/v1/responses` or `/responses` (a base URL ending in `/v1`),
    `/chat/completions`, `/v1beta/models/gemini-2.5-pro:streamGenerateContent`."""
    if method.upper() != "POST":
        return None
    path = path.partition("?")[0].rstrip("/")
    if provider == "anthropic" and path.endswith("/messages"):
        return "anthropic_messages"
    if provider == "openai":
        if path.endswith("/chat/completions"):
            return "openai_chat"
        if path.endswith(("/responses", "/responses/compact")):
            return "openai_responses"
    if provider == "gemini" and _GEMINI_CALL.search(path):
        return "gemini"
    return None


def spends_nothing(method: str, path: str) -> bool:
    """A request no provider charges for: a read (`GET`: a list of models, a stored
    answer) or a token count. The gateway forwards only these and metered calls
    (`api_of`): any other request could spend what no cap would see."""
    path = path.partition("?")[0].rstrip("/")
    if method.upper() in ("GET", "HEAD"):
        return True
    return method.upper() == "POST" and path.endswith(("/count_tokens", ":countTokens"))


def gemini_model_of(path: str) -> str | None:
    """The model a Gemini call names in its path (its body names none)."""
    found = _GEMINI_CALL.search(path.partition("?")[0].rstrip("/"))
    return found.group(1) if found else None


def usage_asked(api: Api, body: bytes) -> bytes | None:
    """The request body to forward so that its answer says its usage, or None when the
    body already does (or need not).

    A streamed Chat Completions answer carries usage only when the request set
    `stream_options.include_usage`; without it the meter would see no usage and
    no cap would hold. The body is parsed, not searched: a prompt may spell
    `include_usage` anywhere. A body that is not a JSON object is left as it is
    (the provider refuses it, and an error spends nothing)."""
    if api != "openai_chat":
        return None
    try:
        request = json.loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("stream") is not True:
        return None
    options = request.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        return None
    options = options if isinstance(options, dict) else {}
    request["stream_options"] = {**options, "include_usage": True}
    return json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()


class MeteredUsage(BaseModel):
    """One answer's tokens, as the provider counted them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None  # the answer's, else the request's
    input_tokens: int = Field(default=0, ge=0)  # fresh: not read from a cache, nor written to one
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    # Of the cache writes, those kept an hour (Anthropic's `cache_creation`), priced
    # higher than the 5-minute ones.
    cache_write_1h_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)  # reasoning (thoughts) included


# Where each API's answer says its usage and model: in a JSON body, and in the
# data of a streamed event (both kinds are looked for in either).
_PATHS: dict[Api, tuple[Path, ...]] = {
    "anthropic_messages": (("usage",), ("model",), ("message", "usage"), ("message", "model")),
    "openai_chat": (("usage",), ("model",)),
    "openai_responses": (("usage",), ("model",), ("response", "usage"), ("response", "model")),
    "gemini": (
        ("usageMetadata",),
        ("modelVersion",),
        (ANY_ITEM, "usageMetadata"),
        (ANY_ITEM, "modelVersion"),
    ),
}


class UsageReader:
    """Reads one answer as it passes; `result()` at its end.

    `feed` never raises and keeps bounded memory whatever the bytes; an answer
    that is not what its API sends (or an error) gives no usage: `result()` is
    None, and `unreadable` says when reading it failed outright."""

    def __init__(
        self,
        api: Api,
        content_type: str,
        request_model: str | None = None,
        find: Find = find_needle,  # a stream's search for usage (sse_events.Find)
    ) -> None:
        self.api = api
        self.request_model = request_model
        self.unreadable = False
        paths = _PATHS[api]
        streamed = content_type.partition(";")[0].strip().lower() == "text/event-stream"
        self._events = SseEvents(paths, find=find) if streamed else None
        self._body = None if streamed else JsonPicker(paths)
        self._usage: dict[str, object] | None = None
        self._model: str | None = None

    def feed(self, chunk: Piece, needle_absent: bool = False) -> None:
        """`needle_absent`: as `SseEvents.feed`'s."""
        if self.unreadable:
            return
        try:
            if self._events is not None:
                for picked in self._events.feed(chunk, needle_absent):
                    self._take(picked)
            elif self._body is not None:
                self._body.feed(bytes(chunk))
        except Exception:  # a meter's fault must never break the answer it meters
            self.unreadable = True

    def result(self) -> MeteredUsage | None:
        if self._body is not None:
            self._take(self._body.picked)
            self._body = None
        if self._usage is None:
            return None
        return _metered(self.api, self._usage, self._model or self.request_model)

    def _take(self, picked: dict[Path, object]) -> None:
        for path, value in picked.items():
            if path[-1] in ("model", "modelVersion"):
                if isinstance(value, str) and 0 < len(value) <= MODEL_BOUND:
                    self._model = value
            elif isinstance(value, dict):
                if self.api == "anthropic_messages" and path == ("usage",) and self._usage:
                    # message_delta: its counts replace message_start's, where it has them
                    fresh = {key: v for key, v in value.items() if v is not None}
                    self._usage = {**self._usage, **fresh}
                else:
                    self._usage = value


def _metered(api: Api, usage: dict[str, object], model: str | None) -> MeteredUsage:
    if api == "anthropic_messages":
        writes = _count(usage, "cache_creation_input_tokens")
        hour = _count(usage.get("cache_creation"), "ephemeral_1h_input_tokens")
        return MeteredUsage(
            model=model,
            input_tokens=_count(usage, "input_tokens"),
            cache_read_tokens=_count(usage, "cache_read_input_tokens"),
            cache_write_tokens=writes,
            cache_write_1h_tokens=min(hour, writes),
            output_tokens=_count(usage, "output_tokens"),
        )
    if api == "gemini":
        prompt = _count(usage, "promptTokenCount") + _count(usage, "toolUsePromptTokenCount")
        cached = min(_count(usage, "cachedContentTokenCount"), prompt)
        output = _count(usage, "candidatesTokenCount") + _count(usage, "thoughtsTokenCount")
        return _fresh_and_cached(model, prompt, cached, output)
    if api == "openai_chat":
        prompt, output = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
        details = usage.get("prompt_tokens_details")
    else:
        prompt, output = _count(usage, "input_tokens"), _count(usage, "output_tokens")
        details = usage.get("input_tokens_details")
    return _fresh_and_cached(model, prompt, min(_count(details, "cached_tokens"), prompt), output)


def _fresh_and_cached(model: str | None, prompt: int, cached: int, output: int) -> MeteredUsage:
    """OpenAI and Gemini count cache reads within the prompt: the rest is fresh."""
    return MeteredUsage(
        model=model, input_tokens=prompt - cached, cache_read_tokens=cached, output_tokens=output
    )


def _count(usage: object, key: str) -> int:
    """A token count the answer gave, or 0 where it gave none (or not a count)."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0
    return max(int(min(value, 10**15)), 0)
