"""Data sets in the real file formats, generated, for the tests of file tasks and the benchmarks
of their cost (`benchmarks/overheads/data_time.py`).

The real corpora cannot be downloaded in CI (TIMIT not at all). Tests write a few lines of
PTB-like words; benchmarks write the real sizes, whose cost to a trial depends on their size and
shape, not their words (`zipf_text`: PTB ~1M words with a 10k vocabulary, WikiText-2 ~2M words
with 33k; bAbI about 850 questions per task; TIMIT-length 3 s utterances at 16 kHz).
"""

from __future__ import annotations

import math
import random
import struct
import wave
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from trainables.data import BABI_ROOT, ptb_char_line

PTB_WORDS = {"train": 887_521, "valid": 70_390, "test": 78_669}
WIKITEXT2_WORDS = {"train": 2_088_628, "valid": 217_646, "test": 245_569}
WORDS = ["the", "market", "fell", "<unk>", "N", "shares", "rose", "in", "a", "year", "'s", "$", "co."]
PEOPLE = ["mary", "john", "sandra", "daniel"]
PLACES = ["kitchen", "garden", "office", "hallway", "bathroom"]


def sentences(rng: random.Random, lines: int) -> list[str]:
    return [" " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + " " for _ in range(lines)]


def zipf_text(words: dict[str, int], vocabulary: int, seed: int) -> dict[str, list[str]]:
    """Per split, that many random words in lines of 21, word frequencies falling as 1 / rank."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocabulary + 1)
    names = np.array([f"w{i}" for i in range(vocabulary)])
    text = {}
    for split, count in words.items():
        drawn = names[rng.choice(vocabulary, size=count, p=(1 / ranks) / (1 / ranks).sum())]
        text[split] = [" " + " ".join(drawn[i : i + 21]) + " " for i in range(0, count, 21)]
    return text


def write_ptb(
    directory: Path, lines: dict[str, int] | None = None, text: dict[str, list[str]] | None = None
) -> dict[str, list[str]]:
    """ptb.{split}.txt and the ptb.char.{split}.txt derived from them: `text`, or that many
    `lines` of PTB-like words; returns the word lines."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    if text is None:
        text = {
            split: sentences(rng, count)
            for split, count in (lines or {"train": 30, "valid": 8, "test": 8}).items()
        }
    for split in text:
        (directory / f"ptb.{split}.txt").write_text("\n".join(text[split]) + "\n")
        (directory / f"ptb.char.{split}.txt").write_text(
            "\n".join(ptb_char_line(line) for line in text[split]) + "\n"
        )
    return text


def write_wikitext(directory: Path, text: dict[str, list[str]] | None = None) -> Path:
    """wiki.{split}.tokens: `text`, or a few lines with WikiText's headings and number tokens."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    if text is None:
        text = {
            split: [" ", " = Robert <unk> = ", " ", *sentences(rng, count), " 1 @,@ 000 @-@ year "]
            for split, count in {"train": 30, "valid": 8, "test": 8}.items()
        }
    for split, body in text.items():
        (directory / f"wiki.{split}.tokens").write_text("\n".join(body) + "\n")
    return directory


def babi_story(rng: random.Random, statements: int) -> list[str]:
    """Lines of one story: statements, with a question after every third statement."""
    lines, where, number = [], {}, 0
    for i in range(statements):
        person, place = rng.choice(PEOPLE), rng.choice(PLACES)
        number += 1
        lines.append(f"{number} {person.capitalize()} went to the {place}.")
        where[person] = (place, number)
        if i % 3 == 2:
            asked = rng.choice(sorted(where))
            number += 1
            lines.append(f"{number} Where is {asked.capitalize()}? \t{where[asked][0]}\t{where[asked][1]}")
    return lines


def write_babi(
    directory: Path,
    tasks: Iterable[int] = (1, 2),
    subset: str = "en",
    stories: int = 8,
    test_stories: int | None = None,
) -> Path:
    """tasks_1-20_v1-2/<subset>/qa<N>_synthetic_{train,test}.txt, a question after every third
    statement of stories of 3-7 (600 stories: about 850 questions); returns the subset folder."""
    root = directory / BABI_ROOT / subset
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2)
    tests = max(2, stories // 4) if test_stories is None else test_stories
    for task in tasks:
        for split, count in (("train", stories), ("test", tests)):
            lines = [line for _ in range(count) for line in babi_story(rng, rng.randint(3, 7))]
            (root / f"qa{task}_synthetic_{split}.txt").write_text("\n".join(lines) + "\n")
    return root


def write_wav(path: Path, samples: list[float], rate: int = 8000, width: int = 2, channels: int = 1) -> None:
    """PCM .wav of `samples` in [−1, 1] (repeated on every channel)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scale = 2 ** (8 * width - 1) - 1
    codes = {1: "B", 2: "h", 4: "i"}[width]
    values = [round(s * scale) + (128 if width == 1 else 0) for s in samples for _ in range(channels)]
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(struct.pack(f"<{len(values)}{codes}", *values))


def sine(frequency: float, seconds: float, rate: int = 8000, amplitude: float = 0.5) -> list[float]:
    return [amplitude * math.sin(2 * math.pi * frequency * n / rate) for n in range(round(seconds * rate))]


def write_speech(
    directory: Path,
    count: int = 8,
    timit_layout: bool = False,
    seconds: float | None = None,
    rate: int = 8000,
) -> Path:
    """`count` tones, short (80 ms and up) or `seconds` long; with `timit_layout`,
    TRAIN/DR1/<speaker>/ and TEST/DR1/<speaker>/."""
    for i in range(count):
        if timit_layout:
            part = "TRAIN" if i < count - 2 else "TEST"
            path = directory / part / "DR1" / f"SPK{i}" / "SA1.WAV"
        else:
            path = directory / f"utt{i}.wav"
        write_wav(path, sine(200.0 + 50 * i, 0.08 + 0.01 * i if seconds is None else seconds, rate), rate)
    return directory
