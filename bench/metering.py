"""Benchmark the gateway's meter (core/metering.UsageReader) on 10 MB answers.

The gateway feeds every piece of an answer to its meter on the way down, so the
meter's cost per piece is added to every streamed answer. For each wire format,
a 10 MB answer as the provider streams it (one event per piece, as a server
flushes them; or 64 KiB pieces of one JSON body or one huge event) is fed to a
UsageReader; prints the median over N runs of the time to meter it, its rate
in MB/s, the cost per piece, and the peak memory the meter held (tracemalloc,
one run apart: tracing slows what it traces). The streams are searched for
usage as the gateway searches them (libc's memmem, sessions/gateway/needle.py);
`--sre`: with core's own search (sre), as before.

    .venv/bin/python bench/metering.py [--runs 5] [--sre]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable

from ballet.core.metering import Api, UsageReader
from ballet.core.sse_events import Find, find_needle
from ballet.sessions.gateway.needle import FIND_USAGE

SIZE = 10 * 1024 * 1024
TEXT = "Ballet meters the provider's own usage fields. " * 2


def events(make: Callable[[int], bytes], first: bytes, last: bytes) -> list[bytes]:
    pieces = [first]
    total, n = 0, 0
    while total < SIZE:
        piece = make(n)
        pieces.append(piece)
        total, n = total + len(piece), n + 1
    return [*pieces, last]


def sse(data: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def in_pieces(body: bytes, size: int = 64 * 1024) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def answers() -> dict[str, tuple[Api, str, list[bytes]]]:
    usage = {"input_tokens": 10, "output_tokens": 5}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    chunk = {"object": "chat.completion.chunk", "model": "gpt-4.1", "usage": None}
    big_text = 'line with "quotes" and \\ escapes\n' * (SIZE // 36)
    completed = {"type": "response.completed", "response": {"model": "gpt-5", "usage": usage}}
    completed["response"]["output"] = [{"type": "message", "content": [{"text": big_text}]}]
    return {
        "anthropic SSE, small events": (
            "anthropic_messages",
            "text/event-stream",
            events(
                lambda n: sse(
                    {**delta, "delta": {"type": "text_delta", "text": TEXT}}, delta["type"]
                ),
                sse(
                    {"type": "message_start", "message": {"model": "m", "usage": usage}},
                    "message_start",
                ),
                sse({"type": "message_delta", "usage": {"output_tokens": 9}}, "message_delta"),
            ),
        ),
        "openai chat SSE, usage: null in each": (
            "openai_chat",
            "text/event-stream",
            events(
                lambda n: sse({**chunk, "choices": [{"delta": {"content": TEXT}}]}),
                b"",
                sse({**chunk, "choices": [], "usage": {"prompt_tokens": 9}}) + b"data: [DONE]\n\n",
            ),
        ),
        "gemini SSE, usageMetadata in each": (
            "gemini",
            "text/event-stream",
            events(
                lambda n: sse(
                    {
                        "candidates": [{"content": {"parts": [{"text": TEXT}]}}],
                        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": n},
                        "modelVersion": "gemini-2.5-pro",
                    }
                ),
                b"",
                b"",
            ),
        ),
        "responses SSE, one 10 MB event": (
            "openai_responses",
            "text/event-stream",
            in_pieces(sse(completed, "response.completed")),
        ),
        "anthropic JSON body, 10 MB": (
            "anthropic_messages",
            "application/json",
            in_pieces(json.dumps({"content": [{"text": big_text}], "usage": usage}).encode()),
        ),
    }


def meter(api: Api, content_type: str, pieces: list[bytes], find: Find) -> None:
    reader = UsageReader(api, content_type, find=find)
    for piece in pieces:
        reader.feed(piece)
    assert reader.result() is not None and not reader.unreadable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sre", action="store_true", help="core's own search, not memmem")
    args = parser.parse_args()
    runs, find = args.runs, find_needle if args.sre else FIND_USAGE
    print(f"{'answer':40} {'pieces':>7} {'median':>9} {'MB/s':>7} {'µs/piece':>9} {'peak':>8}")
    for name, (api, content_type, pieces) in answers().items():
        size = sum(len(p) for p in pieces) / 1e6
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            meter(api, content_type, pieces, find)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        tracemalloc.start()
        meter(api, content_type, pieces, find)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"{name:40} {len(pieces):>7} {median * 1e3:>7.1f}ms {size / median:>7.0f}"
            f" {median / len(pieces) * 1e6:>9.2f} {peak / 1024:>6.0f}KB"
        )


if __name__ == "__main__":
    main()
