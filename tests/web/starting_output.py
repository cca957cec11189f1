"""What a starting `ballet worker` or `ballet serve` prints before it first meets the
Redis nothing listens on (port 1): every start-up check and log comes before that."""

from __future__ import annotations

import subprocess
import threading

NO_REDIS = "redis://127.0.0.1:1/0"


def output_until_no_redis(argv: list[str], env: dict[str, str]) -> str:
    """Its stdout and stderr until its first failed try to reach Redis (or its end);
    then it is killed, not left to retry Redis for 5 s (a starting worker takes SIGTERM
    only once it has started). The first failed try is part of the output."""
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    watchdog = threading.Timer(60, process.kill)  # a start that hangs fails, not blocks
    watchdog.start()
    output: list[str] = []
    try:
        for line in process.stdout:
            output.append(line)
            if "redis connection error" in line:
                break
    finally:
        process.kill()
        output.append(process.communicate(timeout=60)[0] or "")
        watchdog.cancel()
    return "".join(output)
