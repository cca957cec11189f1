"""manifests/pools/gpu/: a second agent pool's workers, applied besides the base.

`kustomize` is not a package of the registries this project installs from, so
the kustomization is rendered here: it may only list resource files (checked
below, so rendering them is all kustomize would do), and every object is
validated against Kubernetes' JSON schemas like the base's. Then: the pool's
worker runs `ballet worker --pool gpu` on GPU nodes, is confined as the base
worker is, and no selector of either pool's objects picks the other's pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
POOL = ROOT / "manifests" / "pools" / "gpu"
VERSIONS = ("1.30.0", "1.37.0")  # as tests/deploy/test_manifests.py

Obj = dict[str, Any]


def rendered(directory: Path) -> list[Obj]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert set(kustomization) <= {"apiVersion", "kind", "resources"}, "render it with kustomize"
    objects: list[Obj] = []
    for resource in kustomization["resources"]:
        objects += [d for d in yaml.safe_load_all((directory / resource).read_text()) if d]
    return objects


def base(kind: str, name: str) -> Obj:
    for path in (ROOT / "manifests").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == kind and doc["metadata"]["name"] == name:
                found: Obj = doc
                return found
    raise AssertionError(f"no {kind}/{name} in manifests/")


def pool(kind: str) -> Obj:
    (found,) = (o for o in rendered(POOL) if o["kind"] == kind)
    return found


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_of_the_pool_is_valid_kubernetes(version: str) -> None:
    objects = rendered(POOL)
    assert sorted(o["kind"] for o in objects) == ["Deployment", "NetworkPolicy", "Service"]
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_the_pool_worker_serves_the_pool_on_gpu_nodes_confined_as_the_base_worker() -> None:
    worker, default = pool("Deployment"), base("Deployment", "ballet-worker")
    pod, default_pod = worker["spec"]["template"]["spec"], default["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (default_container,) = default_pod["containers"]
    args = container["args"]
    assert args[0] == "worker" and args[args.index("--pool") + 1] == "gpu"
    assert pod["nodeSelector"] and pod["tolerations"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert container["securityContext"] == default_container["securityContext"]
    assert pod["securityContext"] == default_pod["securityContext"]
    assert pod["automountServiceAccountToken"] is False
    assert container["volumeMounts"] == default_container["volumeMounts"]
    assert {v["name"] for v in pod["volumes"]} == {v["name"] for v in default_pod["volumes"]}
    assert worker["spec"]["strategy"] == default["spec"]["strategy"]


def test_neither_pool_selects_the_other_pool_pods() -> None:
    gpu = pool("Deployment")
    default = base("Deployment", "ballet-worker")
    gpu_pods = gpu["spec"]["template"]["metadata"]["labels"]
    default_pods = default["spec"]["template"]["metadata"]["labels"]
    assert selects(gpu["spec"]["selector"]["matchLabels"], gpu_pods)
    assert not selects(default["spec"]["selector"]["matchLabels"], gpu_pods)
    assert not selects(gpu["spec"]["selector"]["matchLabels"], default_pods)
    assert selects(pool("Service")["spec"]["selector"], gpu_pods)
    assert not selects(base("Service", "ballet-worker-metrics")["spec"]["selector"], gpu_pods)


def test_the_pool_workers_may_talk_to_whom_the_default_workers_may() -> None:
    policy, default = pool("NetworkPolicy"), base("NetworkPolicy", "ballet-worker")
    assert selects(
        policy["spec"]["podSelector"]["matchLabels"],
        pool("Deployment")["spec"]["template"]["metadata"]["labels"],
    )
    same = {k: v for k, v in policy["spec"].items() if k != "podSelector"}
    assert same == {k: v for k, v in default["spec"].items() if k != "podSelector"}
    # Valkey takes connections from every Ballet pod, the pool's workers included.
    valkey = base("NetworkPolicy", "ballet-valkey")["spec"]["ingress"][0]["from"][0]
    assert selects(
        valkey["podSelector"]["matchLabels"],
        pool("Deployment")["spec"]["template"]["metadata"]["labels"],
    )
