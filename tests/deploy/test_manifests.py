"""manifests/: every Kubernetes object validates against Kubernetes' own JSON schemas.

The validator is kubernetes-validate (PyPI, pinned in pyproject.toml), which
ships the schemas generated from Kubernetes' OpenAPI documents and checks them
strictly (an unknown field is an error). The objects are checked for the
oldest and the newest Kubernetes the manifests support, then for what the
design asks of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ballet.embedded_valkey import PERSISTENCE

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = REPO_ROOT / "manifests"
# Not Kubernetes API objects: kustomize's own file and the GitHub App manifest.
NOT_OBJECTS = {"kustomization.yaml", "github-app.yml"}
# appArmorProfile in a securityContext is a field since Kubernetes 1.30.
VERSIONS = ("1.30.0", "1.37.0")

Obj = dict[str, Any]


def manifest_files() -> list[Path]:
    files = sorted([*MANIFESTS.glob("*.yaml"), *MANIFESTS.glob("*.yml")])
    return [f for f in files if f.name not in NOT_OBJECTS]


def objects() -> list[tuple[str, Obj]]:
    found = []
    for path in manifest_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                found.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


def by_kind(kind: str, name: str) -> Obj:
    return next(o for _, o in objects() if o["kind"] == kind and o["metadata"]["name"] == name)


def containers(obj: Obj) -> list[Obj]:
    spec: list[Obj] = obj["spec"]["template"]["spec"]["containers"]
    return spec


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("where", "obj"), objects(), ids=[w for w, _ in objects()])
def test_every_object_is_valid_kubernetes(where: str, obj: Obj, version: str) -> None:
    kubernetes_validate.validate(obj, version, strict=True)


def test_the_validator_refuses_what_kubernetes_refuses() -> None:
    web = by_kind("Deployment", "ballet-web")
    typo = {**web, "spec": {**web["spec"], "replicaz": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, VERSIONS[-1], strict=True)
    wrong = {**web, "spec": {**web["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, VERSIONS[-1], strict=True)


def test_kustomization_lists_every_object_file_but_the_secret_example() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    expected = {f.name for f in manifest_files()} - {"secret.example.yaml"}
    assert set(kustomization["resources"]) == expected


def test_the_web_app_scales_and_survives_drains() -> None:
    web = by_kind("Deployment", "ballet-web")
    labels = web["spec"]["template"]["metadata"]["labels"]
    hpa = by_kind("HorizontalPodAutoscaler", "ballet-web")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "ballet-web",
    }
    assert hpa["spec"]["minReplicas"] >= 2
    pdb = by_kind("PodDisruptionBudget", "ballet-web")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert by_kind("Service", "ballet-web")["spec"]["selector"].items() <= labels.items()


@pytest.mark.parametrize(
    ("kind", "name"),
    [("Deployment", "ballet-web"), ("Deployment", "ballet-worker"), ("StatefulSet", "valkey")],
)
def test_workloads_run_as_non_root_without_privilege(kind: str, name: str) -> None:
    obj = by_kind(kind, name)
    pod = obj["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is False
    for container in containers(obj):
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert not security.get("privileged", False)


def test_the_worker_can_confine_sessions_in_memory_backed_workspaces() -> None:
    worker = by_kind("Deployment", "ballet-worker")
    (container,) = containers(worker)
    # bwrap creates user namespaces: the runtime's default profiles forbid it.
    assert container["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    assert container["securityContext"]["appArmorProfile"] == {"type": "Unconfined"}
    # bwrap mounts a fresh /proc: no part of the container's may be masked, and
    # Kubernetes unmasks it only in a pod with user namespaces.
    assert container["securityContext"]["procMount"] == "Unmasked"
    assert worker["spec"]["template"]["spec"]["hostUsers"] is False
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in worker["spec"]["template"]["spec"]["volumes"]}
    assert mounts["workspaces"] == env["BALLET_WORKSPACE_DIR"]
    assert volumes["workspaces"]["emptyDir"]["medium"] == "Memory"
    assert "BALLET_SESSION_ISOLATION" not in env, "sessions are confined unless opted out"


def test_valkey_is_durable_and_never_evicts() -> None:
    config = by_kind("ConfigMap", "ballet-valkey")["data"]["valkey.conf"].splitlines()
    assert "maxmemory-policy noeviction" in config
    assert "appendonly yes" in config
    # The same persistence as the embedded Valkey of `ballet serve`.
    for name, value in PERSISTENCE.items():
        written = value or '""'  # valkey.conf spells an empty value as ""
        assert f"{name} {written}" in config, name
    valkey = by_kind("StatefulSet", "valkey")
    (claim,) = valkey["spec"]["volumeClaimTemplates"]
    (container,) = containers(valkey)
    assert {"name": claim["metadata"]["name"], "mountPath": "/data"} in container["volumeMounts"]
    assert "dir /data" in config


def test_network_policies_cover_every_workload() -> None:
    selected = [
        o["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for _, o in objects()
        if o["kind"] == "NetworkPolicy"
    ]
    assert sorted(selected) == ["valkey", "web", "worker"]


def test_the_example_secrets_hold_what_ballet_reads() -> None:
    secrets = {o["metadata"]["name"]: o for _, o in objects() if o["kind"] == "Secret"}
    ballet = secrets["ballet"]["stringData"]
    assert {"BALLET_APP_ID", "BALLET_PRIVATE_KEY", "BALLET_WEBHOOK_SECRET", "REDIS_URL"} <= set(
        ballet
    )
    password = secrets["ballet-valkey"]["stringData"]["password"]
    assert f":{password}@valkey:6379" in ballet["REDIS_URL"]
