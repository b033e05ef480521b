"""Sweeps as Ray jobs on a running cluster, through Ray's job submission API (the dashboard's port).

`sweeper launch` in a terminal dies with the terminal; submitted as a Ray job, the same command runs
as a driver on the cluster's head, and this terminal (or another, later) only follows its logs,
lists it, or stops it. A thin layer over `ray.job_submission.JobSubmissionClient`: it names each
submission after its sweep, turns Ray's errors into one line each, and imports neither torch nor
Ray's runtime, so reading a job's state starts fast.

The address is the cluster's dashboard (`http://127.0.0.1:8265` through `kubectl port-forward`,
deploy/README.md). A cluster with token authentication (KubeRay's `authOptions.mode: token`) wants
its token: `RAY_AUTH_TOKEN` is sent as a bearer token, whatever `RAY_AUTH_MODE` says here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

# Where the manifests mount configs/ on the head (deploy/base/sweeps-configmap.yaml)
CLUSTER_SPECS = PurePosixPath("/etc/sweeper/sweeps")
# A spec shipped with its job (`sweeper job submit my.yaml`): its text in the job's metadata, which
# Ray hands the driver in RAY_JOB_CONFIG_JSON_ENV_VAR with the submission id
SPEC_METADATA = "sweeper.spec"
JOB_CONFIG_VARIABLE = "RAY_JOB_CONFIG_JSON_ENV_VAR"
SUBMISSION_ID_METADATA = "job_submission_id"
# Ray lets these variables override the address a client is given; here --address wins
ADDRESS_VARIABLES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
TOKEN_VARIABLE = "RAY_AUTH_TOKEN"
T = TypeVar("T")


class JobError(Exception):
    """A job command could not be done; `bad_input` when what was typed must change."""

    def __init__(self, message: str, bad_input: bool = False) -> None:
        super().__init__(message)
        self.bad_input = bad_input


@dataclass(frozen=True)
class JobSummary:
    """One submitted job as `list` shows it; times in seconds since the epoch."""

    submission_id: str
    status: str
    entrypoint: str
    start_time: float | None
    end_time: float | None
    message: str | None


class Jobs:
    """The job server of one cluster."""

    def __init__(self, address: str | None) -> None:
        if not address:
            raise JobError(
                "no Ray cluster given: pass --address http://HOST:8265 or set RAY_ADDRESS "
                "(deploy/README.md forwards the head's dashboard to http://127.0.0.1:8265)",
                bad_input=True,
            )
        self.address = address
        self.client: JobSubmissionClient = self._call(self._connect)

    def _connect(self) -> JobSubmissionClient:
        from ray.job_submission import JobSubmissionClient

        token = os.environ.get(TOKEN_VARIABLE)
        headers = {"Authorization": f"Bearer {token}"} if token else None
        with _without(ADDRESS_VARIABLES):
            return JobSubmissionClient(self.address, headers=headers)

    def _call(self, request: Callable[[], T], submission_id: str | None = None) -> T:
        """Run one request (about `submission_id`, if given), its failure said in one line."""
        from ray.exceptions import AuthenticationError

        try:
            return request()
        except AuthenticationError:
            raise JobError(
                f"the Ray cluster at {self.address} refused the request: set {TOKEN_VARIABLE} to its "
                "token (deploy/README.md shows where KubeRay keeps it)"
            ) from None
        except ConnectionError:
            raise JobError(
                f"cannot reach a Ray job server at {self.address}: is the dashboard forwarded?"
            ) from None
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[0]
            if submission_id is not None and "does not exist" in reason:
                raise JobError(
                    f"no job {submission_id} on {self.address} (see `sweeper job list`)", True
                ) from None
            raise JobError(f"the Ray job server at {self.address} answered: {reason}") from None

    def submit(
        self, entrypoint: list[str], submission_id: str, metadata: dict[str, str] | None = None
    ) -> str:
        """Start `entrypoint` as the driver of a new job, without a runtime environment of its own,
        so its trials land on the workers' preloaded processes (sweeper/run/tune/workers.py); `metadata`
        reaches the driver (`job_metadata`), a shipped spec's text with it."""
        command = shlex.join(entrypoint)
        return self._call(
            lambda: self.client.submit_job(entrypoint=command, submission_id=submission_id, metadata=metadata)
        )

    def status(self, submission_id: str) -> JobSummary:
        return _summary(self._call(lambda: self.client.get_job_info(submission_id), submission_id))

    def logs(self, submission_id: str) -> str:
        return self._call(lambda: self.client.get_job_logs(submission_id), submission_id)

    def follow(self, submission_id: str, write: Callable[[str], None]) -> None:
        """Pass the job's output to `write` as it comes, until the job ends."""
        self.status(submission_id)  # an unknown job fails here, in one line

        async def tail() -> None:
            async for chunk in self.client.tail_job_logs(submission_id):
                write(chunk)

        self._call(lambda: asyncio.run(tail()), submission_id)

    def submitted(self) -> list[JobSummary]:
        """Every submitted job the cluster remembers, oldest first."""
        jobs = [_summary(job) for job in self._call(self.client.list_jobs) if job.submission_id]
        return sorted(jobs, key=lambda job: job.start_time or 0)

    def stop(self, submission_id: str) -> bool:
        """Ask the job's driver to stop (SIGTERM, then SIGKILL after the head's
        RAY_JOB_STOP_WAIT_TIME_S); False when it had already ended."""
        return self._call(lambda: self.client.stop_job(submission_id), submission_id)


def _summary(job: Any) -> JobSummary:
    def seconds(milliseconds: int | None) -> float | None:
        return milliseconds / 1000 if milliseconds else None

    return JobSummary(
        submission_id=job.submission_id,
        status=str(job.status),
        entrypoint=job.entrypoint,
        start_time=seconds(job.start_time),
        end_time=seconds(job.end_time),
        message=job.message,
    )


@contextlib.contextmanager
def _without(names: tuple[str, ...]) -> Iterator[None]:
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def job_metadata() -> dict[str, str]:
    """In a driver that Ray runs as a submitted job: the job's metadata, its submission id included;
    elsewhere, nothing."""
    import json

    config = os.environ.get(JOB_CONFIG_VARIABLE)
    if not config:
        return {}
    return {str(k): str(v) for k, v in (json.loads(config).get("metadata") or {}).items()}


def cluster_spec(config: str) -> str:
    """A spec on the head: a path as given, or the name of one of the mounted configs/."""
    if "/" in config:
        return config
    return str(CLUSTER_SPECS / (config if config.endswith((".yaml", ".yml")) else f"{config}.yaml"))


def submission_id(kind: str, name: str, now: float | None = None) -> str:
    """`sweep-denoise-20260101-120000`: what the job runs, and when it was submitted (UTC)."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "sweep"
    return f"{kind}-{slug}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}"
