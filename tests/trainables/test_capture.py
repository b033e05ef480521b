"""The captured training step: on a CPU it is never taken and the report says so; its code path,
with a graph stand-in that replays by calling the captured body (a CPU build of torch has no
graph of any kind: `torch.cuda.CUDAGraph` and `torch.accelerator.Graph` both refuse), gives the
plain step's numbers exactly; a failure to capture or to replay falls back to the plain step and
says why. Where CUDA is (the GPU acceptance script runs this file), a real graph trains as the
uncaptured step does."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

import trainables.capture
import trainables.train
from trainables.capture import WARMUP_STEPS, PinnedBuffers, capture_declined, failure_word
from trainables.models.rnn import FusedRNN
from trainables.registry import MODELS, ModelEntry
from trainables.train import train

# model settings that exercise every part of the step: NC-GRU's inverse reset every other step
# between Neumann steps, TensorFlow's RMSProp with its seeded state, clipping, Adam, plain SGD
RUNS = {
    "ncgru": {
        "rho": 3,
        "reset_interval": 2,
        "optimizer": "rmsprop_tf",
        "orth_optimizer": "rmsprop_tf",
        "grad_clip": 0.5,
    },
    "goru": {"optimizer": "adam"},
    "gru": {"optimizer": "sgd", "lr": 0.1, "grad_clip": 1.0},
}


def config(model: str, device: str = "cpu", **extra) -> dict:
    return {
        "task": "denoise",
        "model": model,
        "device": device,
        "task_settings": {"T": 5, "valid_size": 8, "test_size": 8},
        "hidden_size": 10,
        "batch_size": 4,
        "iterations": 6,  # reports at step 3, the last warm-up step, and at step 6, after the capture
        "eval_every": 3,
        "lr": 0.01,
        **RUNS.get(model, {}),
        **extra,
    }


def reports_of(run: dict) -> dict[int, dict]:
    reports: dict[int, dict] = {}
    train(run, lambda step, metrics: reports.__setitem__(step, metrics))
    return reports


def numbers(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("wall_time", "capture")}


class EagerGraph:
    """Stands in for a CUDA graph: capturing runs nothing, each replay calls the captured body."""

    captures = 0

    def __init__(self, body, stream) -> None:
        EagerGraph.captures += 1
        self.body, self.replays = body, 0

    def replay(self) -> None:
        self.replays += 1
        self.body()


@pytest.fixture
def eager_graphs(monkeypatch):
    """The captured path taken on a CPU, through the stand-in."""
    monkeypatch.setattr(
        trainables.train, "capture_declined", lambda setting, device, task: None if setting else "off"
    )
    monkeypatch.setattr(trainables.capture, "cuda_graph", EagerGraph)
    EagerGraph.captures = 0


def test_on_a_cpu_the_step_is_never_captured_and_the_report_says_so() -> None:
    auto = reports_of(config("gru", iterations=2))
    off = reports_of(config("gru", iterations=2, capture=False))
    assert auto[2]["capture"] == "eager:cpu" and off[2]["capture"] == "off"
    assert numbers(auto[2]) == numbers(off[2])


def test_a_task_a_graph_cannot_replay_is_never_captured() -> None:
    cuda = torch.device("cuda")
    assert capture_declined(True, cuda, SimpleNamespace(capturable=False)) == "eager:batches-vary"
    assert capture_declined(True, cuda, SimpleNamespace(capturable=True)) is None
    assert capture_declined(False, cuda, SimpleNamespace(capturable=True)) == "off"


@pytest.mark.parametrize("model", list(RUNS))
def test_the_captured_path_gives_the_plain_steps_numbers(model, eager_graphs) -> None:
    """Static batch buffers, the optimizers inside the body, the hooks between replays with their
    buffers pinned (NC-GRU's resets and Neumann steps, its `neumann_condition` included) and the
    sums accumulated without reading the device: every reported number equals the plain step's."""
    plain = reports_of(config(model, capture=False))
    captured = reports_of(config(model))
    assert EagerGraph.captures == 1
    for step in plain:
        assert captured[step]["capture"] == ("graph" if step > WARMUP_STEPS else "eager:warm-up")
        assert numbers(captured[step]) == numbers(plain[step]), step


def test_a_failing_capture_falls_back_to_the_plain_step_and_says_why(
    eager_graphs, monkeypatch, caplog
) -> None:
    def refuse(body, stream):
        try:
            raise RuntimeError("operation not permitted when stream is capturing")
        except RuntimeError:
            raise RuntimeError("the capture was invalidated") from None  # as ending a failed capture does

    monkeypatch.setattr(trainables.capture, "cuda_graph", refuse)
    plain = reports_of(config("ncgru", capture=False))
    with caplog.at_level(logging.WARNING, logger="trainables.capture"):
        fell_back = reports_of(config("ncgru"))
    word = "eager:failed:RuntimeError:operation-not-permitted-when-stream-is-capturing"
    assert [fell_back[step]["capture"] for step in (3, 6)] == ["eager:warm-up", word]
    assert "could not be captured" in caplog.text
    for step in plain:
        assert numbers(fell_back[step]) == numbers(plain[step]), step


def test_a_failing_first_replay_falls_back_to_the_plain_step_on_the_same_batch(eager_graphs, monkeypatch) -> None:  # fmt: skip
    class Unlaunchable(EagerGraph):
        def replay(self) -> None:
            raise RuntimeError("CUDA error: operation not supported")

    monkeypatch.setattr(trainables.capture, "cuda_graph", Unlaunchable)
    plain = reports_of(config("goru", capture=False))
    fell_back = reports_of(config("goru"))
    assert fell_back[6]["capture"] == "eager:failed:RuntimeError:CUDA-error:-operation-not-supported"
    for step in plain:
        assert numbers(fell_back[step]) == numbers(plain[step]), step


class Carrying(torch.nn.Module):
    """A hook that binds a new tensor to its buffer and keeps the old one, as NC-GRU's does."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("value", torch.zeros(2))
        self.kept: torch.Tensor | None = None

    def hook(self) -> None:
        self.kept = self.value
        self.value = self.value + 1


def test_pinned_buffers_stay_where_the_graph_reads_them_with_the_hooks_values() -> None:
    module = Carrying()
    buffers = PinnedBuffers(module)
    buffers.watch(module.hook)  # a step before the capture: the hook rebinds `value`
    buffers.pin()
    pinned = module.value
    for expected in (2.0, 3.0):
        buffers.around(module.hook)
        assert module.value is pinned and module.value.tolist() == [expected] * 2
        assert module.kept.tolist() == [expected - 1] * 2  # what the hook kept is not overwritten


def test_the_failure_word_is_one_word_naming_the_first_error() -> None:
    try:
        try:
            raise RuntimeError("first line\nsecond line")
        except RuntimeError:
            raise ValueError("later") from None
    except ValueError as error:
        assert failure_word(error) == "eager:failed:RuntimeError:first-line"
    assert failure_word(KeyError()) == "eager:failed:KeyError"


on_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need CUDA")


def close(captured: dict, plain: dict) -> None:
    for key in ("train_loss", "valid_loss", "grad_norm"):
        assert captured[key] == pytest.approx(plain[key], rel=1e-3, abs=1e-5), key


@on_cuda
@pytest.mark.parametrize("model", [*RUNS, "scornn"])
def test_on_cuda_a_captured_trial_trains_as_the_uncaptured_one(model) -> None:
    """The graph replays forward, backward, clipping and the optimizers on each new batch (copied
    into its buffers), and NC-GRU's hooks between replays reach the graph's inverse: the losses
    follow the uncaptured trial's. scoRNN inverts I + A in every forward pass, and a solver that
    waits for the host there makes it report the fallback instead; its numbers match either way."""
    runs = {
        setting: reports_of(config(model, "cuda", capture=setting, iterations=12, eval_every=4))
        for setting in (True, False)
    }
    if model == "scornn":
        assert runs[True][12]["capture"] == "graph" or runs[True][12]["capture"].startswith("eager:failed:")
    else:
        assert runs[True][12]["capture"] == "graph", runs[True][12]["capture"]
    for step in (4, 8, 12):
        close(runs[True][step], runs[False][step])


class Syncing(FusedRNN):
    """Reads its output back to the host every forward pass, which no graph can capture."""

    def forward(self, x, state=None):
        out, state = super().forward(x, state)
        return out * (1.0 + 0.0 * float(out.sum())), state


@on_cuda
def test_on_cuda_a_step_that_reads_the_host_falls_back_to_the_uncaptured_step() -> None:
    MODELS.register("syncing", ModelEntry("syncing", lambda i, h: Syncing(torch.nn.GRU, i, h)))
    try:
        captured = reports_of(config("syncing", "cuda", optimizer="adam"))
        plain = reports_of(config("syncing", "cuda", optimizer="adam", capture=False))
    finally:
        MODELS._entries.pop("syncing")
    assert captured[6]["capture"].startswith("eager:failed:"), captured[6]["capture"]
    for step in plain:
        close(captured[step], plain[step])
