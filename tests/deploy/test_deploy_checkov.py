"""checkov, a scanner others wrote, over what a platform engineer would scan: both environments as
kustomize renders them (install and sweep), prod again with every optional component turned on
(`prod-shared`), and the pods the KubeRay operator creates from their RayJob and RayCluster
(checkov does not know those two kinds, so without the pods the Ray containers would go unscanned).

Every failure must be listed, with its argument, in checkov-skips.yaml beside this file; every entry
there must still match a failure, so the list cannot outlive what it excuses.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.workloads import OVERLAYS, kuberay_pods, render_overlay, render_shared

# One checkov scan takes most of a minute; on one xdist worker the scan runs once and checkov's
# environment is not installed by two workers at the same time.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("checkov")]

SKIPS = Path(__file__).parent / "checkov-skips.yaml"
SCANNED = (*OVERLAYS, "prod-shared")  # the folders checkov reads, one per render
REGRESSION = "regression"  # one more folder: prod's GPU worker pod, made privileged


def rendered(scanned: str) -> list[dict[str, Any]]:
    return render_shared() if scanned == "prod-shared" else render_overlay(scanned)


# kubernetes checks only, JSON with the passed checks too, offline (no guideline download)
CHECKOV_OPTIONS = ("--framework", "kubernetes", "--compact", "--skip-download", "--output", "json")


@dataclass(frozen=True)
class Failure:
    check: str
    name: str
    overlay: str
    resource: str
    keys: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.check} ({self.name}) in {self.overlay}: {self.resource} {list(self.keys)}"


@dataclass(frozen=True)
class Scan:
    failures: list[Failure]
    resources: set[tuple[str, str]]  # (overlay, resource) of everything checkov checked


def skip_matches(skip: dict[str, Any], failure: Failure) -> bool:
    return (
        skip["check"] == failure.check
        and failure.overlay in skip["overlays"]
        and any(fnmatchcase(failure.resource, pattern) for pattern in skip["resources"])
        and ("keys" not in skip or set(failure.keys) <= set(skip["keys"]))
    )


def load_skips() -> list[dict[str, Any]]:
    skips = yaml.safe_load(SKIPS.read_text())
    for skip in skips:
        assert set(skip) <= {"check", "overlays", "resources", "keys", "why"}, skip
        assert skip["why"].strip() and set(skip["overlays"]) <= set(SCANNED), skip
    return skips


def run_checkov(checkov: Path, folder: Path) -> Scan:
    """checkov's findings over every manifest under `folder`."""
    done = subprocess.run(
        [str(checkov), "-d", str(folder), *CHECKOV_OPTIONS],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: some check failed
    report = json.loads(done.stdout)
    results = (report[0] if isinstance(report, list) else report)["results"]
    failures, resources = [], set()
    for outcome in ("passed_checks", "failed_checks"):
        for check in results[outcome]:
            overlay = Path(check["file_path"]).parts[1]
            resources.add((overlay, check["resource"]))
            if outcome == "failed_checks":
                keys = tuple(check.get("check_result", {}).get("evaluated_keys") or ())
                failures.append(
                    Failure(check["check_id"], check["check_name"], overlay, check["resource"], keys)
                )
    return Scan(failures, resources)


@pytest.fixture(scope="module")
def scan(checkov: Path, tmp_path_factory: pytest.TempPathFactory) -> Scan:
    """One checkov run over every render: <name>/manifests.yaml as rendered, and <name>/pods.yaml
    with the pods KubeRay creates from them; and over the regression, a privileged pod."""
    folder = tmp_path_factory.mktemp("checkov")
    renders = {overlay: rendered(overlay) for overlay in SCANNED}
    for overlay, resources in renders.items():
        (folder / overlay).mkdir()
        (folder / overlay / "manifests.yaml").write_text(yaml.safe_dump_all(resources, sort_keys=False))
        pods = [pod for resource in resources for pod in kuberay_pods(resource)]
        (folder / overlay / "pods.yaml").write_text(yaml.safe_dump_all(pods, sort_keys=False))
    cluster = next(r for r in renders["prod"] if r["kind"] == "RayCluster")
    (pod, *_) = [p for p in kuberay_pods(cluster) if p["metadata"]["name"].endswith("-gpu")]
    pod["spec"]["containers"][0]["securityContext"]["privileged"] = True
    (folder / REGRESSION).mkdir()
    (folder / REGRESSION / "pods.yaml").write_text(yaml.safe_dump(pod))
    return run_checkov(checkov, folder)


def test_every_resource_and_every_kuberay_pod_is_scanned(scan: Scan) -> None:
    for overlay in SCANNED:
        resources = rendered(overlay)
        expected = {
            f"{r['kind']}.sweeper.{r['metadata']['name']}"
            for r in resources
            if r["kind"] in ("Deployment", "StatefulSet", "CronJob")
        }
        expected |= {f"Pod.sweeper.{p['metadata']['name']}" for r in resources for p in kuberay_pods(r)}
        assert any(name.endswith("-gpu") for name in expected) == overlay.startswith("prod")
        scanned = {resource for where, resource in scan.resources if where == overlay}
        assert expected <= scanned, sorted(expected - scanned)


def test_every_failed_check_is_listed_with_its_reason(scan: Scan) -> None:
    skips = load_skips()
    scanned = [f for f in scan.failures if f.overlay in SCANNED]
    unlisted = [f for f in scanned if not any(skip_matches(skip, f) for skip in skips)]
    assert not unlisted, f"checkov failures not in {SKIPS.name}:\n" + "\n".join(map(str, unlisted))


def test_every_listed_skip_still_fires(scan: Scan) -> None:
    stale = [s for s in load_skips() if not any(skip_matches(s, f) for f in scan.failures)]
    assert not stale, f"entries of {SKIPS.name} that match no failure: remove them\n" + "\n".join(
        f"{s['check']} {s['overlays']} {s['resources']}" for s in stale
    )


def test_a_regression_is_reported(scan: Scan) -> None:
    """The scan catches what the manifests avoid: a privileged worker is a failure no skip covers
    (its failures matched against prod's skips, the overlay it came from)."""
    failures = [replace(f, overlay="prod") for f in scan.failures if f.overlay == REGRESSION]
    unlisted = [f for f in failures if not any(skip_matches(skip, f) for skip in load_skips())]
    assert {f.check for f in unlisted} >= {"CKV_K8S_16"}, unlisted  # Container should not be privileged
