"""Tickets under GitHub faults: requests and time against the fault-free run.

Starts the whole product on loopback (the `ballet sandbox demo` stack), runs
N demo tickets at once without faults, then N more while the sandbox fails a
share of the App's REST requests (`POST /_sandbox/faults`), and prints for
each batch the time to merge them all, the App's requests (per ticket, by
status) and the faults injected. Every ticket must merge; the script exits 1
otherwise.

Its repositories set `policy: {merge: auto}` (demo.LANDS_ALONE_YML): tickets land
with no person's approval, so the figures are Ballet's alone.

    .venv/bin/python bench/faults.py [--tickets 20] [--rate 0.2] [--seed 1] [--slots 4]
                                     [--spacing 0.75]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from ballet.demo.load import run_tickets
from ballet.demo.stack import running_stack
from ballet.logs import configure_logging


async def main(args: argparse.Namespace) -> int:
    faults = {
        "rate": args.rate,
        "kinds": ["502", "secondary_rate_limit", "timeout"],
        "seed": args.seed,
        "retry_after_seconds": args.retry_after,
        "timeout_seconds": args.hold,
    }
    with tempfile.TemporaryDirectory(prefix="ballet-bench-faults-") as tmp:
        async with running_stack(
            Path(tmp), session_slots=args.slots, write_spacing_seconds=args.spacing
        ) as stack:
            print(
                f"{args.tickets} tickets, {args.slots} session slots, writes {args.spacing}s apart",
                flush=True,
            )
            calm = await run_tickets(stack, "calm", args.tickets, timeout=args.timeout)
            print(calm.describe("fault-free"), flush=True)
            stormy = await run_tickets(
                stack, "stormy", args.tickets, faults=faults, timeout=args.timeout
            )
            print(stormy.describe(f"{args.rate:.0%} faults"), flush=True)
            print(f"injected by kind: {stormy.faults and stormy.faults['injected']}")
            print(f"request ratio stormy/calm: {stormy.total / max(1, calm.total):.2f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=20)
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--retry-after", type=int, default=1, help="secondary limit's wait (s)")
    parser.add_argument("--hold", type=float, default=0.5, help="a timeout's hold before 504 (s)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--spacing", type=float, default=0.0, help="write pacing (s); production: 0.75"
    )
    configure_logging("warning")
    sys.exit(asyncio.run(main(parser.parse_args())))
