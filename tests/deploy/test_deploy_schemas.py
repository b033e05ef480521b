"""Every rendered resource against its schema: core kinds with kubernetes-validate (strict), RayJob and
RayCluster against the KubeRay v1.7.0 CRDs with unknown fields forbidden.

The API server would prune an unknown field of a custom resource without a word, so a misspelt
`shutdownAfterJobFinish` would silently leave a GPU cluster running; forbidding unknown fields here
turns that into a test failure.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.deploy.workloads import find, kustomize, render_overlay

# The oldest Kubernetes minor we claim to support, and the newest the package knows.
K8S_VERSIONS = ("1.30", kubernetes_validate.latest_version())
CRD_FILES = {"RayJob": "ray.io_rayjobs.yaml", "RayCluster": "ray.io_rayclusters.yaml"}


def _strict(schema: Any) -> Any:
    """The schema with `additionalProperties: false` wherever it lists properties and does not
    preserve unknown fields (the API server's pruning, made an error)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if "properties" in out:
        out["properties"] = {name: _strict(sub) for name, sub in out["properties"].items()}
        if not out.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in out:
            out["additionalProperties"] = False
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _strict(out[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in out:
            out[key] = [_strict(sub) for sub in out[key]]
    return out


@cache
def crd_validator(crd_dir: Path, kind: str) -> jsonschema.protocols.Validator:
    text = (crd_dir / CRD_FILES[kind]).read_text()
    crd = yaml.load(text, Loader=yaml.CSafeLoader)  # libyaml: the CRDs are megabytes
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = _strict(version["schema"]["openAPIV3Schema"])
    return jsonschema.Draft202012Validator(schema)


def crd_errors(crd_dir: Path, resource: dict[str, Any]) -> list[str]:
    validator = crd_validator(crd_dir, resource["kind"])
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in validator.iter_errors(resource)
    ]


def test_core_resources_are_valid_in_strict_mode(resources: list[dict[str, Any]]) -> None:
    core = [r for r in resources if not r["apiVersion"].startswith("ray.io/")]
    assert core
    failures = []
    for resource in core:
        for version in K8S_VERSIONS:
            try:
                kubernetes_validate.validate(resource, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                failures.append(f"{resource['kind']}/{resource['metadata']['name']} (k8s {version}): {exc}")
    assert not failures, "\n".join(failures)


def test_ray_resources_match_the_kuberay_crds(resources: list[dict[str, Any]], crd_dir: Path) -> None:
    ray = [r for r in resources if r["apiVersion"].startswith("ray.io/")]
    assert {r["kind"] for r in ray} == {"RayJob", "RayCluster"}
    assert all(r["apiVersion"] == "ray.io/v1" for r in ray)
    failures = [
        f"{r['kind']}/{r['metadata']['name']}: {error}" for r in ray for error in crd_errors(crd_dir, r)
    ]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("path", "misspelt"),
    [
        (("spec",), "shutdownAfterJobFinish"),
        (("spec", "rayClusterSpec"), "enableInTreeAutoscale"),
        (("spec", "rayClusterSpec", "workerGroupSpecs", 0), "maxReplica"),
        (("spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "containers", 0), "resource"),
        (("spec", "rayClusterSpec", "workerGroupSpecs", 0, "template", "spec"), "toleration"),
    ],
)
def test_a_misspelt_ray_field_fails(crd_dir: Path, path: tuple[Any, ...], misspelt: str) -> None:
    job = copy.deepcopy(find(render_overlay("dev"), "RayJob", "sweeper-denoise"))
    assert not crd_errors(crd_dir, job)
    node: Any = job
    for key in path:
        node = node[key]
    node[misspelt] = node.get(misspelt[:-1], True)
    errors = crd_errors(crd_dir, job)
    assert any(misspelt in e and "Additional properties" in e for e in errors), errors


def test_a_misspelt_core_field_fails() -> None:
    deployment = copy.deepcopy(find(render_overlay("dev"), "Deployment", "mlflow"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="securityContex"):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[-1], strict=True)


def test_a_patch_that_no_longer_applies_fails_the_render(tmp_path: Path) -> None:
    """The overlays guard their positional patches with JSON-patch `test` operations (the GPU
    group is the second one): kustomize must stop there rather than patch the wrong group."""
    (tmp_path / "base").mkdir()
    (tmp_path / "overlay").mkdir()
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"}}
    cluster["spec"] = {"workerGroupSpecs": [{"groupName": "cpu"}, {"groupName": "cpu-large"}]}
    (tmp_path / "base" / "c.yaml").write_text(yaml.safe_dump(cluster))
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [c.yaml]\n")
    patch = "- {op: test, path: /spec/workerGroupSpecs/1/groupName, value: gpu}"
    kustomization = {
        "resources": ["../base"],
        "patches": [{"target": {"kind": "RayCluster"}, "patch": patch}],
    }
    (tmp_path / "overlay" / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    with pytest.raises(RuntimeError, match="test failed"):
        kustomize(tmp_path / "overlay")


def test_the_rayjob_runs_the_rayclusters_cluster(resources: list[dict[str, Any]]) -> None:
    """Each overlay copies the RayCluster's spec, as patched, into the RayJob (`replacements`)."""
    job = find(resources, "RayJob", "sweeper-denoise")
    assert job["spec"]["rayClusterSpec"] == find(resources, "RayCluster", "sweeper")["spec"]
