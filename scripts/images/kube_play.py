"""`podman kube play` of manifests/web.yaml and worker.yaml with the images built
here, until the web answers /readyz (`./run images kube`).

What podman 4.3 cannot play as a cluster would, and how this runs it instead:
- manifests/valkey.yaml's StatefulSet (kube play ignores StatefulSets): run as a
  container with the manifest's options (containers.run_valkey);
- the Secrets the pods' `envFrom` names: podman secrets holding the Secret's
  YAML, which is how kube play resolves `secretRef`;
- the host's network for every pod (`--network host`): Valkey is on loopback.
The worker pod is played too; podman 4.3 ignores `procMount` and its
`hostUsers: false` maps too few ids, so the worker's sessions are proven under
`./run images run` instead, and this prints what the played worker said.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from ballet.demo.stack import free_port
from containers import MANIFESTS, Podman, run_valkey
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

IMAGES = {
    "ghcr.io/example/ballet-web": "web_image",
    "ghcr.io/example/ballet-worker": "worker_image",
}


def private_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return pem.decode()


def secret(name: str, values: dict[str, str]) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data}


def played(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The Deployments of web.yaml and worker.yaml, with the images built here."""
    docs: list[dict[str, Any]] = []
    for name in ("web", "worker"):
        for doc in yaml.safe_load_all((MANIFESTS / f"{name}.yaml").read_text()):
            if not doc or doc["kind"] != "Deployment":
                continue
            for container in doc["spec"]["template"]["spec"]["containers"]:
                repo = container["image"].rsplit(":", 1)[0]
                container["image"] = getattr(args, IMAGES[repo])
            docs.append(doc)
    return docs


def main(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    podman = Podman(args.podman.split(), out)
    pm = args.podman.split()
    password, port = secrets.token_hex(16), free_port()
    settings = {
        "BALLET_WEBHOOK_SECRET": secrets.token_hex(16),
        "BALLET_APP_ID": "1",
        "BALLET_PRIVATE_KEY": private_key(),
        "BALLET_WEB_SESSION_SECRET": secrets.token_hex(32),
        "REDIS_URL": f"redis://:{password}@127.0.0.1:{port}/0",
    }
    kube = out / "ballet.kube.yaml"
    kube.write_text(yaml.safe_dump_all(played(args), sort_keys=False))
    try:
        run_valkey(podman, args.valkey_image, out, port, password)
        for name, values in (("ballet", settings), ("ballet-valkey", {"password": password})):
            path = out / f"{name}.secret.yaml"
            path.write_text(yaml.safe_dump(secret(name, values)))
            subprocess.run([*pm, "secret", "rm", name], capture_output=True)
            subprocess.run([*pm, "secret", "create", name, str(path)], check=True)
        started = time.monotonic()
        play = subprocess.run(
            [*pm, "kube", "play", "--replace", "--network", "host", str(kube)],
            capture_output=True,
            text=True,
        )
        print(play.stdout + play.stderr, file=sys.stderr)
        if play.returncode != 0:
            print("images: podman kube play failed", file=sys.stderr)
            return 1
        answered = False
        for _ in range(300):
            try:
                answered = httpx.get("http://127.0.0.1:8000/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                answered = False
            if answered:
                break
            time.sleep(0.2)
        took = time.monotonic() - started
        ps = subprocess.run(
            [*pm, "ps", "-a", "--format", "{{.Names}} {{.Status}}"], capture_output=True, text=True
        )
        print(ps.stdout, file=sys.stderr)
        for line in ps.stdout.splitlines():
            name = line.split()[0]
            if name.startswith("ballet-worker-pod"):
                logs = subprocess.run([*pm, "logs", name], capture_output=True, text=True)
                print(f"images: {name} said:\n{(logs.stdout + logs.stderr)[-2000:]}")
        if not answered:
            print("images: the played web pod never answered /readyz", file=sys.stderr)
            return 1
        print(f"images: kube play: the web pod answers /readyz after {took:.1f} s")
        return 0
    finally:
        subprocess.run([*pm, "kube", "down", str(kube)], capture_output=True)
        for name in ("ballet", "ballet-valkey"):
            subprocess.run([*pm, "secret", "rm", name], capture_output=True)
        podman.stop_all()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--podman", required=True, help="the podman command, with its --root")
    parser.add_argument("--web-image", required=True)
    parser.add_argument("--worker-image", required=True)
    parser.add_argument("--valkey-image", required=True)
    parser.add_argument("--out", type=Path, required=True)
    sys.exit(main(parser.parse_args()))
