"""What the schemas cannot say about the manifests: hardening, secrets, the wiring between the
sweep, PostgreSQL and MLflow, and who may reach whom on the network.

Each check runs on every overlay as rendered, because an overlay's patch can undo what the base
got right. The Ray clusters' shape is in test_deploy_ray.py, the images in test_deploy_images.py.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from sqlalchemy.engine import make_url

from tests.deploy.workloads import (
    DEPLOY,
    REPO,
    Container,
    Pod,
    containers,
    env_of,
    find,
    kuberay_pods,
    mounted_volume,
    pods,
    ray_cluster_spec,
    ray_resources,
    render_overlay,
)

Resource = dict[str, Any]
CREDENTIAL_IN_URL = re.compile(r"://[^/\s:@]+:(?!\$)[^/\s@]+@")  # a $VARIABLE is not a literal
SECRET_ENV_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|ACCESS_KEY|CREDENTIAL")


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


def test_the_pods_kuberay_creates_are_hardened(resources: list[Resource]) -> None:
    """What the operator adds (the autoscaler sidecar, the workers' wait-gcs-ready init container)
    must pass as well: the namespace's Pod Security admission judges the pods, not the templates."""
    problems = []
    for resource in ray_resources(resources):
        for created in kuberay_pods(resource):
            pod = Pod(
                f"{resource['kind']}/{created['metadata']['name']}", created["metadata"], created["spec"]
            )
            for kind in ("initContainers", "containers"):
                for body in created["spec"].get(kind, []):
                    problems += hardening_problems(Container(f"{pod.where} {body['name']}", body, pod))
    assert not problems, "\n".join(problems)


# where a read-only container writes: Triton's kernels, torch's and matplotlib's caches, temp files
CACHE_VARIABLES = (
    "HOME",
    "XDG_CACHE_HOME",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "MPLCONFIGDIR",
    "TMPDIR",
)


def test_every_read_only_container_writes_its_caches_to_a_small_writable_volume(
    resources: list[Resource],
) -> None:
    """With `readOnlyRootFilesystem`, Triton could not compile the fused kernels into ~/.triton at
    first use: every such container points each cache at a size-limited emptyDir it may write."""
    checked = 0
    for resource in resources:
        for container in containers(resource):
            if not container.body.get("securityContext", {}).get("readOnlyRootFilesystem"):
                continue
            env = env_of(container.body, resources)
            for name in CACHE_VARIABLES:
                assert "value" in env.get(name, {}), f"{container.where}: {name} is not set"
                path = env[name]["value"]
                volume = mounted_volume(container.pod, container.body, path)
                assert volume is not None, f"{container.where}: {name}={path} is on the read-only root"
                assert volume.get("emptyDir", {}).get("sizeLimit"), f"{container.where}: {name} on {volume}"
                mount = next(
                    m for m in container.body["volumeMounts"] if m["mountPath"] == volume["mountPath"]
                )
                assert not mount.get("readOnly"), f"{container.where}: {name}={path} is mounted read-only"
            checked += 1
    assert checked >= 5


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


def _heredoc_sql(text: str) -> list[str]:
    (sql,) = re.findall(r"<<'SQL'\n(.*?)\n\s*SQL\n", text, re.S)
    return [line.strip() for line in sql.splitlines()]


def test_the_readme_creates_the_production_databases_as_dev_does() -> None:
    init = find(render_overlay("dev"), "ConfigMap", "postgres-init")["data"]["10-sweeper-databases.sh"]
    assert _heredoc_sql((DEPLOY / "README.md").read_text()) == _heredoc_sql(init)


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


def test_prod_has_more_workers_than_dev() -> None:
    def max_workers(resources: list[Resource]) -> int:
        return sum(
            g["maxReplicas"]
            for r in ray_resources(resources)
            for g in ray_cluster_spec(r)["workerGroupSpecs"]
        )

    assert max_workers(render_overlay("prod")) > max_workers(render_overlay("dev"))


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


Endpoint = tuple[dict[str, str], str | None]  # (pod labels, namespace; None: outside the cluster)


def _peer_matches(peer: dict[str, Any], other: Endpoint, home: str) -> bool:
    """Whether a policy peer covers `other`. An address outside the cluster is covered only by a
    rule with no peers: the ipBlocks here name ranges the tests' outside addresses are not in."""
    labels, namespace = other
    if "ipBlock" in peer or namespace is None:
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
    heads = [e for w, e in labels.items() if w.endswith(" head")]
    workers = [e for w, e in labels.items() if " worker group " in w]
    head = next(e for w, e in labels.items() if w.startswith("RayJob") and w.endswith(" head"))
    submitter = next(e for w, e in labels.items() if w.endswith("submitter"))
    mlflow = labels["Deployment/mlflow"]
    fetch = labels["CronJob/sweeper-data-fetch"]
    stranger: Endpoint = ({"app": "something-else"}, ns)
    elsewhere: Endpoint = ({"app": "something-else"}, "other")
    operator: Endpoint = ({"app.kubernetes.io/name": "kuberay-operator"}, "kuberay-system")
    impostor: Endpoint = ({"app.kubernetes.io/name": "kuberay-operator"}, "other")  # labels itself so
    internet: Endpoint = ({}, None)  # an address outside the cluster: the API server, a download
    outsiders = (submitter, stranger, elsewhere, operator, impostor, fetch)

    if overlay == "dev":
        postgres = labels["StatefulSet/postgres"]
        for source in [*heads, *workers, mlflow]:
            assert connects(policies, source, postgres, 5432)
        for source in outsiders:
            assert not admits(policies, postgres, source, 5432), source
    for source in [*heads, *workers]:
        assert connects(policies, source, mlflow, 5000)
        assert connects(policies, source, head, 6379)
    for source in outsiders:
        assert not admits(policies, mlflow, source, 5000), source
    assert connects(policies, submitter, head, 8265) and connects(policies, operator, head, 8265)
    for port in (8265, 10001, 6379):
        for source in (stranger, elsewhere, mlflow, impostor, fetch):
            assert not admits(policies, head, source, port), (source, port)
    for source in (submitter, operator):
        assert not admits(policies, head, source, 10001), source
        for worker in workers:  # the operator polls the head's dashboard, nothing else
            assert not admits(policies, worker, source, 8265), source
    # only the head (its autoscaler) reaches the Kubernetes API; trial code on workers reaches nothing outside
    for port in (443, 6443):
        assert all(connects(policies, h, internet, port) for h in heads)
        assert not any(connects(policies, w, internet, port) for w in workers), port
    for port in (443, 80):
        assert connects(policies, fetch, internet, port)
    assert not connects(policies, fetch, mlflow, 5000) and not connects(policies, fetch, head, 8265)


def test_the_operator_is_admitted_from_its_pinned_namespace_only(resources: list[Resource]) -> None:
    """Every peer that names the KubeRay operator also names its namespace, by the label the API
    server sets (kubernetes.io/metadata.name), which no pod can give itself."""
    for policy in (r for r in resources if r["kind"] == "NetworkPolicy"):
        for rule in policy["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                if (
                    peer.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name")
                    == "kuberay-operator"
                ):
                    names = peer["namespaceSelector"]["matchLabels"]
                    assert names == {"kubernetes.io/metadata.name": "kuberay-system"}, policy["metadata"][
                        "name"
                    ]


def test_ray_ports_are_never_exposed_outside_the_cluster(resources: list[Resource]) -> None:
    assert not [r for r in resources if r["kind"] in ("Ingress", "Route", "Gateway", "HTTPRoute")]
    for service in (r for r in resources if r["kind"] == "Service"):
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP", service["metadata"]["name"]
    for resource in ray_resources(resources):
        head = ray_cluster_spec(resource)["headGroupSpec"]
        assert head.get("serviceType", "ClusterIP") == "ClusterIP"
        assert not head.get("enableIngress")


# --- lint and docs ------------------------------------------------------------------------------


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
        "helm install kuberay-operator",  # prerequisites
        "nvidia.com/gpu.present=true",
        "driver",
        "ReadWriteMany",
        "create secret generic",
        "CREATE DATABASE optuna",  # production databases
        "kubectl apply -k deploy/overlays/dev",
        "kubectl apply -k deploy/overlays/dev-sweep",  # a sweep is not part of the install
        "components/kueue",  # sharing the cluster
        "components/priority",
        "components/quota",
        "components/monitoring",  # metrics, and Ray's Grafana dashboards
        "grafana/dashboards",
        "TRITON_CACHE_DIR",
        "deploy/pin_digests.py",  # upgrades: digests, schema migrations, rollback
        "mlflow db upgrade",
        "optuna storage upgrade",
        "To roll back",
        "create job --from=cronjob/sweeper-data-fetch",  # data
        "sweeper job submit",  # first and second sweep, resume, as Ray jobs
        "ray job submit",
        "sweeper job resume",
        "sweeper job logs",
        "auth_token",  # the Ray dashboard's token
        "port-forward svc/mlflow",
        "port-forward svc/sweeper-head-svc",
        "kubectl delete -k",  # teardown
    ):
        assert step in text, step
