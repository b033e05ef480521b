"""Regenerate base/sweeps-configmap.yaml from configs/*.yaml.

Kustomize refuses files outside a kustomization's directory, so the ConfigMap the Ray pods mount
holds copies of the specs; run this after changing a spec (tests fail while a copy is stale):

    python deploy/sync_configs.py
"""

from __future__ import annotations

from pathlib import Path

DEPLOY = Path(__file__).resolve().parent
CONFIGS = DEPLOY.parent / "configs"
CONFIGMAP = DEPLOY / "base" / "sweeps-configmap.yaml"

HEADER = """\
# The sweep specs the RayJob and RayCluster mount read-only at /etc/sweeper/sweeps/: copies of
# configs/*.yaml, written by deploy/sync_configs.py (run it after editing a spec; do not edit here).
# yamllint disable rule:line-length
# (the specs' lines are copied as they are: their length is configs/' to choose, not this file's)
apiVersion: v1
kind: ConfigMap
metadata:
  name: sweeper-sweeps
  labels:
    app.kubernetes.io/part-of: sweeper
data:
"""


def render() -> str:
    """The ConfigMap's text: every spec as a literal block, in file-name order."""
    parts = [HEADER]
    for spec in sorted(CONFIGS.glob("*.yaml")):
        lines = spec.read_text().splitlines()
        parts.append(f"  {spec.name}: |\n")
        parts.extend(f"    {line}\n" if line.strip() else "\n" for line in lines)
    return "".join(parts)


if __name__ == "__main__":
    CONFIGMAP.write_text(render())
    print(f"wrote {CONFIGMAP.relative_to(DEPLOY.parent)}")
