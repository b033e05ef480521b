from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from trainables.catalog import load_all
from trainables.data import DataError, MissingDataError
from trainables.models.base import RecurrentModel
from trainables.registry import TASKS
from trainables.tasks.babi import parse_babi

load_all()

STORY = """1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Sandra moved to the garden.
6 Where is Daniel? \thallway\t4
1 Sandra travelled to the office.
2 Sandra picked up the football there.
3 Where is the football? \toffice\t2 1
"""


def make(data_dir: Path, batch_size: int = 4, **settings):
    return TASKS.get("babi").create(
        {"data_dir": str(data_dir), **settings}, batch_size=batch_size, seed=0, device=torch.device("cpu")
    )


def test_parses_multi_sentence_stories_and_supporting_facts(tmp_path: Path) -> None:
    path = tmp_path / "qa2_two-supporting-facts_train.txt"
    path.write_text(STORY)
    first, second, third = parse_babi(path, task=2)
    assert first.story == (
        ("mary", "moved", "to", "the", "bathroom", "."),
        ("john", "went", "to", "the", "hallway", "."),
    )
    assert first.question == ("where", "is", "mary", "?") and first.answer == "bathroom"
    assert first.supporting == (0,)
    assert len(second.story) == 4 and second.supporting == (2,)  # question lines are not statements
    assert second.story[2][0] == "daniel"
    assert len(third.story) == 2 and third.supporting == (1, 0) and third.answer == "office"
    assert {first.task, third.task} == {2}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1 Mary went home.\n3 Where is Mary? \thome\t1\n", "line 2: line number 3 does not follow 1"),
        ("1 Mary went home.\n2 Where is Mary? \thome\t7\n", "line 2: supporting facts '7'"),
        ("1 Mary went home.\n2 Where is Mary?\thome\n", "line 2: a question line needs"),
        ("Mary went home.\n", "line 1: expected '<line number> <text>'"),
        ("1 Mary went home.\n", "no questions"),
    ],
)
def test_malformed_lines_are_named(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "qa1_x_train.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=match) as error:
        parse_babi(path, task=1)
    assert str(path) in str(error.value)


def test_task_splits_vocabulary_and_batches(tmp_path: Path, corpora) -> None:
    corpora.write_babi(tmp_path, tasks=(1, 2), stories=10)
    task = make(tmp_path, tasks=[2, 1], valid_fraction=0.2)
    for number in (1, 2):
        in_file = len(
            parse_babi(next((tmp_path / "tasks_1-20_v1-2" / "en").glob(f"qa{number}_*_train.txt")), number)
        )
        held_out = int((task.splits["valid"].tasks == number).sum())
        assert held_out == round(0.2 * in_file)
        assert held_out + int((task.splits["train"].tasks == number).sum()) == in_file
    assert set(task.answers) <= set(corpora.PLACES)
    assert task.vocabulary["<pad>"] == 0 and "?" in task.vocabulary and "mary" in task.vocabulary
    stories, questions, answers = task.train_batch()
    assert stories.shape[1] == questions.shape[1] == answers.shape[0] == 4
    assert questions.shape[0] == 4  # "where is <name> ?"
    assert (stories[-1] == task.vocabulary["."]).all()  # front padding: the last step ends the story
    again = make(tmp_path, tasks=[1, 2], valid_fraction=0.2, data_seed=0)
    assert torch.equal(again.splits["valid"].answers, task.splits["valid"].answers)


def test_max_story_sentences_keeps_the_last_statements(tmp_path: Path) -> None:
    root = tmp_path / "tasks_1-20_v1-2" / "en"
    root.mkdir(parents=True)
    for split in ("train", "test"):
        (root / f"qa1_single-supporting-fact_{split}.txt").write_text(STORY + STORY)
    task = make(tmp_path, max_story_sentences=1, valid_fraction=0.2)
    lengths = task.splits["test"].story_lengths.tolist()
    assert lengths == [6, 6, 7] * 2  # only the last statement: "sandra picked up the football there ."


class Tiny(RecurrentModel):
    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.rnn = nn.GRU(input_size, hidden_size)

    def forward(self, x, state=None):
        return self.rnn(x, state)


def test_three_rnn_reader_and_per_task_accuracy(tmp_path: Path, corpora) -> None:
    corpora.write_babi(tmp_path, tasks=(1, 3))
    task = make(tmp_path, tasks=[1, 3], embedding_size=5)
    sizes = []
    network = task.create_network(lambda i, h=None: sizes.append(i) or Tiny(i, 6))
    assert sizes == [5, 5, 12]  # story, question, and the third RNN over both
    logits = network(*task.train_batch()[:2])
    assert logits.shape == (4, task.output_size)
    metrics = task.evaluate(network)
    assert set(metrics) == {"valid_loss", "valid_accuracy", "valid_accuracy_qa1", "valid_accuracy_qa3"}
    assert metrics["valid_accuracy"] == pytest.approx(
        (metrics["valid_accuracy_qa1"] + metrics["valid_accuracy_qa3"]) / 2
    )
    declared = TASKS.get("babi")
    assert set(declared.metrics) <= set(metrics) and declared.mode == "max"


def test_missing_files_and_10k_subset(tmp_path: Path, corpora) -> None:
    corpora.write_babi(tmp_path, tasks=(1,))
    with pytest.raises(MissingDataError) as error:
        make(tmp_path, tasks=[1, 4])
    assert "tasks_1-20_v1-2/en/qa4_*_train.txt" in str(error.value)
    assert "sweeper data fetch babi" in str(error.value)
    with pytest.raises(MissingDataError, match="en-10k/qa1"):
        make(tmp_path, subset="10k")
    corpora.write_babi(tmp_path, tasks=(1,), subset="en-10k")
    assert len(make(tmp_path, subset="10k").splits["train"].answers) > 0


def test_settings_are_validated() -> None:
    for bad in ({"tasks": [0]}, {"tasks": [1, 1]}, {"tasks": [21]}, {"subset": "5k"}, {"valid_fraction": 0}):
        with pytest.raises(ValidationError):
            TASKS.get("babi").settings.model_validate(bad)
