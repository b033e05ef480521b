from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from trainables.catalog import load_all
from trainables.data import DataError, MissingDataError, ptb_char_line
from trainables.models.base import RecurrentModel
from trainables.registry import TASKS
from trainables.tasks.language import EOS, batchify, load_corpus

load_all()


def make(task: str, data_dir: Path, batch_size: int = 3, **settings):
    return TASKS.get(task).create(
        {"data_dir": str(data_dir), **settings}, batch_size=batch_size, seed=0, device=torch.device("cpu")
    )


def test_ptb_char_line_is_the_standard_format() -> None:
    assert ptb_char_line(" aer banknote <unk> N \n") == "a e r _ b a n k n o t e _ < u n k > _ N"


def test_word_vocabulary_and_splits(tmp_path: Path, corpora) -> None:
    text = corpora.write_ptb(tmp_path)
    corpus = load_corpus("ptb_word", tmp_path, ("ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"), False)
    expected_vocabulary: list[str] = []
    for split in ("train", "valid", "test"):
        tokens = [t for line in text[split] for t in [*line.split(), EOS]]
        for t in tokens:
            if t not in expected_vocabulary:
                expected_vocabulary.append(t)
        assert [corpus.vocabulary[i] for i in corpus.splits[split].tolist()] == tokens
    assert list(corpus.vocabulary) == expected_vocabulary
    assert "<unk>" in corpus.vocabulary  # unknown words kept as the files spell them


def test_char_vocabulary(tmp_path: Path, corpora) -> None:
    text = corpora.write_ptb(tmp_path)
    task = make("ptb_char", tmp_path)
    assert set(task.vocabulary) >= {"_", EOS, "a", "<"}
    assert all(len(t) == 1 for t in task.vocabulary if t != EOS)
    first_line = text["train"][0]
    decoded = [
        task.vocabulary[i]
        for i in load_corpus(
            "ptb_char", tmp_path, ("ptb.char.train.txt", "ptb.char.valid.txt", "ptb.char.test.txt"), True
        )
        .splits["train"][: len(ptb_char_line(first_line).split()) + 1]
        .tolist()
    ]
    assert decoded == [*ptb_char_line(first_line).split(), EOS]
    assert task.input_size == task.output_size == len(task.vocabulary)  # one-hot by default


def test_batches_continue_the_text_and_wrap(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path)
    task = make("ptb_word", tmp_path, batch_size=3, bptt=4)
    train_ids = load_corpus(
        "ptb_word", tmp_path, ("ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"), False
    ).splits["train"]
    rows = train_ids.numel() // 3
    columns = train_ids[: rows * 3].reshape(3, rows)  # column j: the j-th contiguous slice of the text
    windows = []
    while True:
        inputs, targets, fresh = task.train_batch()
        if fresh and windows:
            break
        assert inputs.shape == targets.shape and inputs.shape[1] == 3 and inputs.shape[0] <= 4
        assert fresh == (not windows)
        windows.append((inputs, targets))
    for (_, previous_targets), (inputs, _) in itertools.pairwise(windows):
        assert torch.equal(inputs[0], previous_targets[-1])  # step k + 1 continues step k
    read = torch.cat([w[0] for w in windows] + [windows[-1][1][-1:]])
    assert torch.equal(read.T, columns)


class Recorder(nn.Module):
    """Stands in for a language model: records the state it is given, returns a numbered one."""

    def __init__(self, vocabulary: int) -> None:
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(vocabulary))
        self.seen: list[int | None] = []

    def forward(self, tokens: torch.Tensor, states=None):
        self.seen.append(None if states is None else int(states[0].item()))
        return self.logits.expand(*tokens.shape, -1), [torch.tensor([len(self.seen)])]


def test_state_is_carried_across_windows_and_reset_at_the_start(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path)
    task = make("ptb_word", tmp_path, batch_size=3, bptt=10)
    recorder = Recorder(task.output_size)
    windows = math.ceil((task.data["train"].shape[0] - 1) / 10)
    for _ in range(windows + 2):
        loss = task.loss(recorder, task.train_batch())
    assert loss.requires_grad
    assert recorder.seen == [None, *range(1, windows), None, windows + 1]


def test_metrics_in_the_papers_units(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path)
    char = make("ptb_char", tmp_path)
    result = char.evaluate(Recorder(char.output_size))
    assert result["valid_loss"] == pytest.approx(math.log(char.output_size))
    assert result["valid_bpc"] == pytest.approx(math.log2(char.output_size))
    word = make("ptb_word", tmp_path)
    result = word.evaluate(Recorder(word.output_size), split="test")
    assert result["test_ppl"] == pytest.approx(word.output_size, rel=1e-5)
    assert (TASKS.get("ptb_char").objective, TASKS.get("ptb_word").objective) == ("valid_bpc", "valid_ppl")
    assert set(char.evaluate(Recorder(char.output_size))) == set(TASKS.get("ptb_char").metrics)
    assert set(word.evaluate(Recorder(word.output_size))) == set(TASKS.get("ptb_word").metrics)


def test_wikitext_tokens(tmp_path: Path, corpora) -> None:
    corpora.write_wikitext(tmp_path)
    task = make("wikitext2", tmp_path, layers=1, embedding_size=4)
    assert {"@-@", "@,@", "=", "<unk>", EOS} <= set(task.vocabulary)
    assert task.input_size == 4


class Tiny(RecurrentModel):
    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.rnn = nn.RNN(input_size, hidden_size)

    def forward(self, x, state=None):
        return self.rnn(x, state)


def test_stacked_layers_sizes_and_dropout(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path)
    task = make("ptb_word", tmp_path, layers=3, embedding_size=5, inner_hidden_size=7)
    network = task.create_network(lambda i, h=None: Tiny(i, h or 6))
    assert [(r.input_size, r.hidden_size) for r in network.rnns] == [(5, 6), (6, 7), (7, 6)]
    network.train()
    torch.manual_seed(0)
    tokens = torch.arange(task.output_size).repeat(3, 1)
    embedded = network.embed(tokens)
    dropped = (embedded == 0).all(-1)
    assert dropped.any() and (dropped == dropped[0]).all()  # whole token types, the same at every step
    with pytest.raises(ValidationError, match="layers >= 3"):
        TASKS.get("ptb_word").settings.model_validate({"layers": 2, "inner_hidden_size": 7})


def test_missing_files_say_what_to_put_where(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError) as error:
        make("ptb_word", tmp_path / "nowhere")
    message = str(error.value)
    assert "ptb.train.txt, ptb.valid.txt, ptb.test.txt" in message
    assert "sweeper data fetch ptb_word" in message and "nowhere" in message


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValidationError, match="is a file, not a directory"):  # refused with the settings
        make("wikitext2", tmp_path / "file")


def test_malformed_files_name_the_line(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path)
    (tmp_path / "ptb.valid.txt").write_bytes(b" a b \n c \xff d \n")
    with pytest.raises(DataError, match=r"ptb\.valid\.txt, line 2: not UTF-8"):
        make("ptb_word", tmp_path)
    (tmp_path / "ptb.char.test.txt").write_text("a b _ c\na bc _ d\n")
    with pytest.raises(
        DataError, match=r"ptb\.char\.test\.txt, line 2: token 'bc' is not a single character"
    ):
        make("ptb_char", tmp_path)
    (tmp_path / "ptb.char.test.txt").write_text("")
    with pytest.raises(DataError, match="empty"):
        make("ptb_char", tmp_path)


def test_too_short_text_for_the_batch(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path, lines={"train": 1, "valid": 1, "test": 1})
    with pytest.raises(DataError, match="too few"):
        make("ptb_word", tmp_path, batch_size=64)


def test_batchify_columns() -> None:
    assert batchify(torch.arange(7), 3).T.tolist() == [[0, 1], [2, 3], [4, 5]]
