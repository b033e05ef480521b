"""Where the pods and containers are in rendered manifests, core and KubeRay alike.

The policy tests ask the same questions of a Deployment's pod template and of a RayJob's head,
worker and submitter templates; these helpers give them one list to walk, so a pod template
added to a new kind of resource cannot slip past the checks unnoticed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.deploy.kustomize_render import render

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OVERLAYS = ("dev", "prod")
CRD_DIR = Path(__file__).parent / "kuberay-crds-v1.7.0"  # vendored, with its licence

Resource = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    """A pod template found in a resource, named for messages (e.g. `RayJob/x head`)."""

    where: str
    metadata: dict[str, Any]
    spec: dict[str, Any]


@dataclass(frozen=True)
class Container:
    """A container (or KubeRay's autoscaler sidecar, configured through autoscalerOptions)."""

    where: str
    body: dict[str, Any]
    pod: Pod


def render_overlay(name: str) -> list[Resource]:
    return render(DEPLOY / "overlays" / name)


def ray_cluster_spec(resource: Resource) -> dict[str, Any] | None:
    """The RayCluster spec of a RayCluster, or the embedded one of a RayJob."""
    if resource["kind"] == "RayCluster":
        return resource["spec"]
    if resource["kind"] == "RayJob":
        return resource["spec"].get("rayClusterSpec")
    return None


def pods(resource: Resource) -> Iterator[Pod]:
    """Every pod template in a resource."""
    name = f"{resource['kind']}/{resource['metadata']['name']}"
    spec = resource.get("spec", {})
    if resource["kind"] in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        yield Pod(name, spec["template"].get("metadata", {}), spec["template"]["spec"])
    if resource["kind"] == "Pod":
        yield Pod(name, resource["metadata"], spec)
    if resource["kind"] == "RayJob" and "submitterPodTemplate" in spec:
        template = spec["submitterPodTemplate"]
        yield Pod(f"{name} submitter", template.get("metadata", {}), template["spec"])
    cluster = ray_cluster_spec(resource)
    if cluster is not None:
        head = cluster["headGroupSpec"]["template"]
        yield Pod(f"{name} head", head.get("metadata", {}), head["spec"])
        for group in cluster.get("workerGroupSpecs", []):
            template = group["template"]
            yield Pod(
                f"{name} worker group {group['groupName']}", template.get("metadata", {}), template["spec"]
            )


def containers(resource: Resource) -> Iterator[Container]:
    """Every container of every pod template, plus the autoscaler sidecar KubeRay adds to a head."""
    for pod in pods(resource):
        for kind in ("initContainers", "containers"):
            for container in pod.spec.get(kind, []):
                yield Container(f"{pod.where} {kind[:-1]} {container['name']}", container, pod)
    cluster = ray_cluster_spec(resource)
    if cluster is not None and cluster.get("enableInTreeAutoscaling"):
        head = next(p for p in pods(resource) if p.where.endswith(" head"))
        yield Container(f"{head.where} autoscaler", cluster.get("autoscalerOptions", {}), head)


def find(resources: list[Resource], kind: str, name: str) -> Resource:
    matches = [r for r in resources if r["kind"] == kind and r["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind}/{name}, found {len(matches)}"
    return matches[0]


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container.get("env", [])}
