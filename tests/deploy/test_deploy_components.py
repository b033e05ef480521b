"""The optional components for a shared cluster (deploy/components: kueue, priority, quota,
monitoring), turned
on as deploy/README.md says: listed in an install overlay's `components:` before its
environment's, their pod-side parts in the matching `-sweep` overlay's build. Each renders alone
and with the others, on dev and prod, into valid objects that do what they are for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.deploy.test_deploy_schemas import K8S_VERSIONS
from tests.deploy.workloads import OPTIONAL, OVERLAYS, find, pods, quantity, ray_cluster_spec, turned_on

Resource = dict[str, Any]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
COMBINATIONS = [(name,) for name in OPTIONAL] + [OPTIONAL]  # alone, and together


@pytest.mark.parametrize("env", OVERLAYS)
@pytest.mark.parametrize("chosen", COMBINATIONS, ids="+".join)
def test_each_component_renders_alone_and_with_the_others(
    tmp_path: Path, env: str, chosen: tuple[str, ...]
) -> None:
    resources = turned_on(tmp_path, env, chosen)
    kinds = {r["kind"] for r in resources}
    assert ("LocalQueue" in kinds) == ("kueue" in chosen)
    assert ("PriorityClass" in kinds) == ("priority" in chosen)
    assert (
        {"ResourceQuota", "LimitRange"} <= kinds
        if "quota" in chosen
        else not {"ResourceQuota", "LimitRange"} & kinds
    )
    core = [r for r in resources if r["kind"] in ("PriorityClass", "ResourceQuota", "LimitRange")]
    for resource in core:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(resource, version, strict=True)
    ray = [r for r in resources if r["kind"] in ("RayCluster", "RayJob")]
    assert {r["kind"] for r in ray} == {"RayCluster", "RayJob"}
    if "kueue" in chosen:
        queue = find(resources, "LocalQueue", "sweeper")
        assert queue["metadata"]["namespace"] == "sweeper" and queue["spec"]["clusterQueue"]
        assert all(r["metadata"]["labels"][QUEUE_LABEL] == "sweeper" for r in ray)
    assert ("PodMonitor" in kinds) == ("monitoring" in chosen)
    if "monitoring" in chosen:
        monitor = find(resources, "PodMonitor", "sweeper-ray")
        selector = monitor["spec"]["selector"]["matchLabels"]
        assert [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]] == ["metrics"]  # KubeRay's 8080
        scrape = find(resources, "NetworkPolicy", "prometheus-scrapes-ray")
        assert scrape["spec"]["podSelector"]["matchLabels"] == selector
        (rule,) = scrape["spec"]["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 8080}]
        assert rule["from"] == [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ]
        for resource in ray:
            for pod in pods(resource):
                if pod.where.endswith("submitter"):
                    continue
                assert selector.items() <= pod.metadata["labels"].items(), pod.where  # every Ray node
                assert pod.metadata["annotations"]["prometheus.io/port"] == "8080", pod.where
    if "priority" in chosen:
        priority = find(resources, "PriorityClass", "sweeper-sweep")
        assert priority["value"] < 0 and priority["preemptionPolicy"] == "Never"  # below the default 0
        for resource in ray:
            for pod in pods(resource):
                assert pod.spec.get("priorityClassName") == "sweeper-sweep", pod.where


def pod_limits(resources: list[Resource]) -> dict[str, float]:
    """What every pod of `resources` holds at once at its limits, Ray worker groups at maxReplicas."""
    total: dict[str, float] = {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0, "pods": 0.0}
    for resource in resources:
        cluster = ray_cluster_spec(resource)
        groups = {g["groupName"]: g for g in cluster["workerGroupSpecs"]} if cluster else {}
        for pod in pods(resource):
            group = next((g for name, g in groups.items() if pod.where.endswith(f" {name}")), None)
            copies = group["maxReplicas"] if group else 1
            total["pods"] += copies
            for container in pod.spec["containers"]:
                for key in ("cpu", "memory", "nvidia.com/gpu"):
                    value = container.get("resources", {}).get("limits", {}).get(key)
                    total[key] += copies * (quantity(value) if value is not None else 0.0)
        if cluster and cluster.get("enableInTreeAutoscaling"):
            limits = cluster.get("autoscalerOptions", {}).get("resources", {}).get("limits", {})
            total["cpu"] += quantity(limits.get("cpu", "0"))
            total["memory"] += quantity(limits.get("memory", "0"))
    return total


def test_the_quota_holds_prods_install_at_full_scale_and_admits_every_container(tmp_path: Path) -> None:
    """The quota is sized so that prod's install fits at its largest (a RayJob's own cluster then
    shares what is left: under Kueue it waits for it); the LimitRange's maximum admits every
    container the manifests define (a larger one would be refused at admission)."""
    resources = turned_on(tmp_path, "prod", ("quota",))
    hard = find(resources, "ResourceQuota", "sweeper")["spec"]["hard"]
    held = pod_limits([r for r in resources if r["kind"] != "RayJob"])
    assert held["cpu"] <= quantity(hard["limits.cpu"]), held
    assert held["memory"] <= quantity(hard["limits.memory"]), held
    assert held["nvidia.com/gpu"] <= quantity(hard["requests.nvidia.com/gpu"]), held
    assert held["pods"] <= int(hard["pods"]), held
    (limit,) = find(resources, "LimitRange", "sweeper")["spec"]["limits"]
    for resource in resources:
        for pod in pods(resource):
            for container in pod.spec["containers"]:
                for key, most in limit["max"].items():
                    value = container.get("resources", {}).get("limits", {}).get(key)
                    assert value is None or quantity(value) <= quantity(most), (pod.where, key, value)
