"""optuna-dashboard on one sweep's studies, read-only: what `sweeper ui SWEEP` serves.

The study database holds every sweep; the dashboard gets a view of the database that lists only
this sweep's studies and refuses every write, so nothing there can be deleted or changed, and a
request that would write is answered 403 with the reason before it reaches the view
(optuna-dashboard has no read-only mode of its own: its buttons stay, and say why when used). The
objective is named on each study when the sweep is created (`Study.set_metric_names`).

    python -m sweeper.results.dashboard STORAGE_URL SWEEP [--host 127.0.0.1] [--port 8080]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from optuna.storages import RDBStorage

from sweeper.store.database import engine_kwargs


class ReadOnlyStudies(Exception):
    """The dashboard tried to change the study database."""


class SweepStudies(RDBStorage):
    """One sweep's studies (named `<sweep>/<task>/<model>`), read-only."""

    def __init__(self, url: str, sweep: str) -> None:
        super().__init__(url, engine_kwargs=engine_kwargs(url), skip_table_creation=True)
        self.prefix = f"{sweep}/"

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ReadOnlyStudies(f"sweeper ui serves {self.prefix}* read-only")

    create_new_study = delete_study = _refuse
    set_study_user_attr = set_study_system_attr = _refuse
    create_new_trial = set_trial_param = set_trial_state_values = _refuse
    set_trial_intermediate_value = set_trial_user_attr = set_trial_system_attr = _refuse

    def get_all_studies(self) -> list[Any]:  # Optuna's frozen studies, a type it does not export
        return [s for s in super().get_all_studies() if s.study_name.startswith(self.prefix)]

    def get_study_name_from_id(self, study_id: int) -> str:
        name = super().get_study_name_from_id(study_id)
        if not name.startswith(self.prefix):
            raise KeyError(f"no study {study_id} in {self.prefix}*")
        return name

    def get_study_id_from_name(self, study_name: str) -> int:
        if not study_name.startswith(self.prefix):
            raise KeyError(f"no study {study_name!r} in {self.prefix}*")
        return super().get_study_id_from_name(study_name)


READS = ("GET", "HEAD", "OPTIONS")
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def read_only(app: WSGIApp, sweep: str) -> WSGIApp:
    """The dashboard app, answering every request that would write with 403 and why."""
    refusal = json.dumps(
        {"reason": f"sweeper ui serves sweep {sweep} read-only: nothing here can be changed or deleted"}
    ).encode()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD", "GET") in READS:
            return app(environ, start_response)
        start_response(
            "403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", str(len(refusal)))]
        )
        return [refusal]

    return guarded


def main() -> None:
    from wsgiref.simple_server import make_server

    import optuna_dashboard

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("storage")
    parser.add_argument("sweep")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    app = read_only(optuna_dashboard.wsgi(SweepStudies(args.storage, args.sweep)), args.sweep)
    with make_server(args.host, args.port, app) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
