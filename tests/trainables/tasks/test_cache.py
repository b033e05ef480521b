"""The on-disk caches of derived data: a sweep's trials tokenize a corpus, parse and encode bAbI,
or decode and transform TIMIT's audio, once per data directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from trainables.cache import CACHE_DIR
from trainables.catalog import load_all
from trainables.registry import TASKS
from trainables.tasks import babi, language, speech

load_all()


def spy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: ModuleType, reader: str, memory: Any
) -> Iterator[list[Path]]:
    """The files `module.reader` reads from its data (its first argument), with the per-process
    cache `memory` emptied before and after: each build then starts as a fresh process would."""
    calls: list[Path] = []
    real = getattr(module, reader)

    def counting(path: Path, *args: Any) -> Any:
        calls.append(path)
        return real(path, *args)

    monkeypatch.setattr(module, reader, counting)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    memory.cache_clear()
    yield calls
    memory.cache_clear()


@pytest.fixture
def tokenizer_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Path]]:
    yield from spy(monkeypatch, tmp_path, language, "read_tokens", language._read_corpus)


def build(task: str, data_dir: Path) -> language.LanguageModel:
    """The task as a new trial process builds it: the per-process cache emptied first."""
    language._read_corpus.cache_clear()
    return TASKS.get(task).create(
        {"data_dir": str(data_dir)}, batch_size=3, seed=0, device=torch.device("cpu")
    )


def same_data(a: language.LanguageModel, b: language.LanguageModel) -> bool:
    return a.vocabulary == b.vocabulary and all(torch.equal(a.data[s], b.data[s]) for s in a.data)


@pytest.mark.parametrize("task", ["ptb_word", "ptb_char", "wikitext2"])
def test_second_build_reads_the_cache_not_the_text(task, tmp_path, corpora, tokenizer_calls) -> None:
    data = tmp_path / "data"
    (corpora.write_wikitext if task == "wikitext2" else corpora.write_ptb)(data)
    first = build(task, data)
    assert len(tokenizer_calls) == 3
    assert len(list((data / CACHE_DIR).glob("*.pt"))) == 1
    second = build(task, data)
    assert len(tokenizer_calls) == 3, "the second build tokenized again"
    assert same_data(first, second)


def test_a_changed_file_invalidates_the_cache(tmp_path, corpora, tokenizer_calls) -> None:
    data = tmp_path / "data"
    corpora.write_ptb(data)
    before = build("ptb_word", data)
    valid = data / "ptb.valid.txt"
    stat = valid.stat()
    valid.write_text(valid.read_text().replace("market", "bourse"))
    os.utime(valid, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: the content decides
    after = build("ptb_word", data)
    assert len(tokenizer_calls) == 6
    assert "bourse" in after.vocabulary and "bourse" not in before.vocabulary
    assert len(list((data / CACHE_DIR).glob("*.pt"))) == 1, "the stale cache was kept"
    build("ptb_word", data)
    assert len(tokenizer_calls) == 6


def test_unwritable_data_directory_falls_back_to_the_user_cache(tmp_path, corpora, tokenizer_calls) -> None:
    data = tmp_path / "data"
    corpora.write_ptb(data)
    (data / CACHE_DIR).write_text("a file where the cache directory would go")
    first = build("ptb_char", data)
    cached = list((tmp_path / "user-cache").rglob("*.pt"))
    assert len(cached) == 1
    second = build("ptb_char", data)
    assert len(tokenizer_calls) == 3
    assert same_data(first, second)


def test_a_corrupt_cache_file_is_rebuilt(tmp_path, corpora, tokenizer_calls) -> None:
    data = tmp_path / "data"
    corpora.write_ptb(data)
    first = build("ptb_word", data)
    (cached,) = (data / CACHE_DIR).glob("*.pt")
    cached.write_bytes(b"truncated")
    second = build("ptb_word", data)
    assert len(tokenizer_calls) == 6
    assert same_data(first, second)
    assert same_data(first, build("ptb_word", data))
    assert len(tokenizer_calls) == 6, "the rebuilt cache was not written back"


TIMIT_SIZES = {"train_size": 4, "valid_size": 2, "test_size": 2}


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Path]]:
    yield from spy(monkeypatch, tmp_path, speech, "load_utterance", speech._features)


def build_in(memory: Any, fresh_process: bool, task: str, settings: dict[str, Any]) -> Any:
    """`task` as a trial builds it, in a new process (`memory` emptied) or a reused one."""
    if fresh_process:
        memory.cache_clear()
    return TASKS.get(task).create(settings, batch_size=2, seed=0, device=torch.device("cpu"))


def build_timit(data_dir: Path, fresh_process: bool = True, **settings: int) -> speech.Timit:
    return build_in(
        speech._features, fresh_process, "timit", {"data_dir": str(data_dir), **TIMIT_SIZES, **settings}
    )


def same_features(a: speech.Timit, b: speech.Timit) -> bool:
    """Same spectrograms and the same scale (the cache keeps the training frames' statistics)."""
    return (
        all(
            len(a.features[s]) == len(b.features[s])
            and all(torch.equal(x, y) for x, y in zip(a.features[s], b.features[s], strict=True))
            for s in ("train", "valid", "test")
        )
        and torch.equal(a.mean, b.mean)
        and torch.equal(a.std, b.std)
    )


def test_second_timit_build_reads_the_cached_spectrograms(tmp_path, corpora, decoded) -> None:
    data = tmp_path / "timit"
    corpora.write_speech(data, count=8, timit_layout=True)
    first = build_timit(data)
    assert len(decoded) == 8
    assert len(list((data / CACHE_DIR).glob("timit-features-*.pt"))) == 1
    second = build_timit(data)
    assert len(decoded) == 8, "the second build decoded the audio again"
    assert same_features(first, second)
    batches = [first.train_batch(), second.train_batch()]
    assert all(torch.equal(x, y) for x, y in zip(*batches, strict=True))


def test_a_changed_wav_invalidates_the_spectrogram_cache(tmp_path, corpora, decoded) -> None:
    data = tmp_path / "timit"
    corpora.write_speech(data, count=8)
    before = build_timit(data)
    changed = data / "utt3.wav"
    stat = changed.stat()
    corpora.write_wav(changed, corpora.sine(900.0, 0.08 + 0.01 * 3))  # same length, other tone
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime: the content decides
    assert changed.stat().st_size == stat.st_size
    after = build_timit(data)
    assert len(decoded) == 16
    assert not same_features(before, after)
    assert len(list((data / CACHE_DIR).glob("timit-features-*.pt"))) == 1, "the stale cache was kept"
    assert same_features(after, build_timit(data))
    assert len(decoded) == 16


def test_other_split_sizes_are_not_served_from_the_cache(tmp_path, corpora, decoded) -> None:
    data = tmp_path / "timit"
    corpora.write_speech(data, count=8)
    build_timit(data)
    smaller = build_timit(data, train_size=3)
    assert len(decoded) == 15 and len(smaller.features["train"]) == 3


def test_trials_reusing_a_process_skip_the_disk(tmp_path, corpora, decoded, monkeypatch) -> None:
    data = tmp_path / "timit"
    corpora.write_speech(data, count=8)
    first = build_timit(data)
    monkeypatch.setattr(speech, "load_or_build", lambda *args: pytest.fail("read the disk cache again"))
    second = build_timit(data, fresh_process=False)
    assert len(decoded) == 8 and same_features(first, second)


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Path]]:
    yield from spy(monkeypatch, tmp_path, babi, "parse_babi", babi._read_babi)


def build_babi(data_dir: Path, fresh_process: bool = True, **settings: object) -> babi.Babi:
    return build_in(
        babi._read_babi, fresh_process, "babi", {"data_dir": str(data_dir), "tasks": [1, 2], **settings}
    )


def same_babi(a: babi.Babi, b: babi.Babi) -> bool:
    return (
        a.vocabulary == b.vocabulary
        and a.answers == b.answers
        and all(
            torch.equal(getattr(a.splits[s], f), getattr(b.splits[s], f))
            for s in a.splits
            for f in ("stories", "questions", "answers", "tasks", "story_lengths", "question_lengths")
        )
    )


def test_second_babi_build_reads_the_cached_encoding(tmp_path, corpora, parsed) -> None:
    corpora.write_babi(tmp_path / "babi", tasks=(1, 2))
    first = build_babi(tmp_path / "babi")
    assert len(parsed) == 4
    assert len(list((tmp_path / "babi" / CACHE_DIR).glob("babi-*.pt"))) == 1
    second = build_babi(tmp_path / "babi")
    assert len(parsed) == 4, "the second build parsed the files again"
    assert same_babi(first, second)
    third = build_babi(tmp_path / "babi", fresh_process=False)
    assert len(parsed) == 4 and same_babi(first, third)


def test_a_changed_babi_file_or_split_setting_is_not_served_from_the_cache(tmp_path, corpora, parsed) -> None:
    root = corpora.write_babi(tmp_path / "babi", tasks=(1, 2))
    before = build_babi(tmp_path / "babi")
    (changed,) = root.glob("qa2_*_test.txt")
    stat = changed.stat()
    changed.write_text(changed.read_text().replace("kitchen", "gardens"))  # same length
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = build_babi(tmp_path / "babi")
    assert len(parsed) == 8 and "gardens" in after.vocabulary and "gardens" not in before.vocabulary
    build_babi(tmp_path / "babi", valid_fraction=0.2)
    assert len(parsed) == 12
    assert len(list((tmp_path / "babi" / CACHE_DIR).glob("babi-*.pt"))) == 1, "stale caches were kept"
