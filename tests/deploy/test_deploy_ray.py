"""The Ray clusters as a platform engineer would review them: where trials land (CPU and GPU worker
groups scaling from zero), what a day-long sweep needs (disk for logs, a sized object store,
Guaranteed pods, a head that is not evicted, a bounded wait for a head that never starts), and
where the driver and the trials find their specs, services, results and data.

Each check runs on every overlay as rendered, because an overlay's patch can undo what the base
got right.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from tests.deploy.workloads import (
    DEPLOY,
    OVERLAYS,
    REPO,
    Pod,
    env_of,
    find,
    head_container,
    kuberay_pods,
    mounted_volume,
    pods,
    quantity,
    ray_cluster_spec,
    ray_pods,
    ray_resources,
    render_install,
    render_sweep,
)

Resource = dict[str, Any]
GPU = "nvidia.com/gpu"
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


def groups(resource: Resource) -> dict[str, dict[str, Any]]:
    return {g["groupName"]: g for g in ray_cluster_spec(resource)["workerGroupSpecs"]}


# --- installing is not running ---------------------------------------------------------------------


def test_installing_starts_no_sweep_and_a_sweep_overlay_holds_only_its_rayjob() -> None:
    """`kubectl apply -k deploy/overlays/<env>` installs the long-lived parts and no RayJob; the
    `<env>-sweep` overlay renders one RayJob and nothing else, so deleting it stops the sweep
    without touching the install. Every overlay under deploy/overlays is one or the other."""
    listed = sorted(p.name for p in (DEPLOY / "overlays").iterdir() if p.is_dir())
    assert listed == sorted([*OVERLAYS, *(f"{env}-sweep" for env in OVERLAYS)])
    for env in OVERLAYS:
        install = render_install(env)
        assert not [r for r in install if r["kind"] == "RayJob"], env
        cluster = find(install, "RayCluster", "sweeper")
        assert all(g["replicas"] == g["minReplicas"] == 0 for g in cluster["spec"]["workerGroupSpecs"])
        (job,) = render_sweep(env)
        assert job["kind"] == "RayJob" and job["metadata"]["namespace"] == "sweeper"
        assert job["spec"]["rayClusterSpec"] == cluster["spec"], (
            f"{env}: the sweep runs the install's cluster"
        )


# --- where trials land ---------------------------------------------------------------------------


def test_cpu_and_gpu_worker_groups_scale_from_zero(resources: list[Resource], overlay: str) -> None:
    """A CPU-only trial fits the `cpu` group and a GPU trial only the `gpu` one; neither group
    holds a pod while no trial asks for it. dev has no GPU group: it runs where there are none."""
    for resource in ray_resources(resources):
        cluster = ray_cluster_spec(resource)
        assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
        assert cluster["enableInTreeAutoscaling"] is True
        assert cluster["authOptions"]["mode"] == "token"
        found = groups(resource)
        assert set(found) == ({"cpu"} if overlay == "dev" else {"cpu", "gpu"})
        for name, group in found.items():
            where = f"{resource['metadata']['name']} {name}"
            assert group["minReplicas"] == group.get("replicas", 0) == 0, where
            assert group["maxReplicas"] >= 1, where
            pod = group["template"]["spec"]
            limits = pod["containers"][0]["resources"]["limits"]
            tolerates_gpu_nodes = any(t["key"] == GPU for t in pod.get("tolerations", []))
            if name == "gpu":
                assert int(limits[GPU]) >= 1, where
                assert any(t.get("effect") in (None, "NoSchedule") for t in pod["tolerations"]), where
                assert tolerates_gpu_nodes, where
            else:  # a CPU worker never takes, nor waits for, a GPU node
                assert GPU not in limits and not tolerates_gpu_nodes, where


def test_dev_asks_for_no_gpu_anywhere(overlay: str, resources: list[Resource]) -> None:
    if overlay == "dev":
        assert GPU not in json.dumps(resources)
        assert "-cu" not in json.dumps([c for r in resources for p in pods(r) for c in p.spec["containers"]])


def test_trial_workers_start_warm_and_keep_their_working_directory(resources: list[Resource]) -> None:
    """The workers' raylets preload what `sweeper.run.tune.workers` preloads in a local Ray, keep idle
    workers as long, and give the workers Tune's actor variables; trials stay in the container's
    workingDir, where data/ is. (A driver that joins a cluster cannot know its nodes' variables, so
    Tune still copies RAY_CHDIR_TO_TRIAL_DIR into the trial actors, which start in workers of
    their own; and Ray hands a job only workers started for it or prestarted for the first job.)"""
    from sweeper.run.tune.workers import IDLE_KILL_ENV, PRELOAD_ENV, TUNE_ACTOR_ENV_VARS, node_environment

    expected = {**node_environment(), "RAY_CHDIR_TO_TRIAL_DIR": "0"}
    assert {PRELOAD_ENV, IDLE_KILL_ENV, *TUNE_ACTOR_ENV_VARS} <= set(expected)
    for resource in ray_resources(resources):
        for name, group in groups(resource).items():
            env = env_of(group["template"]["spec"]["containers"][0])
            for variable, value in expected.items():
                assert env.get(variable, {}).get("value") == value, f"{name}: {variable}"


# --- a day-long sweep ----------------------------------------------------------------------------


def test_the_pods_kuberay_creates_are_guaranteed(resources: list[Resource]) -> None:
    """KubeRay tells Ray the containers' limits: a request below them (a Burstable pod) would let
    the node overcommit what Ray believes it has. Every container, the autoscaler sidecar and the
    workers' init container included, requests exactly its limits."""
    for resource in ray_resources(resources):
        for pod in kuberay_pods(resource):
            for container in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
                where = f"{pod['metadata']['name']} {container['name']}"
                requests, limits = container["resources"]["requests"], container["resources"]["limits"]
                assert {"cpu", "memory"} <= set(limits), where
                assert requests == limits, where


def test_logs_on_disk_and_the_object_store_in_shared_memory(resources: list[Resource]) -> None:
    """/tmp/ray (logs, the session directory, spilled objects) on a size-limited disk volume the
    container's ephemeral-storage covers; the object store sized explicitly, inside /dev/shm,
    which counts against the memory limit."""
    for resource in ray_resources(resources):
        cluster = ray_cluster_spec(resource)
        start_params = [cluster["headGroupSpec"]["rayStartParams"]]
        start_params += [g["rayStartParams"] for g in cluster["workerGroupSpecs"]]
        for pod, params in zip(ray_pods(resource), start_params, strict=True):
            ray = pod.spec["containers"][0]
            logs = mounted_volume(pod, ray, "/tmp/ray")
            assert logs is not None and logs["mountPath"] == "/tmp/ray", pod.where
            assert logs["name"] == "ray-logs", (
                f"{pod.where}: KubeRay shares only `ray-logs` with the autoscaler"
            )
            assert "medium" not in logs["emptyDir"] and "sizeLimit" in logs["emptyDir"], pod.where
            disk = sum(
                quantity(v["emptyDir"]["sizeLimit"])
                for v in pod.spec["volumes"]
                if "emptyDir" in v and v["emptyDir"].get("medium") != "Memory"
            )
            resources_ = ray["resources"]
            assert quantity(resources_["requests"]["ephemeral-storage"]) >= disk, pod.where
            shm = mounted_volume(pod, ray, "/dev/shm")
            assert shm["emptyDir"]["medium"] == "Memory", pod.where
            store = quantity(params["object-store-memory"])
            assert store < quantity(shm["emptyDir"]["sizeLimit"]) < quantity(resources_["limits"]["memory"])


def test_the_head_stays_and_workers_are_never_restarted(resources: list[Resource]) -> None:
    """Without GCS fault tolerance the head is the cluster: the cluster autoscaler must not evict
    it. Autoscaler v2, pinned, counts a restarted worker pod as a new node: workers never restart."""
    for resource in ray_resources(resources):
        cluster = ray_cluster_spec(resource)
        head = cluster["headGroupSpec"]["template"]
        assert head["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "false"
        assert cluster["autoscalerOptions"]["version"] == "v2"
        for group in cluster["workerGroupSpecs"]:
            assert group["template"]["spec"]["restartPolicy"] == "Never", group["groupName"]


def test_a_rayjob_gives_up_on_a_head_that_never_runs(resources: list[Resource]) -> None:
    """A head stuck Pending (no node fits, a volume never binds) fails within the pre-running
    deadline rather than the sweep's whole day; a TTL needs shutdown (KubeRay rejects it otherwise)."""
    for job in (r for r in resources if r["kind"] == "RayJob"):
        spec = job["spec"]
        assert spec["shutdownAfterJobFinishes"] is True
        assert 0 < spec["preRunningDeadlineSeconds"] <= 3600
        assert spec["preRunningDeadlineSeconds"] < spec["activeDeadlineSeconds"]


# --- the driver: specs, services, results ------------------------------------------------------


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
    from sweeper.spec.loading import load_spec

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
            (tmp_path / key).write_text(data[key])
            spec = load_spec(tmp_path / key, profile)
            # the sweep must stop on its own budget (cleanly, resumable) before Kubernetes kills it
            assert spec.budget.time is None or job["spec"]["activeDeadlineSeconds"] > spec.budget.time, path
            if not any(GPU in str(g) for g in ray_cluster_spec(job)["workerGroupSpecs"]):
                assert all(spec.resources.for_model(m)["gpu"] == 0 for m in spec.models), (
                    f"{path}: GPU trials"
                )


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
        # `sweeper job stop` sends SIGTERM; the driver needs time to mark its trials interrupted
        assert int(env["RAY_JOB_STOP_WAIT_TIME_S"]["value"]) >= 60


def _shared_claim(resources: list[Resource], pod: Pod, path: str) -> str:
    """The ReadWriteMany claim that holds `path` in the pod's Ray container."""
    volume = mounted_volume(pod, pod.spec["containers"][0], path)
    assert volume is not None and "persistentVolumeClaim" in volume, f"{pod.where}: {path}"
    name = volume["persistentVolumeClaim"]["claimName"]
    assert find(resources, "PersistentVolumeClaim", name)["spec"]["accessModes"] == ["ReadWriteMany"]
    return name


def test_results_are_on_storage_every_ray_node_shares(resources: list[Resource]) -> None:
    for resource in ray_resources(resources):
        results = env_of(head_container(resource))["SWEEPER_RESULTS"]["value"]
        for pod in ray_pods(resource):
            assert _shared_claim(resources, pod, results) == "sweeper-results"


# --- data of the file-based tasks ------------------------------------------------------------------


def _data_dirs() -> dict[str, PurePosixPath]:
    """Each spec's data_dir (set, or its task's default), for the specs of file-based tasks."""
    from sweeper.spec.loading import load_spec
    from trainables.catalog import load_all
    from trainables.registry import TASKS

    load_all()
    found = {}
    for path in sorted((REPO / "configs").glob("*.yaml")):
        spec = load_spec(path)
        settings = TASKS.get(spec.task.name).settings.model_validate(spec.task.settings)
        if hasattr(settings, "data_dir"):
            found[path.name] = PurePosixPath(settings.data_dir)
    return found


def _fetches(command: str) -> dict[str, str]:
    """`sweeper data fetch TASK --data-dir DIR` lines of a shell script: {DIR: TASK}."""
    return {d: t for t, d in re.findall(r"sweeper data fetch (\S+) --data-dir (\S+)", command)}


def test_the_file_based_tasks_find_their_data_on_every_ray_node(resources: list[Resource]) -> None:
    """Trials (RAY_CHDIR_TO_TRIAL_DIR=0) resolve a spec's relative data_dir against the worker's
    workingDir: on the head and every worker that is the shared data volume."""
    data_dirs = _data_dirs()
    assert {"ptb_word.yaml", "wikitext2.yaml", "babi.yaml", "timit.yaml"} <= set(data_dirs)
    for resource in ray_resources(resources):
        for pod in ray_pods(resource):
            working_dir = PurePosixPath(pod.spec["containers"][0]["workingDir"])
            for config, data_dir in data_dirs.items():
                where = f"{pod.where}: {config}"
                assert not data_dir.is_absolute(), f"{where}: an absolute data_dir is not on the volume"
                assert _shared_claim(resources, pod, str(working_dir / data_dir)) == "sweeper-data", where


def test_the_data_fetch_job_fills_what_the_tasks_read(resources: list[Resource]) -> None:
    """Started on demand from a suspended CronJob, it writes each downloadable task's data where
    the Ray pods read it: the same claim, the same relative paths, the same working directory."""
    from trainables.data import FETCHERS
    from trainables.registry import TASKS

    cron = find(resources, "CronJob", "sweeper-data-fetch")
    assert cron["spec"]["suspend"] is True
    pod = next(pods(cron))
    container = pod.spec["containers"][0]
    fetched = _fetches(" ".join(container["command"] + container["args"]))
    cluster = find(resources, "RayCluster", "sweeper")
    head = next(p for p in ray_pods(cluster) if p.where.endswith(" head"))
    assert container["workingDir"] == head.spec["containers"][0]["workingDir"]
    for task in FETCHERS:
        default = str(TASKS.get(task).settings.model_validate({}).data_dir)
        assert default in fetched, f"{task}: nothing fetches {default}"
        assert FETCHERS[fetched[default]] is FETCHERS[task], f"{task}: {default} holds another data set"
        target = PurePosixPath(container["workingDir"]) / default
        assert _shared_claim(resources, pod, str(target)) == _shared_claim(resources, head, str(target))
