"""Ballet's manifests as podman options: what scripts/images/run_ticket.py and
kube_play.py run the images with, where `podman kube play` cannot (podman 4.3
ignores StatefulSets and `procMount`, and maps too few ids for `hostUsers: false`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
PREFIX = "ballet-run-"


def manifest(name: str, kind: str) -> dict[str, Any]:
    """The first object of `kind` in manifests/<name>.yaml."""
    docs = yaml.safe_load_all((MANIFESTS / f"{name}.yaml").read_text())
    return next(d for d in docs if d and d["kind"] == kind)


def pod_spec(name: str, kind: str) -> dict[str, Any]:
    spec: dict[str, Any] = manifest(name, kind)["spec"]["template"]["spec"]
    return spec


def manifest_options(spec: dict[str, Any], userns_size: int) -> list[str]:
    """`podman run` options for the pod's first container, from its securityContext,
    the pod's, its emptyDir volumes and `hostUsers`; anything this does not know
    how to translate stops the run (a manifest changed under it)."""
    pod = spec.get("securityContext", {})
    container = spec["containers"][0]
    ctx = container.get("securityContext", {})
    opts = ["--user", f"{pod['runAsUser']}:{pod['runAsGroup']}"]
    if "fsGroup" in pod:
        opts += ["--group-add", str(pod["fsGroup"])]
    if spec.get("hostUsers") is False and userns_size:
        # The pod's own user namespace: its root is an unprivileged id range of the host.
        # One fixed range: vfs keeps a re-owned copy of the image per mapping.
        base = 1_000_000
        opts += ["--uidmap", f"0:{base}:{userns_size}", "--gidmap", f"0:{base}:{userns_size}"]
    if ctx.get("allowPrivilegeEscalation") is False:
        opts += ["--security-opt", "no-new-privileges"]
    if ctx.get("readOnlyRootFilesystem"):
        # Kubernetes adds no writable /tmp or /run to a read-only root: nor does this.
        opts += ["--read-only", "--read-only-tmpfs=false"]
    drop = ctx.get("capabilities", {}).get("drop", [])
    if drop:
        opts += ["--cap-drop", ",".join(drop)]
    for field, option in (("seccompProfile", "seccomp"), ("appArmorProfile", "apparmor")):
        profile = ctx.get(field, pod.get(field, {})).get("type", "RuntimeDefault")
        if profile == "Unconfined":
            opts += ["--security-opt", f"{option}=unconfined"]
        elif profile != "RuntimeDefault":
            raise SystemExit(f"{field} {profile}: not translated to podman; extend run_ticket.py")
    if ctx.get("procMount") == "Unmasked":
        opts += ["--security-opt", "unmask=ALL"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        # Claims and ConfigMaps are the caller's to mount (run_valkey).
        volume = volumes.get(mount["name"], {})
        if "emptyDir" in volume:
            size = volume["emptyDir"].get("sizeLimit", "1Gi").replace("Gi", "g")
            # An emptyDir is writable by the pod's fsGroup. Podman 4.3 gives a tmpfs over
            # a directory the image has (/data, /workspaces) that directory's root-owned
            # 0755 whatever `mode=` says; `U` gives it to the container's user instead.
            opts += ["--tmpfs", f"{mount['mountPath']}:rw,exec,U,size={size}"]
    return opts


def env_options(env: dict[str, str]) -> list[str]:
    """`-e NAME` for each: podman reads the values from its own environment, so a
    private key's newlines survive (an env file cannot hold them)."""
    return [arg for name in env for arg in ("-e", name)]


class Podman:
    def __init__(self, command: list[str], out: Path) -> None:
        self.command = command
        self.out = out
        self.started: list[str] = []

    def run(
        self, name: str, image: str, options: list[str], env: dict[str, str], args: list[str]
    ) -> None:
        full = PREFIX + name
        subprocess.run([*self.command, "rm", "-f", "-t", "0", full], capture_output=True)
        argv = [*self.command, "run", "-d", "--name", full, "--network", "host"]
        argv += [*options, *env_options(env), image, *args]
        print("images: " + " ".join(argv), file=sys.stderr)
        done = subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"podman run {full} failed:\n{done.stderr}")
        self.started.append(full)

    def logs(self, name: str) -> str:
        done = subprocess.run([*self.command, "logs", name], capture_output=True, text=True)
        return done.stdout + done.stderr

    def stop_all(self) -> None:
        for name in self.started:
            (self.out / f"{name}.log").write_text(self.logs(name))
            subprocess.run([*self.command, "rm", "-f", "-t", "10", name], capture_output=True)


def valkey_conf(port: int) -> str:
    """The manifest's valkey.conf, on a port of its own (the host's network is shared)."""
    conf: str = manifest("valkey", "ConfigMap")["data"]["valkey.conf"]
    return conf + f"port {port}\nbind 127.0.0.1\n"


def manifest_env(spec: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in spec["containers"][0].get("env", []) if "value" in e}


def run_valkey(podman: Podman, image: str, out: Path, port: int, password: str) -> None:
    """manifests/valkey.yaml's StatefulSet as a container: its ConfigMap's valkey.conf
    (on `port`), its command, its security options; its volume a tmpfs."""
    config = out / "valkey-config"  # the ConfigMap, mounted as a directory as Kubernetes does
    config.mkdir(exist_ok=True)
    config.chmod(0o755)
    (config / "valkey.conf").write_text(valkey_conf(port))
    (config / "valkey.conf").chmod(0o644)
    spec = pod_spec("valkey", "StatefulSet")
    options = [*manifest_options(spec, 0), "-v", f"{config}:/etc/valkey:ro"]
    options += ["--tmpfs", "/data:rw,U,size=1g"]
    podman.run(
        "valkey", image, options, {"VALKEY_PASSWORD": password}, spec["containers"][0]["command"]
    )
