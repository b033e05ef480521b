"""Language modelling: Penn Treebank (characters and words) and WikiText-2.

Tokenization and vocabulary follow the papers' code (the AWD-LSTM `data.py` the NC-GRU repository
uses): every line is split on white space and closed by "<eos>", and the vocabulary holds every
token of the three files in order of first appearance, unknown words kept as the files spell them
("<unk>"). That gives ~50 symbols for PTB characters, 10,000 words for PTB, 33,278 for WikiText-2.

Each split is cut into `batch_size` contiguous columns; step k reads the BPTT window k of every
column and starts from the (detached) hidden state that step k − 1 ended with, so the batch at
step k + 1 continues the text of step k. The state restarts when the training text wraps around.

Tokenizing PTB takes seconds and every trial of a sweep needs the same ids, so the tokenized
corpus is cached on disk once per data directory (`trainables.cache`), keyed by a hash of the
files' contents: a changed file gets a new key, so a stale cache is never read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from trainables.cache import content_key, file_stamps, load_or_build, process_cache
from trainables.data import (
    PTB_CHAR_FILES,
    PTB_WORD_FILES,
    SPLITS,
    WIKITEXT2_FILES,
    DataError,
    require_files,
)
from trainables.models.base import RecurrentModel, State, detach_state
from trainables.tasks.base import RNNFactory, Task
from trainables.tasks.settings import LanguageSettings

EOS = "<eos>"
UNK = "<unk>"
CACHE_VERSION = 1  # bump when tokenization changes, so caches written before are not read


def read_tokens(path: Path, characters: bool) -> list[str]:
    """Tokens of one file, "<eos>" closing every line; malformed lines are named by number."""
    tokens: list[str] = []
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                words = raw.decode("utf-8").split()
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}, line {number}: not UTF-8 text ({exc.reason})") from None
            if characters:
                for word in words:
                    if len(word) != 1 and word != UNK:
                        raise DataError(
                            f"{path}, line {number}: token {word!r} is not a single character; "
                            "character files separate every character by a space and words by '_' "
                            "(is this the word-level file?)"
                        )
            tokens.extend(words)
            tokens.append(EOS)
    if not tokens:
        raise DataError(f"{path}: the file is empty")
    return tokens


@dataclass(frozen=True)
class Corpus:
    """The vocabulary (id → token) and each split as a 1-d tensor of token ids."""

    vocabulary: tuple[str, ...]
    splits: dict[str, torch.Tensor]


def load_corpus(task: str, data_dir: Path, names: tuple[str, ...], characters: bool) -> Corpus:
    """Read the train, valid and test files `names` of `data_dir`.

    Cached per process while the files are unchanged, since trials reuse their workers, and
    on disk (see the module's docstring), since a sweep starts many processes.
    """
    paths = require_files(task, data_dir, names)
    return _read_corpus(tuple(paths), characters, file_stamps(paths))


@process_cache(maxsize=4)
def _read_corpus(paths: tuple[Path, ...], characters: bool, stamps: tuple[tuple[int, int], ...]) -> Corpus:
    return load_or_build(
        paths[0].parent,
        f"{paths[0].stem}-{'chars' if characters else 'words'}",
        corpus_key(paths, characters),
        lambda: tokenize_corpus(paths, characters),
        lambda corpus: {"vocabulary": list(corpus.vocabulary), "splits": corpus.splits},
        lambda entry: Corpus(tuple(entry["vocabulary"]), dict(entry["splits"])),
    )


def tokenize_corpus(paths: tuple[Path, ...], characters: bool) -> Corpus:
    index: dict[str, int] = {}
    splits = {}
    for split, path in zip(SPLITS, paths, strict=True):
        tokens = read_tokens(path, characters)
        splits[split] = torch.tensor([index.setdefault(t, len(index)) for t in tokens], dtype=torch.long)
    return Corpus(tuple(index), splits)


def corpus_key(paths: tuple[Path, ...], characters: bool) -> str:
    """SHA-256 of the files' names and contents and of how they are tokenized."""
    return content_key(f"corpus v{CACHE_VERSION} characters={characters}", paths, paths[0].parent)


def batchify(ids: torch.Tensor, columns: int) -> torch.Tensor:
    """(N,) → (N // columns, columns): column j holds the j-th contiguous slice of the text."""
    rows = ids.numel() // columns
    return ids[: rows * columns].reshape(columns, rows).T.contiguous()


class LanguageModelNetwork(nn.Module):
    """Embedding (or one-hot), stacked recurrent models, softmax read-out; states in and out."""

    def __init__(self, vocabulary_size: int, rnns: list[RecurrentModel], settings: LanguageSettings) -> None:
        super().__init__()
        self.vocabulary_size = vocabulary_size
        self.settings = settings
        self.embedding = (
            nn.Embedding(vocabulary_size, settings.embedding_size) if settings.embedding_size else None
        )
        self.rnns = nn.ModuleList(rnns)
        self.head = nn.Linear(rnns[-1].hidden_size, vocabulary_size)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        x = (
            self.embedding(tokens)
            if self.embedding is not None
            else F.one_hot(tokens, self.vocabulary_size).float()
        )
        p = self.settings.embedding_dropout
        if self.training and p > 0:
            keep = torch.bernoulli(torch.full((self.vocabulary_size,), 1 - p, device=tokens.device))
            x = x * (keep[tokens] / (1 - p)).unsqueeze(-1)
        return x

    def forward(
        self, tokens: torch.Tensor, states: list[State] | None = None
    ) -> tuple[torch.Tensor, list[State]]:
        x = self.embed(tokens)
        new_states = []
        for i, rnn in enumerate(self.rnns):
            x, state = rnn(x, None if states is None else states[i])
            new_states.append(state)
            if i < len(self.rnns) - 1:
                x = F.dropout(x, self.settings.layer_dropout, self.training)
        x = F.dropout(x, self.settings.output_dropout, self.training)
        return self.head(x), new_states


class LanguageModel(Task):
    """Next-token prediction with carried state; reports the loss in nats and the paper's unit."""

    stream_attributes: ClassVar[tuple[str, ...]] = ("_position", "_state")

    task_name: ClassVar[str]
    files: ClassVar[tuple[str, ...]]

    @classmethod
    def check_data(cls, settings: LanguageSettings) -> None:
        require_files(cls.task_name, Path(settings.data_dir), cls.files)

    characters: ClassVar[bool]
    unit: ClassVar[Literal["bpc", "ppl"]]
    usual_vocabulary: ClassVar[int]  # the vocabulary of the standard files, for counts without them

    @classmethod
    def sized(cls, settings: LanguageSettings) -> LanguageModel:
        task = cls.__new__(cls)
        task.settings = settings
        task.output_size = cls.usual_vocabulary
        task.input_size = settings.embedding_size or cls.usual_vocabulary
        return task

    def __init__(self, settings: LanguageSettings, batch_size: int, seed: int, device: torch.device) -> None:
        self.settings = settings
        self.batch_size = batch_size
        self.device = device
        corpus = load_corpus(self.task_name, Path(settings.data_dir), self.files, self.characters)
        self.vocabulary = corpus.vocabulary
        self.output_size = len(self.vocabulary)
        self.input_size = settings.embedding_size or self.output_size
        self.data = {
            split: batchify(ids, batch_size if split == "train" else settings.eval_batch_size).to(device)
            for split, ids in corpus.splits.items()
        }
        for split, data in self.data.items():
            if data.shape[0] < 2:
                raise DataError(
                    f"task {self.task_name!r}: the {split} split has {corpus.splits[split].numel()} tokens, "
                    f"too few for {data.shape[1]} columns of at least 2 tokens"
                )
        self._position = 0
        self._state: list[State] | None = None

    def create_network(self, make_rnn: RNNFactory) -> nn.Module:
        rnns: list[RecurrentModel] = []
        input_size = self.input_size
        for i in range(self.settings.layers):
            inner = 0 < i < self.settings.layers - 1
            rnn = make_rnn(input_size, self.settings.inner_hidden_size if inner else None)
            rnns.append(rnn)
            input_size = rnn.hidden_size
        return LanguageModelNetwork(self.output_size, rnns, self.settings)

    def train_batch(self) -> tuple[torch.Tensor, torch.Tensor, bool]:
        """Inputs and targets (bptt, B), and whether this window starts the text (fresh state)."""
        data = self.data["train"]
        if self._position >= data.shape[0] - 1:
            self._position = 0
        start = self._position
        length = min(self.settings.bptt, data.shape[0] - 1 - start)
        self._position = start + length
        return data[start : start + length], data[start + 1 : start + 1 + length], start == 0

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor, bool]) -> torch.Tensor:
        inputs, targets, fresh = batch
        logits, state = network(inputs, None if fresh else self._state)
        self._state = detach_state(state)
        return F.cross_entropy(logits.reshape(-1, self.output_size), targets.reshape(-1))

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        """Metrics over the whole validation text, or with `split="test"` the test text."""
        data = self.data[split]
        total, count, state = 0.0, 0, None
        for start in range(0, data.shape[0] - 1, self.settings.bptt):
            length = min(self.settings.bptt, data.shape[0] - 1 - start)
            logits, state = network(data[start : start + length], state)
            targets = data[start + 1 : start + 1 + length]
            total += F.cross_entropy(
                logits.reshape(-1, self.output_size), targets.reshape(-1), reduction="sum"
            ).item()
            count += targets.numel()
        loss = total / count
        value = loss / math.log(2) if self.unit == "bpc" else math.exp(min(loss, 700.0))
        return {f"{split}_loss": loss, f"{split}_{self.unit}": value}


class PtbChar(LanguageModel):
    task_name = "ptb_char"
    files = PTB_CHAR_FILES
    characters = True
    unit = "bpc"
    usual_vocabulary = 50


class PtbWord(LanguageModel):
    task_name = "ptb_word"
    files = PTB_WORD_FILES
    characters = False
    unit = "ppl"
    usual_vocabulary = 10_000


class WikiText2(LanguageModel):
    task_name = "wikitext2"
    files = WIKITEXT2_FILES
    characters = False
    unit = "ppl"
    usual_vocabulary = 33_278
