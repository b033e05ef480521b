"""The algorithmic task of the GORU paper: answer the shortest path of a random graph.

It follows the shortest-path task of Li et al.'s gated graph sequence networks (their generator's
task 4, serialized for their RNN baselines): a connected Watts–Strogatz graph of 5 nodes (k = 3,
p = 0.5) and a 4-node distractor graph, node ids shuffled over 0–8, each undirected edge given
in both directions in random order, then a question "q s t ans" and the path's node ids as the
answer. Samples whose source equals the target, whose shortest path is not unique or has fewer
than 3 nodes are rejected. The folds are fixed-size and small, so they are generated once per
`data_seed`, and once per process: the trials that reuse a worker skip the second or so that
networkx takes; the trial's seed only orders the training minibatches.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from trainables.cache import process_cache
from trainables.tasks.base import Task
from trainables.tasks.settings import ShortestPathSettings

if TYPE_CHECKING:
    import networkx as nx

N_MAIN, N_DISTRACTOR = 5, 4
N_NODES = N_MAIN + N_DISTRACTOR
WS_K, WS_P = 3, 0.5
# Input vocabulary: node ids 0..8, then the structural words of the serialization.
EDGE, EOL, QUESTION, ANSWER = N_NODES, N_NODES + 1, N_NODES + 2, N_NODES + 3
VOCABULARY = N_NODES + 4
END = N_NODES  # output class that closes the answer, after the path's node ids
MAX_PATH = N_MAIN  # the path lies in the 5-node graph
IGNORE = -100


def sample_graph(rng: random.Random) -> tuple[nx.Graph, int, int, list[int]] | None:
    """One graph with its question and unique shortest path, or None when the draw is rejected."""
    # networkx is imported here, by a process that generates the folds, not by every process that
    # registers the tasks (each trial worker, each `sweeper train`): 0.1-0.2 CPU-s each, measured
    # after torch and Ray Tune; once imported, this line is a lookup in sys.modules
    import networkx as nx

    main = nx.connected_watts_strogatz_graph(N_MAIN, WS_K, WS_P, seed=rng)
    distractor = nx.connected_watts_strogatz_graph(N_DISTRACTOR, WS_K, WS_P, seed=rng)
    graph = nx.disjoint_union(main, distractor)
    ids = list(range(N_NODES))
    rng.shuffle(ids)
    graph = nx.relabel_nodes(graph, dict(enumerate(ids)))
    source, target = (ids[i] for i in rng.sample(range(N_MAIN), 2))
    paths = list(nx.all_shortest_paths(graph, source, target))
    if len(paths) != 1 or len(paths[0]) < 3:
        return None
    return graph, source, target, paths[0]


def serialize(graph: nx.Graph, source: int, target: int, rng: random.Random) -> list[int]:
    """Tokens of "n<a> e n<b> eol" per directed edge (shuffled), then "q n<s> n<t> ans"."""
    edges = [(a, b) for u, v in graph.edges for a, b in ((u, v), (v, u))]
    rng.shuffle(edges)
    tokens = [token for a, b in edges for token in (a, EDGE, b, EOL)]
    return [*tokens, QUESTION, source, target, ANSWER]


@process_cache(maxsize=6)
def generate_fold(size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`size` examples: inputs (L + MAX_PATH, N) and targets (MAX_PATH + 1, N), shared by the
    trials of a process (read, never written).

    The RNN reads the serialization, then keeps reading "ans" while it emits the path's nodes and
    END; target positions past END are ignored. Every graph has 9 edges, so L is fixed.
    """
    rng = random.Random(seed)
    inputs, targets = [], []
    while len(inputs) < size:
        sample = sample_graph(rng)
        if sample is None:
            continue
        graph, source, target, path = sample
        inputs.append(serialize(graph, source, target, rng) + [ANSWER] * MAX_PATH)
        targets.append(path + [END] + [IGNORE] * (MAX_PATH - len(path)))
    return torch.tensor(inputs).T.contiguous(), torch.tensor(targets).T.contiguous()


class ShortestPath(Task):
    """Whole-path accuracy: an answer counts only when every node and the END are right."""

    stream_attributes: ClassVar[tuple[str, ...]] = ("_gen", "_order")

    input_size = VOCABULARY
    output_size = N_NODES + 1

    @classmethod
    def sized(cls, settings: ShortestPathSettings) -> ShortestPath:
        task = cls.__new__(cls)
        task.settings = settings
        return task

    def __init__(
        self, settings: ShortestPathSettings, batch_size: int, seed: int, device: torch.device
    ) -> None:
        self.settings = settings
        self.batch_size = batch_size
        self.device = device
        seed_base = settings.data_seed * 3
        self.splits = {
            name: tuple(t.to(device) for t in generate_fold(size, seed_base + offset))
            for offset, (name, size) in enumerate(
                (("train", settings.train_size), ("valid", settings.valid_size), ("test", settings.test_size))
            )
        }
        self._gen = torch.Generator().manual_seed(seed)
        self._order = torch.empty(0, dtype=torch.long)

    def train_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        if len(self._order) < self.batch_size:  # a new epoch, reshuffled
            fresh = torch.randperm(self.settings.train_size, generator=self._gen)
            self._order = torch.cat([self._order, fresh])
        index, self._order = self._order[: self.batch_size], self._order[self.batch_size :]
        inputs, targets = self.splits["train"]
        index = index.to(self.device)
        return inputs[:, index], targets[:, index]

    def _logits(self, network: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
        out = network(F.one_hot(inputs, self.input_size).float())
        return out[-(MAX_PATH + 1) :]

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, targets = batch
        logits = self._logits(network, inputs)
        return F.cross_entropy(logits.reshape(-1, self.output_size), targets.reshape(-1), ignore_index=IGNORE)

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        """Metrics on the validation set, or with `split="test"` on the test set."""
        inputs, targets = self.splits[split]
        total_loss, steps, solved = 0.0, 0, 0
        for start in range(0, inputs.shape[1], self.batch_size):
            x, y = inputs[:, start : start + self.batch_size], targets[:, start : start + self.batch_size]
            logits = self._logits(network, x)
            total_loss += F.cross_entropy(
                logits.reshape(-1, self.output_size), y.reshape(-1), ignore_index=IGNORE, reduction="sum"
            ).item()
            steps += (y != IGNORE).sum().item()
            wrong = (logits.argmax(-1) != y) & (y != IGNORE)
            solved += (~wrong.any(0)).sum().item()
        return {f"{split}_loss": total_loss / steps, f"{split}_accuracy": solved / inputs.shape[1]}
