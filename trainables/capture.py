"""The training step captured: on CUDA, forward, backward, clipping, the window's loss sums and
the optimizers' steps replayed as one CUDA graph, a few launches where Python issues hundreds.

The training setting `capture` (true by default) takes it on CUDA for tasks a graph can replay
(`Task.capturable`); `capture: false` never does, and a CPU has no graphs. What would block the
capture stays out of the graph:
- the task draws each batch outside it, and the batch is copied into the buffers the graph reads;
- the first `WARMUP_STEPS` steps run uncaptured on the stream the capture then uses, as torch
  requires: they compile and self-check the fused scans and create the optimizers' state and the
  libraries' workspaces, so that the capture compiles, checks and initialises nothing;
- the optimizers are built `capturable` (their step counts live on the device);
- the models' step hooks (NC-GRU's carried inverse: exact every `reset_interval` steps, else its
  Neumann series) run between replays, uncaptured: the hook picks its branch from a step count on
  the host, which a graph would freeze at the branch it captured, and it binds new tensors to its
  buffers, which a graph would keep writing where the forward pass no longer reads.
  `PinnedBuffers` keeps each buffer at the tensor the graph reads;
- nothing in the step reads the device: the loop reads the loss sums at reports.

An error raised while warming up, capturing or replaying (the first replay waits for the device,
so that its errors are raised there) makes the trial go on with the plain step (`trainables.step`)
on the same batch, logs why, and the `capture` metric says so. The metric is one word, as a log
line's `key=value` needs: `graph`; `off` (`capture: false`); `eager:warm-up` before the capture;
`eager:<device>` where there are no CUDA graphs; `eager:batches-vary` for a task a graph cannot
replay; `eager:failed:<error>` after a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

import torch
from torch import nn

from trainables.step import PlainStep, StepParts
from trainables.tasks.base import Batch, Task

log = logging.getLogger(__name__)

WARMUP_STEPS = 3  # torch's examples warm up three iterations before a capture
FAILURE_WORD_LENGTH = 120
T = TypeVar("T")


class Recording(Protocol):
    """A captured body of work that runs again, on the same tensors, each time it is replayed."""

    def replay(self) -> None: ...


def cuda_graph(body: Callable[[], None], stream: torch.cuda.Stream | None) -> Recording:
    """Capture `body` on `stream` into a CUDA graph; nothing of it runs until it is replayed. The
    outer stream context puts the caller's stream back even when ending the capture fails."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        body()
    return graph


def capture_declined(setting: bool, device: torch.device, task: Task) -> str | None:
    """The `capture` metric of a trial that will not try a graph, or None where it tries one."""
    if not setting:
        return "off"
    if device.type != "cuda":
        return f"eager:{device.type}"
    if not task.capturable:
        return "eager:batches-vary"
    return None


def failure_word(error: BaseException) -> str:
    """The `capture` metric after `error`, one word: the first error of a chain (ending a failed
    capture raises a second, less telling one) and its first line, spaces as hyphens."""
    while error.__context__ is not None:
        error = error.__context__
    lines = str(error).splitlines()
    message = "-".join(lines[0].split()) if lines else ""
    return f"eager:failed:{type(error).__name__}" + (f":{message}" if message else "")[:FAILURE_WORD_LENGTH]


class PinnedBuffers:
    """The network's buffers kept at the tensors a capture found them in.

    A hook that runs between replays and binds a new tensor to a buffer (NC-GRU's inverse) has the
    new value copied into the pinned tensor, the one the graph reads. Such a hook first gets a copy
    of the buffer to read and keep (NC-GRU keeps the old inverse for its `neumann_condition`), so
    the copy back overwrites nothing it holds; which buffers those are is learned from the hooks
    run before the capture (`watch`).
    """

    def __init__(self, network: nn.Module) -> None:
        self.slots = [
            (module, name) for module in network.modules() for name, _ in module.named_buffers(recurse=False)
        ]
        self.rebound: set[int] = set()
        self.pinned: list[torch.Tensor] = []

    def current(self) -> list[torch.Tensor]:
        return [getattr(module, name) for module, name in self.slots]

    def watch(self, hooks: Callable[[], None]) -> None:
        """Run `hooks` uncaptured, noting which buffers they bind anew."""
        before = self.current()
        hooks()
        after = self.current()
        self.rebound |= {i for i, (old, new) in enumerate(zip(before, after, strict=True)) if new is not old}

    def pin(self) -> None:
        self.pinned = self.current()

    def around(self, hooks: Callable[[], None]) -> None:
        """Run `hooks` between replays, leaving every buffer at its pinned tensor with their values."""
        for i in self.rebound:
            module, name = self.slots[i]
            setattr(module, name, self.pinned[i].clone())
        hooks()
        for i, ((module, name), pinned) in enumerate(zip(self.slots, self.pinned, strict=True)):
            value = getattr(module, name)
            if value is not pinned:
                pinned.copy_(value)
                setattr(module, name, pinned)
                self.rebound.add(i)


class CapturedStep:
    """The training step replayed from a graph after `WARMUP_STEPS` uncaptured steps, with the
    plain step (`PlainStep`) as its fallback. `gradients` runs the whole step when the graph
    replays it, so `finish` then runs only the models' hooks. Off CUDA, where only a stand-in for
    the graph can be given (the tests'), everything runs on the caller's stream."""

    def __init__(self, parts: StepParts, device: torch.device) -> None:
        self.parts = parts
        self.plain = PlainStep(parts, "eager:warm-up")
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.buffers = PinnedBuffers(parts.network)
        self.warm_steps = 0
        self.failed = False
        self.graph: Recording | None = None
        self.static_batch: tuple[torch.Tensor, ...] = ()
        self.outputs: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def capture(self) -> str:
        return "graph" if self.graph is not None else self.plain.capture

    def gradients(self) -> tuple[torch.Tensor, torch.Tensor]:
        batch = self.parts.task.train_batch()
        if self.failed:
            return self.plain.gradients_on(batch)
        try:
            if self.warm_steps < WARMUP_STEPS:
                self.warm_steps += 1
                return self._on_stream(lambda: self.plain.gradients_on(batch))
            if self.graph is None:
                self._capture(batch)
            else:
                self._copy_in(batch)
                self.graph.replay()
        except Exception as error:  # whatever stops the graph, the plain step trains on
            self._fall_back(error)
            return self.plain.gradients_on(batch)
        assert self.outputs is not None
        return self.outputs

    def finish(self) -> None:
        """The rest of the step. A warm-up step's optimizers may already have stepped when an
        error comes, so an error here is the trial's, as in the plain step."""
        if self.graph is not None:
            self.buffers.around(self._hooks)
        elif self.failed:
            self.plain.finish()
        else:
            self._on_stream(lambda: self.buffers.watch(self.plain.finish))

    def _hooks(self) -> None:
        for rnn in self.parts.rnns:
            rnn.after_optimizer_step()

    def _on_stream(self, work: Callable[[], T]) -> T:
        """`work` on the capture's stream, ordered after and before the caller's stream's work."""
        if self.stream is None:
            return work()
        caller = torch.cuda.current_stream(self.stream.device)
        self.stream.wait_stream(caller)
        try:
            with torch.cuda.stream(self.stream):
                return work()
        finally:
            caller.wait_stream(self.stream)

    def _capture(self, batch: Batch) -> None:
        """Capture the step on `batch`'s shapes, then replay it once for this step, waiting for the
        device so that an error of the first replay is seen here."""
        parts = self.parts
        self.static_batch = tuple(tensor.clone() for tensor in batch)
        self.buffers.pin()
        for optimizer in parts.optimizers:  # the gradients are then allocated inside the graph
            optimizer.zero_grad(set_to_none=True)

        def body() -> None:
            loss, norm = self.plain.gradients_on(self.static_batch)
            for optimizer in parts.optimizers:
                optimizer.step()
            self.outputs = (loss.detach(), norm)

        graph = cuda_graph(body, self.stream)
        graph.replay()
        if self.stream is not None:
            torch.cuda.current_stream(self.stream.device).synchronize()
        self.graph = graph

    def _copy_in(self, batch: Batch) -> None:
        for static, fresh in zip(self.static_batch, batch, strict=True):
            if fresh.shape != static.shape or fresh.dtype != static.dtype:
                raise ValueError(
                    f"a training batch of shape {tuple(fresh.shape)} ({fresh.dtype}) where the captured "
                    f"step reads {tuple(static.shape)} ({static.dtype}): the task is not capturable"
                )
            static.copy_(fresh)

    def _fall_back(self, error: Exception) -> None:
        self.failed = True
        self.graph, self.static_batch, self.outputs = None, (), None
        self.plain.capture = failure_word(error)
        log.warning(
            "the training step could not be captured, so this trial runs it uncaptured: %s: %s",
            type(error).__name__,
            error,
        )
