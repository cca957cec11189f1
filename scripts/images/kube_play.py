"""`podman kube play` of manifests/web.yaml and worker.yaml with the images built
here, until the web answers /readyz (`./run images kube`).

What podman 4.3 cannot play as a cluster would, and how this runs it instead:
- manifests/valkey.yaml's StatefulSet (kube play ignores StatefulSets): run as a
  container with the manifest's options (containers.run_valkey);
- the `ballet` Secret the pods' `envFrom` names: its values as the containers'
  `env:` (podman 4.3 refused it as a podman secret holding the Secret, as YAML
  and as JSON: "secret ballet is not valid JSON: illegal base64 data");
- the host's network for every pod (`--network host`): Valkey is on loopback;
  there podman refuses `ports:` (port mappings), so the played copy has none;
- one replica each: podman 4.3 names every replica's pod `<name>-pod-0`.
The worker pod is played too; podman 4.3 ignores `procMount` and its
`hostUsers: false` maps too few ids, so the worker's sessions are proven under
`./run images run` instead, and this prints what the played worker said.
"""

from __future__ import annotations

import argparse
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


def played(args: argparse.Namespace, settings: dict[str, str]) -> list[dict[str, Any]]:
    """The Deployments of web.yaml and worker.yaml, with the images built here and
    the `ballet` Secret's values as `env:` (podman 4.3 could not resolve it)."""
    docs: list[dict[str, Any]] = []
    for name in ("web", "worker"):
        for doc in yaml.safe_load_all((MANIFESTS / f"{name}.yaml").read_text()):
            if not doc or doc["kind"] != "Deployment":
                continue
            # Podman 4.3 names every replica's pod `<name>-pod-0`: the second collides.
            doc["spec"]["replicas"] = 1
            for container in doc["spec"]["template"]["spec"]["containers"]:
                repo = container["image"].rsplit(":", 1)[0]
                container["image"] = getattr(args, IMAGES[repo])
                # On the host's network podman refuses port mappings; the probes name
                # the ports, so they get the numbers.
                ports = {p["name"]: p["containerPort"] for p in container.pop("ports", [])}
                assert container.pop("envFrom") == [{"secretRef": {"name": "ballet"}}]
                secret_env = [{"name": k, "value": v} for k, v in settings.items()]
                container["env"] = secret_env + container.get("env", [])
                for probe in ("readinessProbe", "livenessProbe"):
                    check = container.get(probe, {}).get("httpGet")
                    if check is not None:
                        check["port"] = ports.get(check["port"], check["port"])
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
    docs = played(args, settings)
    files = {}
    for doc in docs:  # one file per Deployment: each plays, or fails, on its own
        files[doc["metadata"]["name"]] = out / f"{doc['metadata']['name']}.kube.yaml"
        files[doc["metadata"]["name"]].write_text(yaml.safe_dump(doc, sort_keys=False))
    pods = [f"{name}-pod-0" for name in files]
    try:
        run_valkey(podman, args.valkey_image, out, port, password)
        # A pod an earlier, failed play left behind (its name is taken otherwise).
        subprocess.run([*pm, "pod", "rm", "-f", "--ignore", *pods], capture_output=True)
        started = time.monotonic()
        if not kube_play(pm, files["ballet-web"]):
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
        if not answered:
            print("images: the played web pod never answered /readyz", file=sys.stderr)
            return 1
        print(f"images: kube play: the web pod answers /readyz after {took:.1f} s")
        # The worker's pod: podman 4.3 maps ids for `hostUsers: false` from the
        # `containers` user's /etc/subuid range, which a host without one lacks.
        if kube_play(pm, files["ballet-worker"]):
            time.sleep(10)
            logs = subprocess.run(
                [*pm, "logs", "ballet-worker-pod-0-worker"], capture_output=True, text=True
            )
            print(f"images: the played worker said:\n{(logs.stdout + logs.stderr)[-1500:]}")
        else:
            # Known, and not the manifest's fault: `./run images clis` runs the worker
            # with the manifest's options translated, its own user namespace included.
            print(
                "images: the worker's pod is not played here: podman 4.3 gives a pod of "
                "hostUsers: false ids from the `containers` user's /etc/subuid range (this "
                "host has none) and ignores procMount; `./run images clis` runs the worker "
                "with the manifest's options translated (docs/deploy.md)",
                file=sys.stderr,
            )
        return 0
    finally:
        for path in files.values():
            subprocess.run([*pm, "kube", "down", str(path)], capture_output=True)
        subprocess.run([*pm, "pod", "rm", "-f", "--ignore", *pods], capture_output=True)
        podman.stop_all()


def kube_play(pm: list[str], path: Path) -> bool:
    argv = [*pm, "kube", "play", "--replace", "--network", "host", str(path)]
    play = subprocess.run(argv, capture_output=True, text=True)
    print(play.stdout + play.stderr, file=sys.stderr)
    if play.returncode != 0:
        print(f"images: podman kube play {path.name} failed", file=sys.stderr)
    return play.returncode == 0


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
