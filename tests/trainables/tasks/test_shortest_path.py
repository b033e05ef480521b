from __future__ import annotations

from collections import deque

import torch

from trainables.tasks.settings import ShortestPathSettings
from trainables.tasks.shortest_path import (
    ANSWER,
    EDGE,
    END,
    EOL,
    IGNORE,
    MAX_PATH,
    QUESTION,
    ShortestPath,
    generate_fold,
)


def parse(tokens: list[int]) -> tuple[dict[int, set[int]], list[tuple[int, int]], int, int]:
    """Adjacency and directed edges from the serialization, and the question's two nodes."""
    question = tokens.index(QUESTION)
    edges = []
    for i in range(0, question, 4):
        a, edge, b, eol = tokens[i : i + 4]
        assert (edge, eol) == (EDGE, EOL)
        edges.append((a, b))
    adjacency: dict[int, set[int]] = {n: set() for n in range(9)}
    for a, b in edges:
        adjacency[a].add(b)
    source, target, ans = tokens[question + 1 : question + 4]
    assert ans == ANSWER and all(t == ANSWER for t in tokens[question + 4 :])
    return adjacency, edges, source, target


def bfs_shortest_paths(adjacency: dict[int, set[int]], source: int, target: int) -> list[list[int]]:
    """Every shortest path, by a breadth-first search that keeps all parents."""
    distance, parents = {source: 0}, {source: []}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for nxt in sorted(adjacency[node]):
            if nxt not in distance:
                distance[nxt] = distance[node] + 1
                parents[nxt] = [node]
                queue.append(nxt)
            elif distance[nxt] == distance[node] + 1:
                parents[nxt].append(node)

    def unwind(node: int) -> list[list[int]]:
        return (
            [[source]] if node == source else [[*p, node] for parent in parents[node] for p in unwind(parent)]
        )

    return unwind(target) if target in distance else []


def components(adjacency: dict[int, set[int]]) -> list[int]:
    seen, sizes = set(), []
    for start in adjacency:
        if start in seen:
            continue
        stack, size = [start], 0
        seen.add(start)
        while stack:
            node = stack.pop()
            size += 1
            for nxt in adjacency[node] - seen:
                seen.add(nxt)
                stack.append(nxt)
        sizes.append(size)
    return sorted(sizes)


def test_answers_are_the_unique_shortest_path_found_by_bfs() -> None:
    inputs, targets = generate_fold(200, seed=7)
    assert inputs.shape == (9 * 2 * 4 + 4 + MAX_PATH, 200) and targets.shape == (MAX_PATH + 1, 200)
    for column in range(200):
        adjacency, edges, source, target = parse(inputs[:, column].tolist())
        assert len(edges) == 18 and all((b, a) in edges for a, b in edges)  # both directions
        assert components(adjacency) == [4, 5]
        paths = bfs_shortest_paths(adjacency, source, target)
        assert len(paths) == 1 and len(paths[0]) >= 3 and source != target
        answer = [t for t in targets[:, column].tolist() if t != IGNORE]
        assert answer == paths[0] + [END]


def test_folds_follow_data_seed_and_metrics_are_whole_path() -> None:
    settings = ShortestPathSettings(train_size=20, valid_size=10, test_size=10, data_seed=3)
    a = ShortestPath(settings, batch_size=4, seed=0, device=torch.device("cpu"))
    b = ShortestPath(settings, batch_size=4, seed=1, device=torch.device("cpu"))
    assert torch.equal(a.splits["valid"][0], b.splits["valid"][0])
    assert not torch.equal(a.splits["valid"][0], a.splits["test"][0])
    seen = torch.cat([a.train_batch()[0] for _ in range(5)], dim=1)  # one epoch: every example once
    assert seen.shape[1] == 20 and len({tuple(c) for c in seen.T.tolist()}) == len(
        {tuple(c) for c in a.splits["train"][0].T.tolist()}
    )

    class Oracle(torch.nn.Module):
        """Emits the right answer at every answer step but one wrong node in the first example."""

        def __init__(self, targets: torch.Tensor, spoil: bool) -> None:
            super().__init__()
            self.targets, self.spoil = targets, spoil

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = torch.zeros(x.shape[0], x.shape[1], 10)
            answers = self.targets[:, : x.shape[1]].clamp(min=0)
            out[-(MAX_PATH + 1) :].scatter_(2, answers.unsqueeze(-1), 10.0)
            if self.spoil:
                out[-(MAX_PATH + 1), 0] = 0
                out[-(MAX_PATH + 1), 0, (answers[0, 0] + 1) % 9] = 10.0
            return out

    valid_targets = a.splits["valid"][1]
    a.batch_size = 10
    assert a.evaluate(Oracle(valid_targets, spoil=False))["valid_accuracy"] == 1.0
    assert a.evaluate(Oracle(valid_targets, spoil=True))["valid_accuracy"] == 0.9
    assert set(a.evaluate(Oracle(a.splits["test"][1], spoil=False), split="test")) == {
        "test_loss",
        "test_accuracy",
    }


def test_trials_reusing_a_process_generate_the_folds_once(monkeypatch) -> None:
    from trainables.tasks import shortest_path

    drawn = []
    real = shortest_path.sample_graph
    monkeypatch.setattr(shortest_path, "sample_graph", lambda rng: drawn.append(1) or real(rng))
    generate_fold.cache_clear()
    settings = ShortestPathSettings(train_size=12, valid_size=6, test_size=6, data_seed=11)
    first = ShortestPath(settings, batch_size=4, seed=0, device=torch.device("cpu"))
    assert len(drawn) >= 24
    before = len(drawn)
    second = ShortestPath(settings, batch_size=4, seed=1, device=torch.device("cpu"))
    assert len(drawn) == before, "the second trial generated the folds again"
    assert all(torch.equal(first.splits[s][0], second.splits[s][0]) for s in ("train", "valid", "test"))
