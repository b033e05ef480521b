"""What the schemas cannot say about the manifests: hardening, secrets, versions, Ray's shape, the
wiring between the sweep, PostgreSQL and MLflow, and who may reach whom on the network.

Each check runs on every overlay as rendered, because an overlay's patch can undo what the base
got right.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import yaml
from sqlalchemy.engine import make_url

from tests.deploy.kustomize_render import split_image
from tests.deploy.workloads import (
    DEPLOY,
    REPO,
    Container,
    Pod,
    containers,
    env_of,
    find,
    pods,
    ray_cluster_spec,
    render_overlay,
)

Resource = dict[str, Any]
CREDENTIAL_IN_URL = re.compile(r"://[^/\s:@]+:(?!\$)[^/\s@]+@")  # a $VARIABLE is not a literal
SECRET_ENV_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|ACCESS_KEY|CREDENTIAL")
# `sweeper launch` options that take a value (the rest of the entrypoint's words are spec paths)
LAUNCH_VALUE_OPTIONS = {
    "--profile",
    "--max-trials",
    "--time-budget",
    "--address",
    "--storage",
    "--tracking-uri",
    "--results",
}


def ray_version_pin() -> str:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if re.match(r"ray(\[.*\])?==", d)]
    return pin.split("==")[1]


def ray_resources(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if ray_cluster_spec(r) is not None]


def head_container(resource: Resource) -> dict[str, Any]:
    return ray_cluster_spec(resource)["headGroupSpec"]["template"]["spec"]["containers"][0]


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


# --- hardening -------------------------------------------------------------------------------


def hardening_problems(c: Container) -> list[str]:
    """What keeps a container from the restricted Pod Security Standard, plus our own rules:
    requests and limits, and a read-only root with a writable /tmp."""
    body, pod_context = c.body, c.pod.spec.get("securityContext", {})
    context = body.get("securityContext", {})
    capabilities = context.get("capabilities", {})
    problems = [
        f"no {kind} for {sorted(missing)}"
        for kind in ("requests", "limits")
        if (missing := {"cpu", "memory"} - set(body.get("resources", {}).get(kind, {})))
    ]
    if context.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation is not false")
    if context.get("privileged"):
        problems.append("privileged")
    if capabilities.get("drop") != ["ALL"] or capabilities.get("add"):
        problems.append("capabilities are not drop [ALL]")
    if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
        problems.append("runAsNonRoot is not set")
    if context.get("runAsUser", pod_context.get("runAsUser")) == 0:
        problems.append("runs as uid 0")
    if context.get("seccompProfile", pod_context.get("seccompProfile", {})).get("type") != "RuntimeDefault":
        problems.append("seccompProfile is not RuntimeDefault")
    if context.get("readOnlyRootFilesystem") is not True:
        problems.append("root filesystem is writable")
    elif not any(m["mountPath"] == "/tmp" for m in body.get("volumeMounts", [])):
        problems.append("read-only root without a writable /tmp")
    return [f"{c.where}: {problem}" for problem in problems]


def test_every_container_is_hardened(resources: list[Resource]) -> None:
    problems = [p for resource in resources for c in containers(resource) for p in hardening_problems(c)]
    assert not problems, "\n".join(problems)


def test_pods_share_nothing_with_the_node_and_hold_no_api_token_they_do_not_need(
    resources: list[Resource],
) -> None:
    problems = []
    for resource in resources:
        cluster = ray_cluster_spec(resource)
        for pod in pods(resource):
            for field in ("hostNetwork", "hostPID", "hostIPC"):
                if pod.spec.get(field):
                    problems.append(f"{pod.where}: {field}")
            if any(port.get("hostPort") for c in pod.spec["containers"] for port in c.get("ports", [])):
                problems.append(f"{pod.where}: hostPort")
            # the head's autoscaler sidecar talks to the Kubernetes API; nothing else does
            needs_token = pod.where.endswith(" head") and cluster.get("enableInTreeAutoscaling")
            if not needs_token and pod.spec.get("automountServiceAccountToken") is not False:
                problems.append(f"{pod.where}: mounts a service account token it does not use")
    assert not problems, "\n".join(problems)


def test_the_namespace_enforces_the_restricted_pod_security_standard(resources: list[Resource]) -> None:
    namespace = find(resources, "Namespace", "sweeper")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert all(r["metadata"].get("namespace") == "sweeper" for r in resources if r["kind"] != "Namespace")


# --- secrets ---------------------------------------------------------------------------------


def _strings(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return [node] if isinstance(node, str) else []


def test_no_secret_literal_outside_the_examples(resources: list[Resource]) -> None:
    assert not [r for r in resources if r["kind"] == "Secret"], "Secrets are created by hand, not committed"
    for path in DEPLOY.rglob("*"):
        if path.is_file() and not path.name.endswith(".example.yaml"):
            text = path.read_text()
            assert not CREDENTIAL_IN_URL.search(text), f"{path}: a URL with a password"
            assert not re.search(r"^kind:\s*Secret\b", text, re.M), f"{path}: a Secret outside *.example.yaml"
    for resource in resources:
        assert not CREDENTIAL_IN_URL.search("\n".join(_strings(resource))), resource["metadata"]["name"]
        assert "runtimeEnvYAML" not in resource.get("spec", {}), "runtimeEnvYAML is stored in plain text"
        for c in containers(resource):
            for name, item in env_of(c.body).items():
                if SECRET_ENV_NAME.search(name):
                    assert "secretKeyRef" in item.get("valueFrom", {}), (
                        f"{c.where}: {name} is not from a Secret"
                    )


def test_the_example_secrets_hold_placeholders_only() -> None:
    examples = list(DEPLOY.rglob("*.example.yaml"))
    assert examples
    for path in examples:
        for secret in yaml.safe_load_all(path.read_text()):
            assert secret["kind"] == "Secret" and "data" not in secret
            for key, value in secret["stringData"].items():
                assert "CHANGE-ME" in value or value.startswith("https://"), f"{path}: {key} looks real"


def test_the_databases_and_users_of_optuna_and_mlflow_are_separate() -> None:
    secrets = {
        s["metadata"]["name"]: s for s in yaml.safe_load_all((DEPLOY / "secrets.example.yaml").read_text())
    }
    optuna = make_url(secrets["sweeper-optuna-storage"]["stringData"]["url"])
    mlflow = make_url(secrets["sweeper-mlflow-store"]["stringData"]["url"])
    assert optuna.get_backend_name() == mlflow.get_backend_name() == "postgresql"
    # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; the image has psycopg2 only
    assert optuna.drivername == mlflow.drivername == "postgresql+psycopg2"
    assert optuna.username != mlflow.username and optuna.database != mlflow.database
    init = find(render_overlay("dev"), "ConfigMap", "postgres-init")["data"]["10-sweeper-databases.sh"]
    for url, key in ((optuna, "optuna-password"), (mlflow, "mlflow-password")):
        assert f"CREATE ROLE {url.username} LOGIN" in init
        assert f"CREATE DATABASE {url.database} OWNER {url.username}" in init
        assert url.password == secrets["sweeper-postgres"]["stringData"][key]


# --- Ray ---------------------------------------------------------------------------------------


def test_one_ray_version_in_pyproject_the_crs_the_images_and_the_dockerfile(
    resources: list[Resource],
) -> None:
    version = ray_version_pin()
    for resource in ray_resources(resources):
        assert ray_cluster_spec(resource)["rayVersion"] == version
        for c in containers(resource):
            if "image" in c.body:
                name, tag, _ = split_image(c.body["image"])
                assert name.rsplit("/", 1)[-1].startswith("sweeper-ray"), c.where
                assert tag is not None and tag.startswith(f"{version}-py311"), c.where
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(rf"^ARG RAY_VERSION={re.escape(version)}$", dockerfile, re.M)
    assert re.search(r"^FROM rayproject/ray:\$\{RAY_VERSION\}-\$\{VARIANT\}$", dockerfile, re.M)


def test_cpu_and_gpu_images_have_distinct_names(resources: list[Resource]) -> None:
    for resource in ray_resources(resources):
        cluster = ray_cluster_spec(resource)
        head, _, _ = split_image(head_container(resource)["image"])
        for group in cluster["workerGroupSpecs"]:
            worker, tag, _ = split_image(group["template"]["spec"]["containers"][0]["image"])
            assert worker != head and "-cu" in tag


def test_the_head_takes_no_trials_and_gpu_workers_scale_from_zero(resources: list[Resource]) -> None:
    for resource in ray_resources(resources):
        cluster = ray_cluster_spec(resource)
        assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
        assert cluster["enableInTreeAutoscaling"] is True
        assert cluster["authOptions"]["mode"] == "token"
        assert cluster["workerGroupSpecs"]
        for group in cluster["workerGroupSpecs"]:
            where = f"{resource['metadata']['name']} {group['groupName']}"
            assert group["minReplicas"] == 0, where
            assert group["minReplicas"] <= group.get("replicas", 0) <= group["maxReplicas"], where
            assert group["maxReplicas"] >= 1, where
            pod = group["template"]["spec"]
            resources_ = pod["containers"][0]["resources"]
            assert int(resources_["limits"]["nvidia.com/gpu"]) >= 1, where
            assert resources_["requests"].get("nvidia.com/gpu") in (
                None,
                resources_["limits"]["nvidia.com/gpu"],
            )
            assert any(
                t["key"] == "nvidia.com/gpu" and t.get("effect") in (None, "NoSchedule")
                for t in pod.get("tolerations", [])
            ), where


def test_trial_workers_start_warm(resources: list[Resource]) -> None:
    """The workers' raylets preload what `sweeper.workers` preloads in a local Ray, keep idle
    workers as long, and give the workers Tune's actor variables, which sweeper's trial actors
    no longer carry themselves."""
    from sweeper.workers import IDLE_KILL_ENV, PRELOAD_ENV, TUNE_ACTOR_ENV_VARS, node_environment

    expected = node_environment()
    assert {PRELOAD_ENV, IDLE_KILL_ENV, *TUNE_ACTOR_ENV_VARS} <= set(expected)
    for resource in ray_resources(resources):
        for group in ray_cluster_spec(resource)["workerGroupSpecs"]:
            env = env_of(group["template"]["spec"]["containers"][0])
            where = f"{resource['metadata']['name']} {group['groupName']}"
            for name, value in expected.items():
                assert env.get(name, {}).get("value") == value, f"{where}: {name}"


def test_ray_pods_mount_memory_backed_shm_and_tmp_ray(resources: list[Resource]) -> None:
    for resource in ray_resources(resources):
        for pod in pods(resource):
            if pod.where.endswith("submitter"):
                continue
            ray = pod.spec["containers"][0]
            for path in ("/dev/shm", "/tmp/ray"):
                volume = mounted_volume(pod, ray, path)
                assert volume is not None and volume["mountPath"] == path, f"{pod.where}: {path}"
                assert volume.get("emptyDir", {}).get("medium") == "Memory", f"{pod.where}: {path}"


def test_a_ttl_only_with_shutdown_and_a_deadline(resources: list[Resource]) -> None:
    for job in (r for r in resources if r["kind"] == "RayJob"):
        spec = job["spec"]
        if spec.get("ttlSecondsAfterFinished"):
            assert spec.get("shutdownAfterJobFinishes") is True, "KubeRay rejects a TTL without shutdown"
        assert spec["shutdownAfterJobFinishes"] is True
        assert spec["activeDeadlineSeconds"] > 0


def _entrypoint_specs(entrypoint: str) -> tuple[list[str], str | None]:
    words = shlex.split(entrypoint)
    assert words[:2] == ["sweeper", "launch"], entrypoint
    paths, profile, rest = [], None, iter(words[2:])
    for word in rest:
        option, _, inline = word.partition("=")
        if option in LAUNCH_VALUE_OPTIONS:
            value = inline or next(rest)
            profile = value if option == "--profile" else profile
        elif not word.startswith("-"):
            paths.append(word)
    return paths, profile


def test_the_entrypoint_spec_is_in_the_configmap_valid_and_within_the_deadline(
    resources: list[Resource], tmp_path: Path
) -> None:
    from sweeper.spec import load_spec

    for job in (r for r in resources if r["kind"] == "RayJob"):
        paths, profile = _entrypoint_specs(job["spec"]["entrypoint"])
        assert paths
        head = next(p for p in pods(job) if p.where.endswith(" head"))
        for path in paths:
            assert PurePosixPath(path).is_absolute(), path
            volume = mounted_volume(head, head.spec["containers"][0], path)
            assert volume is not None and "configMap" in volume, f"{path} is not on a ConfigMap volume"
            key = str(PurePosixPath(path).relative_to(volume["mountPath"]))
            data = find(resources, "ConfigMap", volume["configMap"]["name"])["data"]
            assert key in data, f"{path}: no key {key!r} in ConfigMap {volume['configMap']['name']}"
            text = data[key]
            (tmp_path / key).write_text(text)
            budget = load_spec(tmp_path / key, profile).budget.time
            # the sweep must stop on its own budget (cleanly, resumable) before Kubernetes kills it
            assert budget is None or job["spec"]["activeDeadlineSeconds"] > budget, f"{path}: deadline"


def test_the_configmap_holds_current_copies_of_every_spec(resources: list[Resource]) -> None:
    loader = importlib.util.spec_from_file_location("sync_configs", DEPLOY / "sync_configs.py")
    sync = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(sync)
    stale = "deploy/base/sweeps-configmap.yaml is stale: run python deploy/sync_configs.py"
    assert (DEPLOY / "base" / "sweeps-configmap.yaml").read_text() == sync.render(), stale
    data = find(resources, "ConfigMap", "sweeper-sweeps")["data"]
    assert set(data) == {p.name for p in (REPO / "configs").glob("*.yaml")}, stale
    for key, text in data.items():
        assert text == (REPO / "configs" / key).read_text(), stale


def test_the_driver_gets_its_services_from_the_environment(resources: list[Resource]) -> None:
    service = find(resources, "Service", "mlflow")
    for resource in ray_resources(resources):
        env = env_of(head_container(resource))
        assert env["SWEEPER_RAY_ADDRESS"]["value"] == "auto"
        assert env["SWEEPER_STORAGE"]["valueFrom"]["secretKeyRef"]["name"] == "sweeper-optuna-storage"
        tracking = urlsplit(env["SWEEPER_TRACKING_URI"]["value"])
        assert tracking.hostname == service["metadata"]["name"]
        assert tracking.port in [p["port"] for p in service["spec"]["ports"]]


def test_results_are_on_storage_every_ray_node_shares(resources: list[Resource]) -> None:
    for resource in ray_resources(resources):
        results = env_of(head_container(resource))["SWEEPER_RESULTS"]["value"]
        if results.startswith("s3://"):
            continue
        for pod in pods(resource):
            if pod.where.endswith("submitter"):
                continue
            volume = mounted_volume(pod, pod.spec["containers"][0], results)
            assert volume is not None and "persistentVolumeClaim" in volume, f"{pod.where}: {results}"
            claim = find(resources, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
            assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


# --- MLflow and PostgreSQL -------------------------------------------------------------------


def _allowed_hosts(container: dict[str, Any]) -> list[str]:
    (value,) = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--allowed-hosts=")]
    return value.split(",")


def test_mlflow_serves_artifacts_and_accepts_its_service_names(resources: list[Resource]) -> None:
    from mlflow.server.security_utils import is_allowed_host_header

    deployment = find(resources, "Deployment", "mlflow")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["mlflow", "server"] and "--serve-artifacts" in container["args"]
    env = env_of(container)
    assert env["MLFLOW_BACKEND_STORE_URI"]["valueFrom"]["secretKeyRef"]["name"] == "sweeper-mlflow-store"
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/health"
    service = find(resources, "Service", "mlflow")
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    hosts = [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]
    port = service["spec"]["ports"][0]["port"]
    allowed = _allowed_hosts(container)
    for host in [*hosts, *(f"{h}:{port}" for h in hosts), "localhost:5000", "127.0.0.1:5000"]:
        assert is_allowed_host_header(allowed, host), f"MLflow would answer 403 to Host: {host}"
    assert not is_allowed_host_header(allowed, "attacker.example.com")
    assert "*" not in allowed


def test_mlflow_artifacts_go_to_a_volume_in_dev_and_s3_in_prod(
    resources: list[Resource], overlay: str
) -> None:
    deployment = find(resources, "Deployment", "mlflow")
    pod = next(pods(deployment))
    container = pod.spec["containers"][0]
    destination = env_of(container)["MLFLOW_ARTIFACTS_DESTINATION"]["value"]
    if overlay == "prod":
        assert destination.startswith("s3://")
        assert {"secretRef": {"name": "sweeper-s3"}} in container["envFrom"]
    else:
        volume = mounted_volume(pod, container, destination)
        assert volume is not None and "persistentVolumeClaim" in volume


def test_postgresql_runs_in_dev_only_with_pg_isready(resources: list[Resource], overlay: str) -> None:
    statefulsets = [r for r in resources if r["kind"] == "StatefulSet"]
    if overlay == "prod":
        assert not statefulsets, "prod uses a managed PostgreSQL"
        return
    (postgres,) = statefulsets
    assert postgres["spec"]["replicas"] == 1
    container = postgres["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["exec"]["command"][0] == "pg_isready"
    passwords = [e for e in container["env"] if "PASSWORD" in e["name"]]
    assert passwords and all(e["valueFrom"]["secretKeyRef"]["name"] == "sweeper-postgres" for e in passwords)


def test_prod_has_more_workers_than_dev_and_images_from_a_registry() -> None:
    def max_workers(resources: list[Resource]) -> int:
        return sum(
            g["maxReplicas"]
            for r in ray_resources(resources)
            for g in ray_cluster_spec(r)["workerGroupSpecs"]
        )

    dev, prod = render_overlay("dev"), render_overlay("prod")
    assert max_workers(prod) > max_workers(dev)
    for resource in prod:
        for c in containers(resource):
            if "image" in c.body and "sweeper-ray" in c.body["image"]:
                assert "/" in split_image(c.body["image"])[0], f"{c.where}: not from a registry"


# --- network -----------------------------------------------------------------------------------


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, op, values = expression["key"], expression["operator"], expression.get("values", [])
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and labels.get(key) in values)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return True


Endpoint = tuple[dict[str, str], str]  # (pod labels, namespace)


def _peer_matches(peer: dict[str, Any], other: Endpoint, home: str) -> bool:
    labels, namespace = other
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        if not _selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": namespace}):
            return False
    elif namespace != home:
        return False
    return _selects(peer.get("podSelector", {}), labels)


def _rule_allows(rule: dict[str, Any], peers_key: str, other: Endpoint, home: str, port: int) -> bool:
    ports = rule.get("ports")
    if ports and not any(p.get("port") == port for p in ports):
        return False
    peers = rule.get(peers_key)
    return not peers or any(_peer_matches(peer, other, home) for peer in peers)


def _direction_allows(policies: list[Resource], kind: str, pod: Endpoint, other: Endpoint, port: int) -> bool:
    rules_key, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == pod[1]
        and _selects(p["spec"]["podSelector"], pod[0])
        and kind in p["spec"]["policyTypes"]
    ]
    if not selecting:
        return True
    return any(
        _rule_allows(rule, peers_key, other, pod[1], port)
        for p in selecting
        for rule in p["spec"].get(rules_key, [])
    )


def connects(policies: list[Resource], source: Endpoint, target: Endpoint, port: int) -> bool:
    """Whether NetworkPolicies let `source` open a TCP connection to `target` on `port`."""
    return _direction_allows(policies, "Egress", source, target, port) and _direction_allows(
        policies, "Ingress", target, source, port
    )


def admits(policies: list[Resource], target: Endpoint, source: Endpoint, port: int) -> bool:
    """Whether the target's own ingress policies admit `source` — the guarantee that holds even
    for a source whose egress nothing restricts (a pod in another namespace)."""
    return _direction_allows(policies, "Ingress", target, source, port)


def test_default_deny_and_only_the_intended_paths(resources: list[Resource], overlay: str) -> None:
    policies = [r for r in resources if r["kind"] == "NetworkPolicy"]
    assert any(
        p["spec"]["podSelector"] == {}
        and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
        for p in policies
    )
    ns = "sweeper"
    labels = {pod.where: (pod.metadata.get("labels", {}), ns) for r in resources for pod in pods(r)}
    ray = [e for w, e in labels.items() if w.endswith(" head") or " worker group " in w]
    head = next(e for w, e in labels.items() if w.startswith("RayJob") and w.endswith(" head"))
    submitter = next(e for w, e in labels.items() if w.endswith("submitter"))
    mlflow = labels["Deployment/mlflow"]
    stranger: Endpoint = ({"app": "something-else"}, ns)
    elsewhere: Endpoint = ({"app": "something-else"}, "other")
    operator: Endpoint = ({"app.kubernetes.io/name": "kuberay-operator"}, "kuberay-system")
    outsiders = (submitter, stranger, elsewhere, operator)

    if overlay == "dev":
        postgres = labels["StatefulSet/postgres"]
        for source in [*ray, mlflow]:
            assert connects(policies, source, postgres, 5432)
        for source in outsiders:
            assert not admits(policies, postgres, source, 5432), source
    for source in ray:
        assert connects(policies, source, mlflow, 5000)
        assert connects(policies, source, head, 6379)
    for source in outsiders:
        assert not admits(policies, mlflow, source, 5000), source
    assert connects(policies, submitter, head, 8265) and connects(policies, operator, head, 8265)
    for port in (8265, 10001, 6379):
        for source in (stranger, elsewhere, mlflow):
            assert not admits(policies, head, source, port), (source, port)
    for source in (submitter, operator):
        assert not admits(policies, head, source, 10001), source


def test_ray_ports_are_never_exposed_outside_the_cluster(resources: list[Resource]) -> None:
    assert not [r for r in resources if r["kind"] in ("Ingress", "Route", "Gateway", "HTTPRoute")]
    for service in (r for r in resources if r["kind"] == "Service"):
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP", service["metadata"]["name"]
    for resource in ray_resources(resources):
        head = ray_cluster_spec(resource)["headGroupSpec"]
        assert head.get("serviceType", "ClusterIP") == "ClusterIP"
        assert not head.get("enableIngress")


# --- image and lint ----------------------------------------------------------------------------


def test_the_dockerfile_runs_as_the_ray_user_with_configs_at_a_fixed_path() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert re.search(r"^COPY configs /opt/sweeper/configs$", dockerfile, re.M)
    assert (DEPLOY / "Dockerfile.dockerignore").is_file()


def test_yamllint_is_clean() -> None:
    from yamllint import linter
    from yamllint.config import YamlLintConfig

    config = YamlLintConfig(file=str(REPO / ".yamllint"))
    problems = [
        f"{path.relative_to(REPO)}:{p.line}:{p.column}: {p.message} ({p.rule})"
        for path in sorted(DEPLOY.rglob("*.yaml"))
        for p in linter.run(path.read_text(), config, str(path))
    ]
    assert not problems, "\n".join(problems)


def test_the_readme_walks_through_the_install() -> None:
    text = (DEPLOY / "README.md").read_text()
    for step in (
        "kuberay-operator",
        "nvidia",
        "create secret generic",
        "kubectl apply -k deploy/overlays/dev",
        "port-forward",
    ):
        assert step in text, step
