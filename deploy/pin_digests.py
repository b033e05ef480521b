"""Pin prod's images by digest, after a push: the tags the manifests name, resolved in the registry.

A tag can be moved; a digest names one build. For each image in components/prod (its `newName`,
your registry) at the tag components/images gives it, this asks the registry for the digest and
writes `digest: sha256:...` beside the `newName` (kustomize then renders `name@sha256:...`).
Run it after pushing both images; rerun it after the next push:

    python deploy/pin_digests.py                       # crane, else docker buildx imagetools
    python deploy/pin_digests.py --dry-run             # print the references and digests only
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parent
PROD = DEPLOY / "components" / "prod" / "kustomization.yaml"
TAGS = DEPLOY / "components" / "images" / "kustomization.yaml"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def references(prod: Path = PROD, tags: Path = TAGS) -> dict[str, str]:
    """Each image's name in the manifests → the registry reference its digest is asked for."""
    tagged = {entry["name"]: entry["newTag"] for entry in yaml.safe_load(tags.read_text())["images"]}
    named = {entry["name"]: entry["newName"] for entry in yaml.safe_load(prod.read_text())["images"]}
    return {name: f"{named[name]}:{tagged[name]}" for name in named}


def registry_digest(reference: str) -> str:
    """The digest the registry holds for `reference`, by crane or by docker buildx imagetools."""
    if shutil.which("crane"):
        command = ["crane", "digest", reference]
    elif shutil.which("docker"):
        command = ["docker", "buildx", "imagetools", "inspect", reference, "--format", "{{json .Manifest}}"]
    else:
        raise SystemExit("neither crane nor docker is installed: one is needed to ask the registry")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout.strip()}")
    text = done.stdout.strip()
    digest = json.loads(text)["digest"] if text.startswith("{") else text
    if not DIGEST.fullmatch(digest):
        raise SystemExit(f"{reference}: the registry answered {digest!r}, not a sha256 digest")
    return digest


def pin(prod: Path, digests: dict[str, str]) -> str:
    """`prod`'s text with each named image's `digest:` set (added after its `newName`, or replaced),
    every other line, comments included, as it was."""
    lines = prod.read_text().splitlines(keepends=True)
    out: list[str] = []
    current: str | None = None
    for line in lines:
        entry = re.match(r"^(\s*)- name: (\S+)\s*$", line)
        if entry:
            current = entry.group(2)
        elif current and re.match(r"^\s+digest:", line):
            continue  # the old digest: replaced below
        out.append(line)
        named = re.match(r"^(\s*)newName: ", line)
        if current in digests and named:
            out.append(f"{named.group(1)}digest: {digests[current]}\n")
        if not line.startswith((" ", "-")) and not entry:
            current = None
    return "".join(out)


def main(
    argv: list[str] | None = None,
    resolve: Callable[[str], str] = registry_digest,
    prod: Path = PROD,
    tags: Path = TAGS,
) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dry-run", action="store_true", help="print the digests, change nothing")
    args = parser.parse_args(argv)
    digests = {}
    for name, reference in references(prod, tags).items():
        digests[name] = resolve(reference)
        print(f"{name}: {reference} -> {digests[name]}")
    if not args.dry_run:
        prod.write_text(pin(prod, digests))
        print(f"pinned in {prod}", file=sys.stderr)


if __name__ == "__main__":
    main()
