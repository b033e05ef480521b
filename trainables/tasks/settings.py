"""Every built-in task's settings: typed, bounded and validated when a spec is read.

They live apart from the tasks' code (which needs torch) so a spec is checked, and `sweeper tasks`
lists them, without importing torch; `trainables.tasks.declared` pairs each with its task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainables.data import BABI_ROOT, DataDir


class GeneratedSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    valid_size: int = Field(1000, ge=1, le=100_000, description="validation sequences")
    test_size: int = Field(1000, ge=1, le=100_000, description="test sequences")
    data_seed: int = Field(0, ge=0, description="seed of the fixed validation and test sets")


class SymbolSettings(GeneratedSettings):
    T: int = Field(200, ge=1, le=100_000, description="delay (copying) or noisy length (denoise)")


class DenoiseSettings(SymbolSettings):
    variant: Literal["clean", "paper"] = Field(
        "clean",
        description="clean: distinct positions, visible marker; paper: the publication code's "
        "with-replacement positions and invisible marker",
    )


class ParenthesisSettings(GeneratedSettings):
    T: int = Field(200, ge=1, le=100_000, description="sequence length")
    variant: Literal["goru", "isan"] = Field(
        "goru",
        description="goru: 10 types + 10 noise symbols, cap 10, cross entropy over 21 classes; "
        "isan (the NC-GRU paper): '()[]{}' + 1 noise symbol, cap 5, squared error against one-hot counts",
    )


class AddingSettings(GeneratedSettings):
    T: int = Field(200, ge=2, le=100_000, description="sequence length")


class ShortestPathSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    train_size: int = Field(1000, ge=1, le=1_000_000, description="training examples (one fold)")
    valid_size: int = Field(1000, ge=1, le=1_000_000, description="validation examples")
    test_size: int = Field(1000, ge=1, le=1_000_000, description="test examples")
    data_seed: int = Field(0, ge=0, description="the fold: seed of the training, validation and test sets")


class BabiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: DataDir = Field(Path("data/babi"), description=f"directory holding {BABI_ROOT}/")
    tasks: list[int] = Field([1], min_length=1, max_length=20, description="bAbI task numbers, 1-20")
    subset: Literal["1k", "10k"] = Field(
        "1k", description="1k (en) or 10k (en-10k) training examples per task"
    )
    valid_fraction: float = Field(0.1, gt=0.0, le=0.5, description="share of each training file held out")
    embedding_size: int = Field(50, ge=1, le=65_536, description="word embedding size")
    max_story_sentences: int | None = Field(
        None, ge=1, le=10_000, description="keep only the last N statements of a story; none: all"
    )
    data_seed: int = Field(0, ge=0, description="seed of the validation split")

    @field_validator("tasks")
    @classmethod
    def _task_numbers(cls, tasks: list[int]) -> list[int]:
        bad = [t for t in tasks if not 1 <= t <= 20]
        if bad or len(set(tasks)) != len(tasks):
            raise ValueError(f"tasks must be distinct numbers from 1 to 20, got {tasks}")
        return sorted(tasks)


class LanguageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: DataDir = Field(Path("data/ptb"), description="directory holding the three split files")
    bptt: int = Field(50, ge=1, le=100_000, description="truncated-BPTT window (time steps per batch)")
    eval_batch_size: int = Field(10, ge=1, le=65_536, description="columns of the validation/test text")
    layers: int = Field(1, ge=1, le=8, description="stacked recurrent layers")
    inner_hidden_size: int | None = Field(
        None,
        ge=1,
        le=65_536,
        description="hidden size of the layers between the first and last (the papers' 1000)",
    )
    embedding_size: int | None = Field(
        None, ge=1, le=65_536, description="token embedding size; none: one-hot inputs"
    )
    embedding_dropout: float = Field(
        0.0, ge=0.0, lt=1.0, description="drops whole token types from the input"
    )
    layer_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout between recurrent layers")
    output_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout before the softmax read-out")

    @model_validator(mode="after")
    def _inner_layers(self) -> LanguageSettings:
        if self.inner_hidden_size is not None and self.layers < 3:
            raise ValueError(
                "inner_hidden_size needs layers >= 3 (it sizes the layers between the first and last)"
            )
        return self


class PtbCharSettings(LanguageSettings):
    """GORU's setting (single layer, BPTT 50); NC-GRU used 3 layers, BPTT 100, dropout 0.15."""


class PtbWordSettings(LanguageSettings):
    """NC-GRU's setting: 3 layers, embedding dropout 0.4, 0.4 after each cell, output dropout 0.25."""

    bptt: int = Field(70, ge=1, le=100_000, description="truncated-BPTT window (time steps per batch)")
    layers: int = Field(3, ge=1, le=8, description="stacked recurrent layers")
    embedding_size: int | None = Field(
        400, ge=1, le=65_536, description="token embedding size; none: one-hot"
    )
    embedding_dropout: float = Field(
        0.4, ge=0.0, lt=1.0, description="drops whole token types from the input"
    )
    layer_dropout: float = Field(0.4, ge=0.0, lt=1.0, description="dropout between recurrent layers")
    output_dropout: float = Field(0.25, ge=0.0, lt=1.0, description="dropout before the softmax read-out")


class WikiText2Settings(LanguageSettings):
    """NC-GRU's shape (3 layers); the paper names no dropout for this data set."""

    data_dir: DataDir = Field(Path("data/wikitext-2"), description="directory holding wiki.*.tokens")
    bptt: int = Field(70, ge=1, le=100_000, description="truncated-BPTT window (time steps per batch)")
    layers: int = Field(3, ge=1, le=8, description="stacked recurrent layers")
    embedding_size: int | None = Field(
        400, ge=1, le=65_536, description="token embedding size; none: one-hot"
    )


class TimitSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: DataDir = Field(
        Path("data/timit"), description="directory of .wav files (TIMIT layout or flat)"
    )
    train_size: int = Field(2400, ge=1, le=1_000_000, description="training utterances")
    valid_size: int = Field(600, ge=1, le=1_000_000, description="validation utterances")
    test_size: int = Field(1000, ge=1, le=1_000_000, description="test utterances")
    data_seed: int = Field(0, ge=0, description="seed of the choice of utterances per split")
