"""bAbI question answering (tasks 1–20, v1.2) with the GORU paper's three-RNN reader.

File format: every line starts with its number within the story, which restarts at 1 for a new
story; a statement is plain text, a question line is "question<TAB>answer<TAB>supporting line
numbers". A question is asked about every statement of its story before it. Answers are one
class each (the list and path answers of tasks 8 and 19, such as "n,s", included), as in the
papers' single-word output. The validation set is a `valid_fraction` of each task's training
file, fixed by `data_seed`. The parsed and encoded splits are the same for every trial, so they
are cached on disk once per data directory (`trainables.cache`) and kept in the process for the
trials that reuse it.

The reader: one RNN over the embedded story, one over the embedded question, and a third RNN over
the story RNN's outputs concatenated with the question RNN's last output; its last output
predicts the answer. Uni-directional, no attention. Sequences are padded at the front, so every
RNN's last step is the true end of its text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from trainables.cache import content_key, file_stamps, load_or_build, process_cache
from trainables.data import BABI_ROOT, DataError, MissingDataError, check_directory, missing_message
from trainables.models.base import RecurrentModel
from trainables.tasks.base import RNNFactory, Task
from trainables.tasks.settings import BabiSettings

PAD = "<pad>"
ENCODING_VERSION = 1  # bump when parsing or encoding changes, so caches written before are not read
WORD = re.compile(r"[\w']+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lower-case words and punctuation marks as separate tokens."""
    return WORD.findall(text.lower())


@dataclass(frozen=True)
class Question:
    """One question with the statements of its story before it (each a token list)."""

    story: tuple[tuple[str, ...], ...]
    question: tuple[str, ...]
    answer: str
    supporting: tuple[int, ...]  # indices into `story`
    task: int


def parse_babi(path: Path, task: int) -> list[Question]:
    """Every question of one bAbI file; a malformed line raises DataError naming it."""
    questions: list[Question] = []
    story: list[tuple[str, ...]] = []
    index_of_line: dict[int, int] = {}
    previous = 0
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            where = f"{path}, line {number}"
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise DataError(f"{where}: not UTF-8 text") from None
            if not line:
                continue
            head, _, text = line.partition(" ")
            if not head.isdigit() or not text:
                raise DataError(f"{where}: expected '<line number> <text>', got {line[:60]!r}")
            line_id = int(head)
            if line_id == 1:
                story, index_of_line = [], {}
            elif line_id != previous + 1:
                raise DataError(f"{where}: line number {line_id} does not follow {previous}")
            previous = line_id
            if "\t" not in text:
                index_of_line[line_id] = len(story)
                story.append(tuple(tokenize(text)))
                continue
            parts = text.split("\t")
            if len(parts) != 3 or not parts[1].strip():
                raise DataError(f"{where}: a question line needs 'question<TAB>answer<TAB>supporting facts'")
            question, answer, support = parts
            try:
                supporting = tuple(index_of_line[int(s)] for s in support.split())
            except (ValueError, KeyError):
                raise DataError(
                    f"{where}: supporting facts {support.strip()!r} are not numbers of earlier statements"
                ) from None
            questions.append(
                Question(tuple(story), tuple(tokenize(question)), answer.strip().lower(), supporting, task)
            )
    if not questions:
        raise DataError(f"{path}: no questions in the file")
    return questions


def find_task_file(root: Path, task: int, split: str) -> Path | None:
    matches = sorted(root.glob(f"qa{task}_*_{split}.txt"))
    return matches[0] if matches else None


def babi_files(data_dir: Path, subset: str, tasks: list[int]) -> dict[tuple[int, str], Path]:
    """The train and test file of every task, from `data_dir/tasks_1-20_v1-2/<subset>` (or
    `data_dir/<subset>`); raises MissingDataError listing the absent ones."""
    data_dir = check_directory(data_dir, "babi")
    root = data_dir / BABI_ROOT / subset
    if not root.is_dir() and (data_dir / subset).is_dir():
        root = data_dir / subset
    found, missing = {}, []
    for task in tasks:
        for split in ("train", "test"):
            path = find_task_file(root, task, split)
            if path is None:
                missing.append(f"{BABI_ROOT}/{subset}/qa{task}_*_{split}.txt")
            else:
                found[task, split] = path
    if missing:
        raise MissingDataError(missing_message("babi", data_dir, missing))
    return found


@dataclass
class Encoded:
    """A split as tensors: front-padded stories (N, Ls) and questions (N, Lq), answers, task numbers."""

    stories: torch.Tensor
    questions: torch.Tensor
    answers: torch.Tensor
    tasks: torch.Tensor
    story_lengths: torch.Tensor
    question_lengths: torch.Tensor

    def to(self, device: torch.device) -> Encoded:
        """On `device`, but the lengths, which index on the CPU."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("stories", "questions", "answers", "tasks"):
            moved[name] = moved[name].to(device)
        return Encoded(**moved)


@dataclass(frozen=True)
class BabiData:
    """Every split encoded, with the vocabulary (id → token, id 0 the padding) and the answers."""

    vocabulary: tuple[str, ...]
    answers: tuple[str, ...]
    splits: dict[str, Encoded]


def front_pad(sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in sequences])
    padded = torch.zeros(len(sequences), max(int(lengths.max()), 1), dtype=torch.long)
    for row, seq in enumerate(sequences):
        if seq:
            padded[row, -len(seq) :] = torch.tensor(seq)
    return padded, lengths


class BabiReader(nn.Module):
    """Story RNN, question RNN, and a third RNN over both that predicts the answer."""

    def __init__(
        self,
        vocabulary_size: int,
        embedding_size: int,
        rnns: tuple[RecurrentModel, RecurrentModel, RecurrentModel],
        n_answers: int,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary_size, embedding_size, padding_idx=0)
        self.story_rnn, self.question_rnn, self.answer_rnn = rnns
        self.head = nn.Linear(self.answer_rnn.hidden_size, n_answers)

    def forward(self, story: torch.Tensor, question: torch.Tensor) -> torch.Tensor:
        """Time-major token ids (Ls, B) and (Lq, B) → answer logits (B, answers)."""
        story_out, _ = self.story_rnn(self.embedding(story))
        question_out, _ = self.question_rnn(self.embedding(question))
        asked = question_out[-1].expand(story_out.shape[0], -1, -1)
        answer_out, _ = self.answer_rnn(torch.cat([story_out, asked], dim=-1))
        return self.head(answer_out[-1])


def subset_folder(settings: BabiSettings) -> str:
    return "en" if settings.subset == "1k" else "en-10k"


def load_babi(settings: BabiSettings) -> BabiData:
    """The encoded splits of the settings' tasks: from this process's memory, the disk cache, or
    the text files."""
    found = babi_files(Path(settings.data_dir), subset_folder(settings), settings.tasks)
    files = tuple((task, found[task, "train"], found[task, "test"]) for task in settings.tasks)
    stamps = file_stamps(p for _, *paths in files for p in paths)
    return _read_babi(
        files,
        settings.valid_fraction,
        settings.data_seed,
        settings.max_story_sentences,
        Path(settings.data_dir).expanduser(),
        stamps,
    )


@process_cache(maxsize=2)
def _read_babi(
    files: tuple[tuple[int, Path, Path], ...],
    valid_fraction: float,
    data_seed: int,
    keep: int | None,
    data_dir: Path,
    stamps: tuple[tuple[int, int], ...],
) -> BabiData:
    tasks = [task for task, _, _ in files]
    recipe = f"babi v{ENCODING_VERSION} tasks={tasks} valid={valid_fraction} seed={data_seed} keep={keep}"
    return load_or_build(
        data_dir,
        f"babi-{files[0][1].parent.name}",
        content_key(recipe, [p for _, *paths in files for p in paths], data_dir),
        lambda: encode_babi(files, valid_fraction, data_seed, keep),
        lambda data: {
            "vocabulary": list(data.vocabulary),
            "answers": list(data.answers),
            "splits": {
                name: {f.name: getattr(encoded, f.name) for f in fields(encoded)}
                for name, encoded in data.splits.items()
            },
        },
        lambda entry: BabiData(
            tuple(entry["vocabulary"]),
            tuple(entry["answers"]),
            {name: Encoded(**tensors) for name, tensors in entry["splits"].items()},
        ),
    )


def encode_babi(
    files: tuple[tuple[int, Path, Path], ...], valid_fraction: float, data_seed: int, keep: int | None
) -> BabiData:
    """Parse each task's train and test file, hold out the validation questions, and encode."""
    split_gen = torch.Generator().manual_seed(data_seed)
    raw: dict[str, list[Question]] = {"train": [], "valid": [], "test": []}
    for task, train_file, test_file in files:
        train = parse_babi(train_file, task)
        n_valid = max(1, round(valid_fraction * len(train)))
        if n_valid >= len(train):
            raise DataError(f"{train_file}: {len(train)} questions are too few to hold out {n_valid}")
        order = torch.randperm(len(train), generator=split_gen).tolist()
        raw["valid"] += [train[i] for i in order[:n_valid]]
        raw["train"] += [train[i] for i in sorted(order[n_valid:])]
        raw["test"] += parse_babi(test_file, task)
    vocabulary: dict[str, int] = {PAD: 0}
    answers: dict[str, int] = {}
    for questions in raw.values():
        for q in questions:
            for token in (*(t for s in q.story for t in s), *q.question):
                vocabulary.setdefault(token, len(vocabulary))
            answers.setdefault(q.answer, len(answers))

    def encode(questions: list[Question]) -> Encoded:
        stories = [
            [vocabulary[t] for s in (q.story[-keep:] if keep else q.story) for t in s] for q in questions
        ]
        stories_t, story_lengths = front_pad(stories)
        questions_t, question_lengths = front_pad([[vocabulary[t] for t in q.question] for q in questions])
        return Encoded(
            stories_t,
            questions_t,
            torch.tensor([answers[q.answer] for q in questions]),
            torch.tensor([q.task for q in questions]),
            story_lengths,
            question_lengths,
        )

    return BabiData(tuple(vocabulary), tuple(answers), {name: encode(qs) for name, qs in raw.items()})


class Babi(Task):
    """Answer accuracy per task and its mean over the selected tasks."""

    stream_attributes: ClassVar[tuple[str, ...]] = ("_gen", "_order")

    @classmethod
    def check_data(cls, settings: BabiSettings) -> None:
        babi_files(Path(settings.data_dir), subset_folder(settings), settings.tasks)

    def __init__(self, settings: BabiSettings, batch_size: int, seed: int, device: torch.device) -> None:
        self.settings = settings
        self.batch_size = batch_size
        self.device = device
        data = load_babi(settings)
        self.vocabulary = {token: i for i, token in enumerate(data.vocabulary)}
        self.answers = {answer: i for i, answer in enumerate(data.answers)}
        self.input_size = settings.embedding_size
        self.output_size = len(self.answers)
        self.splits = {name: encoded.to(device) for name, encoded in data.splits.items()}
        self._gen = torch.Generator().manual_seed(seed)
        self._order = torch.empty(0, dtype=torch.long)

    def create_network(self, make_rnn: RNNFactory) -> nn.Module:
        story_rnn = make_rnn(self.settings.embedding_size)
        question_rnn = make_rnn(self.settings.embedding_size)
        answer_rnn = make_rnn(story_rnn.hidden_size + question_rnn.hidden_size)
        return BabiReader(
            len(self.vocabulary),
            self.settings.embedding_size,
            (story_rnn, question_rnn, answer_rnn),
            self.output_size,
        )

    def batch(self, split: str, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Time-major stories and questions cut to the batch's longest, and the answers."""
        data = self.splits[split]
        story_len = max(int(data.story_lengths[index].max()), 1)
        question_len = max(int(data.question_lengths[index].max()), 1)
        index = index.to(self.device)
        stories = data.stories[index, -story_len:].T
        questions = data.questions[index, -question_len:].T
        return stories, questions, data.answers[index]

    def train_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n = len(self.splits["train"].answers)
        if len(self._order) < self.batch_size:  # a new epoch, reshuffled
            self._order = torch.cat([self._order, torch.randperm(n, generator=self._gen)])
        index, self._order = self._order[: self.batch_size], self._order[self.batch_size :]
        return self.batch("train", index)

    def loss(
        self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        stories, questions, answers = batch
        return F.cross_entropy(network(stories, questions), answers)

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        """Loss, mean accuracy over tasks and `<split>_accuracy_qa<N>` per task."""
        data = self.splits[split]
        n = len(data.answers)
        total_loss = 0.0
        correct = torch.zeros(n, dtype=torch.bool, device=self.device)
        for start in range(0, n, self.batch_size):
            index = torch.arange(start, min(start + self.batch_size, n))
            stories, questions, answers = self.batch(split, index)
            logits = network(stories, questions)
            total_loss += F.cross_entropy(logits, answers, reduction="sum").item()
            correct[index.to(self.device)] = logits.argmax(-1) == answers
        per_task = {
            f"{split}_accuracy_qa{task}": correct[data.tasks == task].float().mean().item()
            for task in self.settings.tasks
        }
        return {
            f"{split}_loss": total_loss / n,
            f"{split}_accuracy": sum(per_task.values()) / len(per_task),
            **per_task,
        }
