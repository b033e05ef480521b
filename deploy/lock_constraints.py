"""Regenerate deploy/constraints.txt: the version of every package the images install, as installed here.

Both images (the CPU one for the head and the CUDA one for the GPU workers) install the project's
dependencies under this one file, so the two sides of a cluster run the same versions, and a
rebuild next month installs what was tested today. Run it in an environment where the project was
just installed (`pip install -e .`), after changing a dependency in pyproject.toml:

    python deploy/lock_constraints.py

Local version labels are dropped (torch `2.13.0+cpu` is pinned as `2.13.0`), so the CPU and the
CUDA builds of one torch release both satisfy the pin.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

DEPLOY = Path(__file__).resolve().parent
PYPROJECT = DEPLOY.parent / "pyproject.toml"
CONSTRAINTS = DEPLOY / "constraints.txt"
# Installed by the Dockerfile beside the project: MLflow's proxied artifact store on S3 (prod)
IMAGE_REQUIREMENTS = ("boto3>=1.34",)
HEADER = """\
# Written by deploy/lock_constraints.py from pyproject.toml and the versions installed where it ran;
# both images install under it (deploy/Dockerfile). Do not edit by hand: rerun the script.
"""


def roots() -> list[Requirement]:
    """The project's runtime dependencies and the image's own additions."""
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return [Requirement(text) for text in [*dependencies, *IMAGE_REQUIREMENTS]]


def pins(requirements: list[Requirement]) -> dict[str, str]:
    """Every package that `requirements` pull in, with extras and markers evaluated here, at its
    installed version; fails where one is missing or outside a specifier."""
    found: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = list(requirements)
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            installed = distribution(requirement.name)
        except PackageNotFoundError:
            raise SystemExit(f"{requirement} is not installed here: run `pip install -e .` first") from None
        if not requirement.specifier.contains(installed.version, prereleases=True):
            raise SystemExit(
                f"installed {requirement.name} {installed.version} does not satisfy {requirement}"
            )
        found[key[0]] = Version(installed.version).public
        for text in installed.requires or []:
            child = Requirement(text)
            extras = {"", *requirement.extras}
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                todo.append(child)
    return found


def render() -> str:
    return HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(pins(roots()).items()))


if __name__ == "__main__":
    CONSTRAINTS.write_text(render())
    print(f"wrote {CONSTRAINTS.relative_to(DEPLOY.parent)}")
