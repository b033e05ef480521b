"""The paper comparison and the figures, on a sweep whose trials are written by hand (no Ray)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import optuna
import pytest
import torch
import yaml
from optuna.distributions import FloatDistribution, IntDistribution

from sweeper.results.figures import diagnostics, learning_curves, study_figures
from sweeper.results.paper_tables import compare, to_csv, to_json, to_markdown
from sweeper.results.summaries import recorded_baseline
from sweeper.run.launch import create_sweep
from sweeper.spec.loading import parse_spec
from sweeper.spec.sweep import trial_config
from sweeper.store.database import ConfirmationRecord, Store
from sweeper.store.trial_record import FINAL_METRICS_ATTR
from tests.helpers import add_confirmations, tiny_spec
from trainables.reference.published import references_for
from trainables.train import TrialConfig, build, network_facts

CURVES = {  # model → trials: (hidden_size, lr, {step: valid_loss})
    "lstm": [(50, 0.01, {100: 0.30, 200: 0.20}), (60, 0.001, {100: 0.40, 200: 0.35})],
    "gru": [(100, 0.01, {100: 0.25, 200: 0.08}), (80, 0.002, {100: 0.30, 200: 0.28})],
}


@pytest.fixture
def handmade(tmp_path):
    raw = tiny_spec(
        name="paper", task={"name": "denoise", "settings": {"T": 200, "valid_size": 8, "variant": "paper"}}
    )
    raw["params"].update(iterations=200, eval_every=100)
    spec = parse_spec(yaml.safe_dump(raw), "paper.yaml")
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    distributions = {
        "hidden_size": IntDistribution(4, 200, log=True),
        "lr": FloatDistribution(1e-4, 0.1, log=True),
    }
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for number, (hidden, lr, curve) in enumerate(CURVES[study_record.model]):
            config = trial_config(spec, study_record.model, {"hidden_size": hidden, "lr": lr}, number)
            task, network, _ = build(TrialConfig.from_mapping(config), torch.device("cpu"))
            study.add_trial(
                optuna.trial.create_trial(
                    params={"hidden_size": hidden, "lr": lr},
                    distributions=distributions,
                    value=min(curve.values()),
                    intermediate_values=curve,
                    user_attrs={
                        "seed": number,
                        "mlflow_run_id": f"run-{study_record.model}-{number}",
                        FINAL_METRICS_ATTR: {
                            "valid_loss": curve[200],
                            "valid_accuracy_all_steps": 0.5,
                            "ortho_error": 1e-6,
                            **network_facts(task, network),  # a trial reports its size and baseline
                        },
                    },
                )
            )
    yield spec, store, store.get_sweep(record.name)
    store.dispose()


def test_report_rows_quote_the_papers_and_subtract_them_from_ours(handmade):
    _, store, record = handmade
    rows = compare(store, record)
    expected = {
        (r.model, r.table, r.metric): r
        for r in references_for("denoise", T=200)
        if r.model in ("lstm", "gru")
    }
    assert expected and {(r.model, r.table, r.metric) for r in rows} == set(expected)
    for row in rows:
        ref = expected[(row.model, row.table, row.metric)]
        assert (row.paper_value, row.paper_std, row.published) == (ref.value, ref.std, ref.published)
        assert row.ours == pytest.approx(min(min(c.values()) for _, _, c in CURVES[row.model]))
        assert row.difference == pytest.approx(row.ours - ref.value)
        assert "best trial #0" in row.source
        ours_hidden, theirs_hidden = CURVES[row.model][0][0], ref.settings["hidden_size"]
        assert (f"hidden_size {ours_hidden} vs {theirs_hidden}" in row.flag) == (ours_hidden != theirs_hidden)
        assert "iterations 200 vs 10000" in row.flag
        assert row.parameters > 0
    lstm = next(r for r in rows if r.model == "lstm")
    assert lstm.paper_value == pytest.approx(0.10367)
    assert "hidden_size 50 vs 90" in lstm.flag
    assert "| lstm |" in to_markdown(rows, "t")
    assert json.loads(to_json(rows))[0]["flag"]
    assert to_csv(rows).splitlines()[0].startswith("task,model,paper")


def test_confirmed_numbers_replace_the_best_trial(handmade):
    _, store, record = handmade
    gru = next(s for s in record.studies if s.model == "gru")
    add_confirmations(store, gru.id, {11: 0.07, 12: 0.09}, {"hidden_size": 100, "lr": 0.01})
    rows = [r for r in compare(store, record) if r.model == "gru" and r.metric == "min_loss"]
    assert rows and all(
        r.ours == pytest.approx(0.08) and r.ours_std == pytest.approx(0.0141421, rel=1e-4) for r in rows
    )
    assert all("confirmed over 2 seeds" in r.source for r in rows)
    assert all("hidden_size" not in r.flag for r in rows)  # 100 units, as the paper's GRU


def test_numbers_measured_under_other_conditions_are_not_subtracted(handmade, tmp_path):
    spec, store, _ = handmade
    raw = spec.canonical()
    raw["task"]["settings"]["variant"] = "clean"
    clean = parse_spec(yaml.safe_dump(raw), "clean.yaml")
    record = create_sweep(clean, store, f"sqlite:///{tmp_path / 'mc.db'}", None, None, home=tmp_path)
    rows = compare(store, store.get_sweep(record.name))
    assert rows and all(r.paper is not None for r in rows)
    for row in rows:
        assert row.difference is None
        assert row.conditions == ["task variant: ours clean, theirs paper"]
    assert any(
        "not comparable: task variant: ours clean, theirs paper" in to_markdown([r], "t") for r in rows
    )


def test_a_model_without_published_numbers_still_gets_a_row(handmade, tmp_path):
    spec, store, _ = handmade
    raw = spec.canonical()
    raw["task"]["settings"]["T"] = 7
    other = parse_spec(yaml.safe_dump(raw), "t7.yaml")
    record7 = create_sweep(other, store, f"sqlite:///{tmp_path / 'm7.db'}", None, None, home=tmp_path)
    rows = compare(store, store.get_sweep(record7.name))
    assert {r.model for r in rows} == {"lstm", "gru"}
    assert all(r.paper is None and "no published number" in r.flag for r in rows)


def test_learning_curves_draw_each_models_best_trial_and_the_baseline(handmade):
    _, store, record = handmade
    figure = learning_curves(store, record)
    (ax,) = figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"lstm (trial #0)", "gru (trial #0)", "memoryless baseline"}
    assert list(lines["gru (trial #0)"].get_ydata()) == [0.25, 0.08]
    assert list(lines["lstm (trial #0)"].get_xdata()) == [100, 200]
    assert (
        lines["memoryless baseline"].get_ydata()[0]
        == pytest.approx(recorded_baseline(store, record))
        == pytest.approx(10 * 2.1972245773 / 220)
    )


def test_confirmed_curves_are_a_mean_with_a_band(handmade):
    _, store, record = handmade
    gru = next(s for s in record.studies if s.model == "gru")
    with store.session() as session:
        for seed in (1, 2):
            session.add(
                ConfirmationRecord(
                    study_id=gru.id,
                    source_trial=0,
                    seed=seed,
                    params_json="{}",
                    status="complete",
                    objective=0.1,
                    metrics_json="{}",
                    mlflow_run_id=f"confirm-{seed}",
                )
            )
    histories = {"confirm-1": [(100, 0.2), (200, 0.1)], "confirm-2": [(100, 0.4), (200, 0.3)]}
    client = SimpleNamespace(
        get_metric_history=lambda run_id, metric: [
            SimpleNamespace(step=s, value=v) for s, v in histories.get(run_id, [])
        ]
    )
    (ax,) = learning_curves(store, record, client).axes
    (line,) = [line for line in ax.get_lines() if line.get_label() == "gru (2 seeds)"]
    assert list(line.get_ydata()) == pytest.approx([0.3, 0.2])
    assert len(ax.collections) == 1  # the min-max band


def test_diagnostics_plot_the_best_trials_histories(handmade):
    _, store, record = handmade
    client = SimpleNamespace(
        get_metric_history=lambda run_id, metric: (
            [SimpleNamespace(step=100, value=1e-6), SimpleNamespace(step=200, value=2e-6)]
            if metric == "ortho_error"
            else []
        )
    )
    figure = diagnostics(store, record, client)
    ortho, neumann = figure.axes
    assert sorted(line.get_label() for line in ortho.get_lines()) == ["gru", "lstm"]
    assert not neumann.get_lines()
    assert diagnostics(store, record, SimpleNamespace(get_metric_history=lambda r, m: [])) is None


def test_study_figures_exist_for_each_study(handmade):
    _, store, record = handmade
    figures = study_figures(store, record)
    assert set(figures) == {
        f"{kind}-{m}" for kind in ("history", "importances", "slice") for m in ("lstm", "gru")
    }
    history = figures["history-gru"].axes[0]
    assert any(sorted(line.get_ydata()) == pytest.approx([0.08, 0.08]) for line in history.get_lines())


def test_each_study_figure_names_its_model(handmade):
    _, store, record = handmade
    for name, figure in study_figures(store, record).items():
        model = name.rsplit("-", 1)[1]
        titles = [ax.get_title() for ax in figure.axes] + [
            figure._suptitle.get_text() if figure._suptitle else ""
        ]
        assert any(title.startswith(f"{model}: ") for title in titles), (name, titles)


def test_accuracy_cells_read_the_all_steps_accuracy_and_name_missing_metrics() -> None:
    from sweeper.results.paper_tables import conditions
    from trainables.reference.published import published_table

    table = published_table("ncgru", "Table 8")
    ref = next(r for r in references_for("denoise", T=400) if r.table == "Table 8" and r.model == "gru")
    spec = parse_spec(
        yaml.safe_dump(
            tiny_spec(name="acc", task={"name": "denoise", "settings": {"T": 400, "variant": "paper"}})
        ),
        "acc.yaml",
    )
    config = {"task_settings": {"T": 400, "variant": "paper"}}
    assert conditions(table, ref, spec, config, 0.97) == []
    assert conditions(table, ref, spec, config, None) == [
        "metric: theirs is valid_accuracy_all_steps, which our runs did not report"
    ]
    assert conditions(table, ref, spec, {"task_settings": {"T": 200, "variant": "paper"}}, 0.9) == [
        "T: ours 200, theirs 400"
    ]
    rc = next(
        r
        for r in references_for("denoise", T=400)
        if r.table == "Table 8" and r.model == "ncgru" and r.model_settings["orthogonal"] == "rc"
    )
    assert conditions(table, rc, spec, {**config, "orthogonal": "c"}, 0.9) == [
        "model variant: ours orthogonal=c, theirs orthogonal=rc"
    ]


def overlapping_texts(figure) -> list[tuple[str, str]]:
    """Pairs of visible texts whose boxes overlap once matplotlib has laid the figure out."""
    from itertools import combinations

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    undrawn = set()  # tick labels outside their axis's view, which matplotlib keeps but does not draw
    for ax in figure.axes:
        for axis, coordinate in ((ax.xaxis, 0), (ax.yaxis, 1)):
            low, high = sorted(axis.get_view_interval())
            for label in axis.get_ticklabels() + axis.get_ticklabels(minor=True):
                if not low * (1 - 1e-9) <= label.get_position()[coordinate] <= high * (1 + 1e-9):
                    undrawn.add(id(label))
    texts = [
        t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in undrawn
    ]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    return [(a, b) for (a, box_a), (b, box_b) in combinations(boxes, 2) if box_a.overlaps(box_b)]


MODELS_OF_THE_PAPERS = ("lstm", "gru", "eurnn", "goru", "goru_noreset", "goru_noupdate", "scornn", "ncgru")


def every_figure(store, record) -> dict:
    client = SimpleNamespace(
        get_metric_history=lambda run_id, metric: [
            SimpleNamespace(step=100, value=1e-6),
            SimpleNamespace(step=200, value=2e-6),
        ]
    )
    return {
        "learning-curves": learning_curves(store, record),
        "diagnostics": diagnostics(store, record, client),
        **study_figures(store, record),
    }


def test_no_figure_has_overlapping_text_or_text_outside_it(handmade):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    _, store, record = handmade
    for name, figure in every_figure(store, record).items():
        assert figure.get_layout_engine() is not None, name
        assert overlapping_texts(figure) == [], name
        renderer = FigureCanvasAgg(figure).get_renderer()
        inside, outside = figure.bbox_inches, figure.get_tightbbox(renderer)
        assert outside.x0 >= inside.x0 - 0.05 and outside.x1 <= inside.x1 + 0.05, name
        assert outside.y0 >= inside.y0 - 0.05 and outside.y1 <= inside.y1 + 0.05, name
        titles = [ax.get_title() for ax in figure.axes] + [figure.get_suptitle()]
        assert not any("{" in title for title in titles), (name, titles)


def test_each_model_has_one_colour_of_its_own_in_every_figure(handmade):
    """Every line, point and bar of a model is its colour, distinct from every other model's, and
    not the style's: Optuna's plots switch matplotlib to ggplot, whose cycle has seven colours."""
    import colorsys

    from matplotlib import style
    from matplotlib.colors import to_hex, to_rgb

    from sweeper.results.figures import model_colours

    eight = SimpleNamespace(studies=[SimpleNamespace(model=m) for m in MODELS_OF_THE_PAPERS])
    with style.context("ggplot"):
        assert len(set(model_colours(eight).values())) == 8
    _, store, record = handmade
    colours = model_colours(record)
    figures = every_figure(store, record)
    for line in figures["learning-curves"].axes[0].get_lines():
        model = line.get_label().split(" ")[0]
        assert to_hex(line.get_color()) == colours.get(model, "#808080"), line.get_label()
    for line in figures["diagnostics"].axes[0].get_lines():
        assert to_hex(line.get_color()) == colours[line.get_label()]

    def same_hue(colour, model_colour) -> bool:
        """Of the model's hue, or a neutral grey (Optuna's slice plot greys out pruned trials)."""
        h, _, saturation = colorsys.rgb_to_hls(*to_rgb(colour))
        return saturation < 0.05 or abs(h - colorsys.rgb_to_hls(*to_rgb(model_colour))[0]) < 0.02

    for model, colour in colours.items():
        history = figures[f"history-{model}"].axes[0]
        assert {to_hex(c) for c in history.collections[0].get_facecolors()} == {colour}
        assert {to_hex(line.get_color()) for line in history.get_lines()} == {colour}  # the best so far
        assert {to_hex(bar.get_facecolor()) for bar in figures[f"importances-{model}"].axes[0].patches} == {
            colour
        }
        for ax in figures[f"slice-{model}"].axes:
            for points in ax.collections:
                points.figure.canvas.draw()
                assert all(same_hue(c[:3], colour) for c in points.get_facecolors()), model
    assert len(set(colours.values())) == len(colours)


def test_every_axis_of_every_figure_shows_its_values(handmade):
    """Tick labels on every axis (or on the axis it shares), the log axes of the diagnostics
    included: a log axis within a decade has no major tick, so it is drawn linear."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    _, store, record = handmade
    for name, figure in every_figure(store, record).items():
        FigureCanvasAgg(figure).draw()
        for ax in figure.axes:
            if ax.get_label() == "<colorbar>":
                continue
            for axis, shared in ((ax.xaxis, ax.get_shared_x_axes()), (ax.yaxis, ax.get_shared_y_axes())):
                low, high = sorted(axis.get_view_interval())
                siblings = [getattr(a, axis.axis_name + "axis") for a in shared.get_siblings(ax)]
                shown = {  # labels drawn: visible, with text, at a tick inside the axis's view
                    label.get_text()
                    for sibling in siblings
                    for tick, label in zip(
                        sibling.get_majorticklocs(), sibling.get_ticklabels(), strict=False
                    )
                    if label.get_visible() and label.get_text() and low <= tick <= high
                }
                assert len(shown) >= 2, (name, axis.axis_name, ax.get_ylabel())


def test_the_report_is_ranked_counts_compute_and_opens_as_one_html_file(handmade, tmp_path):
    from click.testing import CliRunner

    from sweeper.cli import main

    _, store, record = handmade
    rows = compare(store, record)
    assert rows[0].model == "gru" and rows[-1].model == "lstm"  # gru's best 0.08, lstm's 0.20
    assert all(r.compute_unit == "CPU-h" and r.compute_hours is not None for r in rows)
    assert "{}" not in to_csv(rows)
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", record.name, "--storage", store.url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(list(out.glob("*.png"))) > 0
    assert page.index('<tr class="best"><td>gru</td>') < page.index("<td>lstm</td>")
