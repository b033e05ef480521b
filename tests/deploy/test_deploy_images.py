"""The images: tagged by the project's version through kustomize's `images:`, pulled so that a node
never runs an older build, built by one Dockerfile under one constraints file, dependencies before
source."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.workloads import (
    DEPLOY,
    REPO,
    containers,
    head_container,
    kustomize,
    project_version,
    ray_cluster_spec,
    ray_resources,
    ray_version_pin,
)

Resource = dict[str, Any]
SWEEPER_IMAGES = ("sweeper-ray", "sweeper-ray-gpu")


def split_image(reference: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of an image reference; a registry port is not mistaken for a tag."""
    name, _, digest = reference.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :], digest or None
    return name, None, digest or None


def expected_tag(image: str) -> str:
    """The tag of one build of the project: its version, then the Ray, Python (and CUDA) it runs on."""
    return f"{project_version()}-ray{ray_version_pin()}-py311" + ("-cu128" if image.endswith("-gpu") else "")


def base_images() -> dict[str, dict[str, str]]:
    kustomization = yaml.safe_load((DEPLOY / "components" / "images" / "kustomization.yaml").read_text())
    return {entry["name"]: entry for entry in kustomization["images"]}


def test_the_base_tags_both_images_by_the_projects_version() -> None:
    images = base_images()
    assert set(images) == set(SWEEPER_IMAGES)
    for name, entry in images.items():
        assert entry["newTag"] == expected_tag(name), f"{name}: tag it {expected_tag(name)}"


def test_every_sweeper_container_runs_this_builds_image(resources: list[Resource]) -> None:
    """The head (CPU image) and the GPU workers run the same build: one version in both tags."""
    found = set()
    for resource in resources:
        for c in containers(resource):
            if "image" not in c.body or not split_image(c.body["image"])[0].endswith(SWEEPER_IMAGES):
                continue
            name, tag, digest = split_image(c.body["image"])
            image = name.rsplit("/", 1)[-1]
            found.add(image)
            assert digest is not None or tag == expected_tag(image), c.where
    assert "sweeper-ray" in found


def test_a_node_never_runs_an_older_build_of_a_tag(resources: list[Resource], overlay: str) -> None:
    """Every image from a registry is pulled Always or pinned by digest; only dev's sweeper images,
    loaded onto the nodes with `kind load` and never pulled, may be used as present."""
    for resource in resources:
        for c in containers(resource):
            image = c.body.get("image") or (
                head_container(resource)["image"] if c.where.endswith("autoscaler") else None
            )
            if image is None:
                continue
            name, _, digest = split_image(image)
            policy = c.body.get("imagePullPolicy")
            if overlay == "dev" and name in SWEEPER_IMAGES:
                assert policy == "IfNotPresent", f"{c.where}: a loaded image is not pulled"
            else:
                assert policy == "Always" or digest is not None, f"{c.where}: {image} {policy}"


def test_one_ray_version_in_pyproject_the_crs_and_the_dockerfile(resources: list[Resource]) -> None:
    version = ray_version_pin()
    for resource in ray_resources(resources):
        assert ray_cluster_spec(resource)["rayVersion"] == version
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(rf"^ARG RAY_VERSION={re.escape(version)}$", dockerfile, re.M)
    assert re.search(r"^FROM rayproject/ray:\$\{RAY_VERSION\}-\$\{VARIANT\}$", dockerfile, re.M)


def test_cpu_and_gpu_images_have_distinct_names(resources: list[Resource]) -> None:
    for resource in ray_resources(resources):
        head, _, _ = split_image(head_container(resource)["image"])
        for group in ray_cluster_spec(resource)["workerGroupSpecs"]:
            worker, _, _ = split_image(group["template"]["spec"]["containers"][0]["image"])
            assert worker.endswith("sweeper-ray-gpu") == (group["groupName"] == "gpu")
            assert (worker == head) == (group["groupName"] == "cpu")


def test_prod_pulls_from_a_registry(overlay: str, resources: list[Resource]) -> None:
    if overlay != "prod":
        return
    for resource in resources:
        for c in containers(resource):
            if "sweeper-ray" in c.body.get("image", ""):
                assert "/" in split_image(c.body["image"])[0], f"{c.where}: not from a registry"


# --- the Dockerfile ------------------------------------------------------------------------------


def dockerfile_lines() -> list[str]:
    """Instructions, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (DEPLOY / "Dockerfile").read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_dependencies_are_installed_under_the_constraints_before_the_source_is_copied() -> None:
    """A code change rebuilds one small layer, never torch's; both builds (one Dockerfile, the
    variant a build argument) resolve every dependency under deploy/constraints.txt."""
    lines = dockerfile_lines()
    copies = [i for i, line in enumerate(lines) if line.startswith("COPY")]
    installs = [i for i, line in enumerate(lines) if line.startswith("RUN") and "pip install" in line]
    dependencies, project = installs
    first_copy = lines[copies[0]]
    assert "pyproject.toml" in first_copy and "deploy/constraints.txt" in first_copy
    assert (
        copies[0]
        < dependencies
        < min(i for i in copies if re.search(r"\bsweeper\b|\btrainables\b", lines[i]))
    )
    for command in re.split(r"&&", lines[dependencies]):
        if "pip install" in command:
            assert "--constraint constraints.txt" in command, command
    assert "torch" in lines[dependencies] and "--no-deps" in lines[project] and project > copies[-2]
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert "!deploy/constraints.txt" in ignored and ignored.index("!deploy/constraints.txt") > ignored.index(
        "deploy/*"
    )


def test_the_dockerfile_runs_as_the_ray_user_with_configs_at_a_fixed_path() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert re.search(r"^COPY configs /opt/sweeper/configs$", dockerfile, re.M)


def test_the_constraints_pin_every_dependency_within_its_specifier() -> None:
    """Written by deploy/lock_constraints.py: it must pin what pyproject.toml asks for, at versions
    pyproject.toml allows (a stale file after a dependency change fails here)."""
    lines = (DEPLOY / "constraints.txt").read_text().splitlines()
    assert lines[0].startswith("# Written by deploy/lock_constraints.py")
    pins = {}
    for line in lines:
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and canonicalize_name(name) == name, line
            pins[name] = version
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in map(Requirement, [*dependencies, "boto3>=1.34"]):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not pinned: run python deploy/lock_constraints.py"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} vs {requirement}"
        )
    assert pins["ray"] == ray_version_pin()


def test_the_readme_builds_the_tags_the_manifests_run() -> None:
    readme = (DEPLOY / "README.md").read_text()
    for name, entry in base_images().items():
        assert f"-t {name}:{entry['newTag']} " in readme, name


def test_prods_images_are_pinned_by_digest_after_a_push(tmp_path: Path) -> None:
    """deploy/pin_digests.py writes the registry's digest beside each prod image's newName, and
    prod then runs `name@sha256:...` everywhere; the next push's digests replace the last ones and
    nothing else in the file changes."""
    import importlib.util
    import shutil

    loader = importlib.util.spec_from_file_location("pin_digests", DEPLOY / "pin_digests.py")
    pinning = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(pinning)
    deploy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, deploy, ignore=shutil.ignore_patterns("__pycache__"))
    prod, tags = (
        deploy / "components" / "prod" / "kustomization.yaml",
        deploy / "components" / "images" / "kustomization.yaml",
    )
    before = prod.read_text()
    asked: list[str] = []
    for push in ("a", "b"):

        def resolve(reference: str, push: str = push) -> str:
            asked.append(reference)
            return "sha256:" + (push + str(len(reference) % 10)) * 32

        pinning.main([], resolve, prod, tags)
        rendered = kustomize(deploy / "overlays" / "prod") + kustomize(deploy / "overlays" / "prod-sweep")
        images = {c.body["image"] for r in rendered for c in containers(r) if "image" in c.body}
        images.discard(None)
        sweeper = {i for i in images if "sweeper-ray" in i}
        assert sweeper and all(
            re.fullmatch(r"registry\.example\.com/ml/sweeper-ray(-gpu)?@sha256:[0-9a-f]{64}", i)
            for i in sweeper
        )
        assert all(f"sha256:{push}" in i for i in sweeper), sweeper
    assert asked[:2] == [
        f"registry.example.com/ml/sweeper-ray:{expected_tag('sweeper-ray')}",
        f"registry.example.com/ml/sweeper-ray-gpu:{expected_tag('sweeper-ray-gpu')}",
    ]
    after = [line for line in prod.read_text().splitlines() if "digest:" not in line]
    assert after == before.splitlines()
