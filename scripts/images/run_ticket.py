"""One ticket from the sandbox to merged, through Ballet's images run as containers.

`./run images run` (scripts/images/images.sh) runs this with the checkout's
virtualenv. On the host: `ballet sandbox serve` (the GitHub double) and, with
`--agents clis`, one scripted model server per agent CLI (tests/model_server.py).
In containers (podman, host network): Valkey, `ballet web` and `ballet worker`,
each with the security options its manifest declares, translated by
`manifest_options` below (a changed manifest changes the run). The worker's
sessions run confined by bubblewrap inside the worker container.

`--agents scripted`: the demo's repository and scripted agent (`.ballet/agent.py`).
`--agents clis`: every pinned agent CLI in the worker image, one stage each
(claude-code, codex, gemini, opencode, aider), each against its own model server.
Exit 0 when the pull request is merged; the containers' logs are left in --out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml
from ballet.demo import repo as demo_repo
from ballet.demo.run import file_ticket, timeline
from ballet.demo.stack import Stack, free_port, web_env, worker_env
from ballet.demo.watch import View, wait_until
from ballet.settings import Settings
from containers import PREFIX, Podman, manifest_env, manifest_options, pod_spec, run_valkey

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE / "tests"))
from model_server import ModelServer, serve  # type: ignore[import-not-found]  # noqa: E402

# Model, key and path under the server's address per CLI: tests/runtimes/test_real_clis.py.
CLIS = [
    ("claude", "claude-code", "claude-sonnet-4-5", "ANTHROPIC_API_KEY", ""),
    ("codex", "codex", "gpt-5.1-codex", "OPENAI_API_KEY", "/v1"),
    ("gemini", "gemini", "gemini-2.5-pro", "GEMINI_API_KEY", ""),
    ("opencode", "opencode", "ballet/gpt-4.1", "OPENAI_API_KEY", "/v1"),
    ("aider", "aider", "openai/gpt-4.1", "OPENAI_API_KEY", "/v1"),
]
PROVIDER_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-images",
    "OPENAI_API_KEY": "sk-openai-images",
    "GEMINI_API_KEY": "gemini-images",
}


@contextlib.contextmanager
def sandbox(out: Path, web_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """`ballet sandbox serve` on the host: its API URL and the App settings it wrote."""
    log = out / "sandbox.log"
    argv = [sys.executable, "-m", "ballet", "sandbox", "serve", "--data", str(out / "sandbox")]
    argv += ["--webhook-url", f"{web_url}/webhooks", "--log-level", "warning"]
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=sink)
    try:
        for _ in range(1200):
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith('{"api_url"'):
                    ready = json.loads(line)
                    text = Path(ready["env_file"]).read_text()
                    app = dict(
                        e.split("=", 1) for e in text.splitlines() if "=" in e and e[0] != "#"
                    )
                    yield str(ready["api_url"]), app
                    return
            if proc.poll() is not None:
                raise SystemExit(f"`ballet sandbox serve` exited; see {log}")
            time.sleep(0.05)
        raise SystemExit(f"`ballet sandbox serve` did not become ready; see {log}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def clis_yml(servers: dict[str, ModelServer]) -> str:
    runtimes: dict[str, Any] = {}
    stages: list[dict[str, Any]] = []
    for i, (name, adapter, model, key, path) in enumerate(CLIS):
        runtimes[name] = {
            "adapter": adapter,
            "model": model,
            "env": [key],
            "base_url": servers[name].url + path,
        }
        after = CLIS[i + 1][0] if i + 1 < len(CLIS) else None
        stages.append(
            {
                "id": f"implement-{name}",
                "kind": "agent",
                "runtime": name,
                "skills": ["implementer"],
                "timeout_minutes": 10,
                "next": {"done": f"implement-{after}" if after else "integrate"},
            }
        )
    stages.append(
        {
            "id": "integrate",
            "kind": "platform",
            "action": "merge",
            "next": {"merged": "$done", "returned": "implement-claude"},
        }
    )
    config = {
        "trigger_label": "ballet",
        "policy": {"merge": "auto"},
        "runtimes": runtimes,
        "default_runtime": "claude",
        "pipelines": {"default": {"iteration_limit": 1, "stages": stages}},
    }
    return yaml.safe_dump(config, sort_keys=False)


def settled(view: View) -> bool:
    record, pull = view.record, view.pull
    merged = (
        pull is not None and bool(pull["merged"]) and record is not None and record.status == "done"
    )
    stopped = record is not None and record.status in ("failed", "cancelled")
    asks = record is not None and record.waiting is not None and record.waiting.kind == "question"
    return merged or stopped or asks


async def one_ticket(stack: Stack, ballet_yml: str, timeout: float) -> int:
    created = await stack.create_repo(demo_repo.new_repo_request(ballet_yml=ballet_yml))
    full_name = created["full_name"]
    number = await file_ticket(
        stack, full_name, demo_repo.ISSUE_TITLE, demo_repo.ISSUE_BODY, demo_repo.AUTHOR
    )
    started = time.monotonic()
    print(f"images: {demo_repo.AUTHOR} filed {full_name}#{number} and labelled it", file=sys.stderr)

    def progress(view: View) -> None:
        if view.record is not None:
            r = view.record
            print(
                f"\r  {time.monotonic() - started:6.1f}s {r.status} {r.stage or ''}   ",
                end="",
                file=sys.stderr,
            )

    view = await wait_until(stack, full_name, number, settled, timeout=timeout, on_view=progress)
    print(file=sys.stderr)
    record = view.record
    assert record is not None
    print(timeline(record))
    pull = view.pull
    if pull is None or not pull["merged"]:
        print(f"images: the ticket stopped as {record.status}: {record.waiting}", file=sys.stderr)
        return 1
    print(
        f"images: PR #{pull['number']} merged as {pull['merge_commit_sha'][:12]}"
        f" in {time.monotonic() - started:.1f} s"
    )
    return 0


async def main(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    podman = Podman(args.podman.split(), out)
    web_port, valkey_port = free_port(), free_port()
    web_url = f"http://127.0.0.1:{web_port}"
    password = secrets.token_hex(16)
    servers: dict[str, ModelServer] = {}
    stops = []
    if args.agents == "clis":
        for name, *_ in CLIS:
            servers[name] = ModelServer(file_name=f"{name}.txt", summary=f"{name} was here")
            stops.append(serve(servers[name]))
    try:
        with sandbox(out, web_url) as (api_url, app):
            settings = Settings(
                app_id=int(app["BALLET_APP_ID"]),
                private_key=Path(app["BALLET_PRIVATE_KEY_PATH"]).read_text(),
                webhook_secret=app["BALLET_WEBHOOK_SECRET"],
                github_api_url=api_url,
                public_url=web_url,
                github_web_url=api_url,
                github_client_id=app["BALLET_GITHUB_CLIENT_ID"],
                github_client_secret=app["BALLET_GITHUB_CLIENT_SECRET"],
                redis_url=f"redis://:{password}@127.0.0.1:{valkey_port}/0",
                data_dir=Path("/data"),
                write_spacing_seconds=0.0,
            )
            run_valkey(podman, args.valkey_image, out, valkey_port, password)
            web = pod_spec("web", "Deployment")
            web_args = web["containers"][0]["args"]
            web_args = [*web_args[:-4], "--host", "127.0.0.1", "--port", str(web_port)]
            web_settings = {**web_env(settings), "BALLET_WEB_SESSION_SECRET": secrets.token_hex(32)}
            podman.run(
                "web",
                args.web_image,
                manifest_options(web, args.userns_size),
                {**web_settings, **manifest_env(web)},
                web_args,
            )
            worker = pod_spec("worker", "Deployment")
            worker_settings = {**worker_env(settings), **manifest_env(worker), **PROVIDER_KEYS}
            podman.run(
                "worker",
                args.worker_image,
                manifest_options(worker, args.userns_size),
                worker_settings,
                worker["containers"][0]["args"],
            )
            await ready(web_url, podman)
            stack = Stack(api_url, web_url, settings, None)
            yml = (
                clis_yml(servers)
                if args.agents == "clis"
                else demo_repo.BALLET_YML + "policy: {merge: auto}\n"
            )
            code = await one_ticket(stack, yml, args.timeout)
            if args.agents == "clis":
                for name, server in servers.items():
                    kinds = [s.kind for s in server.served]
                    served = ", ".join(kinds)
                    print(f"images: {name}: {len(kinds)} model responses served ({served})")
                    if not server.served:
                        code = 1
            return code
    finally:
        podman.stop_all()
        for stop in stops:
            stop()


async def ready(web_url: str, podman: Podman) -> None:
    async with httpx.AsyncClient(base_url=web_url, timeout=2) as client:
        for _ in range(600):
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/readyz")).status_code == 200:
                    print(f"images: the web container answers {web_url}/readyz", file=sys.stderr)
                    return
            await asyncio.sleep(0.2)
    raise SystemExit("the web container never answered /readyz:\n" + podman.logs(PREFIX + "web"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", choices=["scripted", "clis"], default="scripted")
    parser.add_argument("--podman", required=True, help="the podman command, with its --root")
    parser.add_argument("--web-image", required=True)
    parser.add_argument("--worker-image", required=True)
    parser.add_argument("--valkey-image", required=True)
    parser.add_argument("--out", type=Path, required=True, help="logs and the sandbox's data")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument(
        "--userns-size",
        type=int,
        default=65536,
        help="ids mapped for a pod with `hostUsers: false` (0: the host's user namespace)",
    )
    sys.exit(asyncio.run(main(parser.parse_args())))
