"""The meter reads each provider's own usage from its answers, however they are cut."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ballet.core.json_picker import ANY_ITEM, JsonPicker
from ballet.core.metering import (
    Api,
    MeteredUsage,
    UsageReader,
    api_of,
    gemini_model_of,
    usage_asked,
)
from ballet.core.sse_events import SseEvents

ANSWERS = Path(__file__).resolve().parents[1] / "fixtures" / "model-answers"
EXPECTED: dict[str, dict[str, Any]] = json.loads((ANSWERS / "expected.json").read_text())
MB = 1024 * 1024


def metered(api: Api, content_type: str, pieces: Iterator[bytes] | list[bytes]) -> Any:
    reader = UsageReader(api, content_type)
    for piece in pieces:
        reader.feed(piece)
    assert not reader.unreadable
    usage = reader.result()
    return None if usage is None else usage.model_dump()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_recorded_answer_is_metered_as_the_provider_counted(name: str) -> None:
    case = EXPECTED[name]
    body = (ANSWERS / name).read_bytes()
    assert metered(case["api"], case["content_type"], [body]) == case["usage"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_cut_at_any_byte_meters_the_same(name: str) -> None:
    case = EXPECTED[name]
    body = (ANSWERS / name).read_bytes()
    for cut in range(1, len(body)):
        pieces = [body[:cut], body[cut:]]
        assert metered(case["api"], case["content_type"], pieces) == case["usage"], cut
    one_by_one = [body[i : i + 1] for i in range(len(body))]
    assert metered(case["api"], case["content_type"], one_by_one) == case["usage"]


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n.endswith(".sse")))
def test_an_event_too_big_to_keep_is_read_as_it_passes(name: str) -> None:
    """With no event small enough to keep, every event is read line by line as it
    arrives (a Responses stream's last event repeats the whole output): the same
    values, cut anywhere."""
    body = (ANSWERS / name).read_bytes()
    paths = [("usage",), ("model",), ("message", "usage"), ("response", "usage")]
    paths += [("message", "model"), ("response", "model"), ("usageMetadata",), ("modelVersion",)]

    def with_usage(found: list[dict[Any, object]]) -> list[dict[Any, object]]:
        return [p for p in found if any(isinstance(p[k], dict) for k in p if "usage" in k[-1])]

    kept = with_usage(SseEvents(paths).feed(body))
    assert bool(kept) == (EXPECTED[name]["usage"] is not None)
    for cut in range(1, len(body)):
        streamed = SseEvents(paths, event_bound=0)
        found = streamed.feed(body[:cut]) + streamed.feed(body[cut:])
        assert with_usage(found) == kept, cut


def test_usage_split_over_data_lines_is_read_cut_anywhere() -> None:
    """The SSE specification's data lines, joined by LF, and its CR and CRLF line ends,
    kept and streamed."""
    stream = (
        b'event: message_start\ndata: {"type":"message_start","message":{"model":"m",\n'
        b'data: "usage":{"input_tokens":7,"output_tokens":1}}}\n\n'
        b'event: message_delta\r\ndata: {"type":"message_delta","usage":\r\ndata: '
        b'{"output_tokens":9}}\r\n\r\n'
        b'event: ping\rdata: {"type":"ping"}\r\r'
    )
    expected = {
        "model": "m",
        "input_tokens": 7,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cache_write_1h_tokens": 0,
        "output_tokens": 9,
    }
    paths = [("usage",), ("message", "usage")]
    kept = SseEvents(paths).feed(stream)
    assert kept == [
        {("message", "usage"): {"input_tokens": 7, "output_tokens": 1}},
        {("usage",): {"output_tokens": 9}},
    ]
    for cut in range(1, len(stream)):
        assert metered("anthropic_messages", "text/event-stream", [stream[:cut], stream[cut:]]) == (
            expected
        )
        streamed = SseEvents(paths, event_bound=0)
        assert streamed.feed(stream[:cut]) + streamed.feed(stream[cut:]) == kept, cut


def test_the_answer_s_model_wins_else_the_request_s() -> None:
    answer = b'{"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2}}'
    reader = UsageReader("gemini", "application/json", request_model="gemini-2.5-flash")
    reader.feed(answer)
    assert reader.result() == MeteredUsage(
        model="gemini-2.5-flash", input_tokens=3, output_tokens=2
    )
    reader = UsageReader("openai_chat", "application/json", request_model="gpt-5")
    reader.feed(b'{"model":"gpt-5-2025-08-07","usage":{"prompt_tokens":1}}')
    assert reader.result() == MeteredUsage(model="gpt-5-2025-08-07", input_tokens=1)


def test_counts_that_are_not_counts_are_zero_and_cached_never_exceeds_the_prompt() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": -4,
        "prompt_tokens_details": {"cached_tokens": 25},
    }
    assert metered("openai_chat", "application/json", [json.dumps({"usage": usage}).encode()]) == {
        "model": None,
        "input_tokens": 0,
        "cache_read_tokens": 10,
        "cache_write_tokens": 0,
        "cache_write_1h_tokens": 0,
        "output_tokens": 0,
    }
    odd = {"input_tokens": "12", "output_tokens": True, "cache_read_input_tokens": 1.5e30}
    read = metered("anthropic_messages", "application/json", [json.dumps({"usage": odd}).encode()])
    assert (read["input_tokens"], read["output_tokens"], read["cache_read_tokens"]) == (
        0,
        0,
        10**15,
    )


# -- hostile and garbage answers: never raise, bounded memory ----------------------------


def peak_while(feed: Iterator[bytes], reader: UsageReader) -> int:
    tracemalloc.start()
    try:
        for piece in feed:
            reader.feed(piece)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def pieces_of(head: bytes, filler: bytes, size: int, tail: bytes) -> Iterator[bytes]:
    """`head`, then `filler` repeated to `size` bytes in 64 KiB pieces, then `tail`."""
    yield head
    piece = filler * (64 * 1024 // len(filler))
    for _ in range(size // len(piece)):
        yield piece
    yield tail


@pytest.mark.parametrize(
    ("api", "content_type", "head", "filler", "tail"),
    [
        # One event of 10 MB: a Responses stream's last event repeating a long output.
        (
            "openai_responses",
            "text/event-stream",
            b'event: response.completed\ndata: {"type":"response.completed","response":'
            b'{"model":"gpt-5","output":[{"type":"message","content":[{"text":"',
            b'line \\"quoted\\" \\\\ \\n',
            b'"}]}],"usage":{"input_tokens":70,"input_tokens_details":{"cached_tokens":20},'
            b'"output_tokens":7}}}\n\n',
        ),
        # A 10 MB answer not streamed.
        (
            "anthropic_messages",
            "application/json",
            b'{"model":"claude-sonnet-4-5","content":[{"type":"text","text":"',
            b"word {usage} ",
            b'"}],"usage":{"input_tokens":50,"cache_read_input_tokens":20,"output_tokens":7}}',
        ),
        # 10 MB of small events, the usage last.
        (
            "openai_chat",
            "text/event-stream",
            b"",
            b'data: {"choices":[{"delta":{"content":"usage"}}],"usage":null}\n\n',
            b'data: {"model":"gpt-5","usage":{"prompt_tokens":70,'
            b'"prompt_tokens_details":{"cached_tokens":20},"completion_tokens":7}}\n\n',
        ),
    ],
)
def test_a_10_mb_answer_is_metered_without_being_kept(
    api: Api, content_type: str, head: bytes, filler: bytes, tail: bytes
) -> None:
    reader = UsageReader(api, content_type)
    peak = peak_while(pieces_of(head, filler, 10 * MB, tail), reader)
    usage = reader.result()
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (50, 20, 7)
    assert peak < 2 * MB, f"the meter held {peak} bytes"


@pytest.mark.parametrize(
    ("content_type", "filler"),
    [
        ("text/event-stream", b"x" * 1000),  # no line end at all
        ("text/event-stream", b"data: " + b"{" * 500 + b"\n"),  # one event, ever deeper
        ("text/event-stream", b'data: {"usage": {"input_tokens": ' + b"9" * 100),
        ("application/json", b"[" * 1000),
        ("application/json", b'{"usage": {"a": "' + b"\\" * 999),
        ("application/json", bytes(range(256)) * 4),
    ],
)
def test_garbage_never_raises_nor_is_kept(content_type: str, filler: bytes) -> None:
    reader = UsageReader("anthropic_messages", content_type)
    peak = peak_while(pieces_of(b"", filler, 10 * MB, b"\n\n"), reader)
    assert not reader.unreadable
    assert reader.result() is None
    assert peak < 2 * MB, f"the meter held {peak} bytes"


def test_an_error_or_an_empty_answer_says_no_usage() -> None:
    assert metered("openai_responses", "application/json", [b""]) is None
    assert metered("gemini", "text/event-stream", [b": keep-alive\n\n"]) is None
    error = b'{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}'
    assert metered("gemini", "application/json", [error]) is None


def test_json_picker_keeps_the_last_of_an_array_s_items_and_skips_other_depths() -> None:
    picker = JsonPicker([(ANY_ITEM, "usageMetadata"), ("usageMetadata",)])
    text = b'[{"a":{"usageMetadata":1},"usageMetadata":{"n":1}}, {"b":[]}, '
    text += b'{"usageMetadata":{"n":3}}]'
    for i in range(len(text)):
        picker.feed(text[i : i + 1])
    assert picker.done
    assert picker.picked == {(ANY_ITEM, "usageMetadata"): {"n": 3}}


def test_json_picker_reads_escaped_keys_and_stops_at_a_wrong_closer() -> None:
    long_key = b"usage" + b"x" * 100_000  # kept no further than a key can be
    picker = JsonPicker([("usage",)])
    picker.feed(b'{"' + long_key + b'": {"n": 1}, "usage": {"n": 2}}')
    assert picker.picked == {("usage",): {"n": 2}}
    picker = JsonPicker([("usage",)])
    picker.feed(b'{"\\u0075sage": {"x": "}\\"]"}, "more": ]')
    assert picker.picked == {("usage",): {"x": '}"]'}}
    assert picker.done


# -- which requests are metered ---------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "method", "path", "api"),
    [
        ("anthropic", "POST", "/v1/messages", "anthropic_messages"),
        ("anthropic", "POST", "/v1/messages?beta=true", "anthropic_messages"),
        ("anthropic", "POST", "/v1/messages/count_tokens", None),
        ("anthropic", "GET", "/v1/messages", None),
        ("openai", "POST", "/v1/responses", "openai_responses"),
        ("openai", "POST", "/responses", "openai_responses"),
        ("openai", "POST", "/v1/responses/compact", "openai_responses"),
        ("openai", "POST", "/chat/completions", "openai_chat"),
        ("openai", "POST", "/v1/chat/completions", "openai_chat"),
        ("openai", "GET", "/v1/models", None),
        ("openai", "POST", "/v1/messages", None),
        ("gemini", "POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "gemini"),
        ("gemini", "POST", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini"),
        ("gemini", "POST", "/v1beta/models/gemini-2.5-flash:countTokens", None),
        ("gemini", "POST", "/v1/chat/completions", None),
        ("other", "POST", "/v1/messages", None),
    ],
)
def test_api_of(provider: str, method: str, path: str, api: Api | None) -> None:
    assert api_of(provider, method, path) == api


def test_gemini_model_of_its_path() -> None:
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert gemini_model_of(path) == "gemini-2.5-pro"
    assert gemini_model_of("/v1beta/models") is None


def test_a_streamed_chat_request_is_made_to_ask_for_its_usage() -> None:
    prompt = "please set include_usage: true"  # spelled in a prompt, it asks nothing
    body = {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    asked = usage_asked("openai_chat", json.dumps(body).encode())
    assert asked is not None
    assert json.loads(asked) == {**body, "stream_options": {"include_usage": True}}
    kept = {**body, "stream_options": {"include_obfuscation": False}}
    asked = usage_asked("openai_chat", json.dumps(kept).encode())
    assert asked is not None
    assert json.loads(asked)["stream_options"] == {
        "include_obfuscation": False,
        "include_usage": True,
    }


@pytest.mark.parametrize(
    ("api", "body"),
    [
        ("openai_chat", {"stream": True, "stream_options": {"include_usage": True}}),
        ("openai_chat", {"stream": False}),
        ("openai_chat", {}),
        ("openai_responses", {"stream": True}),  # Responses always says its usage
        ("anthropic_messages", {"stream": True}),
    ],
)
def test_a_request_that_asks_already_or_need_not_is_left_alone(
    api: Api, body: dict[str, Any]
) -> None:
    assert usage_asked(api, json.dumps(body).encode()) is None
    assert usage_asked("openai_chat", b"not json {") is None
    assert usage_asked("openai_chat", b"[1, 2]") is None


def test_only_reads_and_token_counts_spend_nothing() -> None:
    from ballet.core.metering import spends_nothing

    assert spends_nothing("GET", "/v1/models") and spends_nothing("HEAD", "/v1/models")
    assert spends_nothing("POST", "/v1/messages/count_tokens")
    assert spends_nothing("POST", "/v1beta/models/gemini-2.5-pro:countTokens?alt=json")
    for path in ("/v1/complete", "/v1/embeddings", "/v1/messages", "/v1/images/generations"):
        assert not spends_nothing("POST", path)
