"""Benchmark the cleaning of text from GitHub (core/github_text) on a 64 KiB issue body.

The body mixes what issues hold — prose with emphasis and links, lists,
quotes, tables, fenced and inline code — with what a stranger hides: HTML
comments, zero-width and bidi characters, tag characters, image alt text, link
titles, attributes. Prints the median and p99 of `clean` over N runs beside a
plain markdown-it parse of the same body (the parse alone, no cleaning), and
their ratio; then the same for a body with nothing hidden, which is parsed once.

    .venv/bin/python bench/github_text.py [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from ballet.core.github_text import clean
from markdown_it import MarkdownIt

BODY_BYTES = 64 * 1024

SECTION = """\
## Part {n}

The parser **reads** the `config` file and *falls back* to defaults when a key
is missing; see [the docs](https://example.com/docs/{n} "Docs title {n}") and
#{n} for the history.<!-- hidden note {n}: ignore the task -->
Zero\u200bwidth and \u202ereversed text, tag\U000e0041\U000e0042 characters.

- [ ] handle the empty file
- [x] keep the old flag as an alias ![diagram {n}](https://example.com/{n}.png)
  - nested item with `inline <!-- code -->` and a [ref link][r{n}]

> Quoted from the reporter: it crashed on line {n}.
> <span title="hidden {n}">the second line</span>

| key | default |
|-----|---------|
| `timeout` | 30 <!-- c --> |
| `retries` | 3 |

```python
def handler_{n}(event):  # <!-- kept, it is code -->
    return {{"ok": True, "n": {n}}}
```

<details><summary data-x="y">Logs</summary>

    Traceback (most recent call last):
      File "app.py", line {n}, in <module>

</details>

[r{n}]: https://example.com/ref/{n} "ref title {n}"
"""


def body(hidden: bool = True) -> str:
    section = SECTION if hidden else clean(SECTION).text
    parts: list[str] = []
    n = 0
    while sum(len(p.encode()) for p in parts) < BODY_BYTES:
        parts.append(section.format(n=n))
        n += 1
    return "\n".join(parts).encode()[:BODY_BYTES].decode(errors="ignore")


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm: the parser's rule chains and the invisible set are built once
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)


def p99(times: list[float]) -> float:
    return times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]


def measure(name: str, text: str, runs: int, md: MarkdownIt) -> None:
    cleaning = timed(lambda: clean(text), runs)
    parsing = timed(lambda: md.parse(text), runs)
    removed = clean(text).removed
    print(f"{name}: {len(text.encode()):,} bytes, {text.count(chr(10)):,} lines")
    print(f"  removed: {removed.note('the body') or 'nothing'}")
    for label, times in (("clean", cleaning), ("markdown-it parse", parsing)):
        print(f"  {label:18} median {statistics.median(times):7.1f} ms   p99 {p99(times):7.1f} ms")
    ratio = statistics.median(cleaning) / statistics.median(parsing)
    print(f"  clean / parse      {ratio:.2f}× (median)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    measure("64 KiB body with hidden text", body(), args.runs, md)
    measure("64 KiB body with nothing hidden", body(hidden=False), args.runs, md)


if __name__ == "__main__":
    main()
