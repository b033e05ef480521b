from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from trainables.catalog import load_all
from trainables.data import DataError, MissingDataError
from trainables.registry import TASKS
from trainables.tasks.speech import (
    BINS,
    frame_count,
    load_utterance,
    log_spectrogram,
    read_wav,
    split_files,
)

load_all()


def make(data_dir: Path, batch_size: int = 3, **settings):
    sizes = {"train_size": 4, "valid_size": 2, "test_size": 2}
    return TASKS.get("timit").create(
        {"data_dir": str(data_dir), **sizes, **settings},
        batch_size=batch_size,
        seed=0,
        device=torch.device("cpu"),
    )


@pytest.mark.parametrize("samples", [384, 385, 511, 512, 800])
def test_frame_count(tmp_path: Path, corpora, samples: int) -> None:
    corpora.write_wav(tmp_path / "a.wav", [0.1] * samples)
    features = log_spectrogram(load_utterance(tmp_path / "a.wav").unsqueeze(0))
    assert features.shape == (1, 1 + (samples - 256) // 128, BINS) == (1, frame_count(samples), 129)


def test_log_power_of_a_bin_centred_tone(tmp_path: Path, corpora) -> None:
    # 500 Hz is bin 16 at 8 kHz / 256; a periodic Hann window sums to 128, so |X| = 0.5 * 128 / 2 = 32
    corpora.write_wav(tmp_path / "tone.wav", corpora.sine(500.0, 0.1, amplitude=0.5))
    features = log_spectrogram(load_utterance(tmp_path / "tone.wav").unsqueeze(0))[0]
    assert (features.argmax(-1) == 16).all()
    assert features[:, 16] == pytest.approx(
        torch.full((features.shape[0],), 10 * math.log10(32.0**2)), abs=0.01
    )
    corpora.write_wav(tmp_path / "silence.wav", [0.0] * 512)
    silent = log_spectrogram(load_utterance(tmp_path / "silence.wav").unsqueeze(0))
    assert silent == pytest.approx(torch.full_like(silent, -50.0))  # the 1e-5 floor


@pytest.mark.parametrize("width", [1, 2, 4])
def test_samples_are_scaled_to_unit_range_and_channels_averaged(tmp_path: Path, corpora, width: int) -> None:
    corpora.write_wav(tmp_path / "a.wav", [0.5, -0.5, 0.25], width=width, channels=2)
    samples, rate = read_wav(tmp_path / "a.wav")
    assert rate == 8000 and samples == pytest.approx([0.5, -0.5, 0.25], abs=0.01)


def test_16khz_is_low_passed_and_decimated(tmp_path: Path, corpora) -> None:
    tone = corpora.sine(500.0, 0.1, rate=16000, amplitude=0.4)
    alias = corpora.sine(6000.0, 0.1, rate=16000, amplitude=0.4)  # would fold onto 2 kHz (bin 64)
    corpora.write_wav(tmp_path / "a.wav", [a + b for a, b in zip(tone, alias, strict=True)], rate=16000)
    waveform = load_utterance(tmp_path / "a.wav")
    assert waveform.numel() == 800
    features = log_spectrogram(waveform.unsqueeze(0))[0, 2:-2]  # away from the filter's edges
    assert (features.argmax(-1) == 16).all()
    assert (features[:, 16] - features[:, 64] > 40).all()


def test_masked_mse_ignores_padding(tmp_path: Path, corpora) -> None:
    corpora.write_speech(tmp_path, count=8)
    task = make(tmp_path, batch_size=4)
    inputs, targets, mask = task.train_batch()
    assert inputs.shape == targets.shape and inputs.shape[1:] == (4, BINS) and mask.shape == inputs.shape[:2]
    waves = [load_utterance(p) for p in split_files(task.settings)["valid"]]
    frames = [frame_count(len(w)) for w in waves]
    assert [len(f) for f in task.features["valid"]] == frames
    assert frames[0] != frames[1]

    class Zero(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.zeros_like(x)

    expected_terms, expected_sum = 0, 0.0
    for w in waves:  # every utterance alone, unpadded: the next-frame targets are frames 1..
        f = log_spectrogram(w.unsqueeze(0))[0, 1:]
        expected_sum += (f**2).sum().item()
        expected_terms += f.numel()
    assert task.evaluate(Zero())["valid_loss"] == pytest.approx(expected_sum / expected_terms, rel=1e-5)
    by_hand = (targets**2).sum(-1)[mask].sum() / (mask.sum() * BINS)
    assert task.loss(Zero(), (inputs, targets, mask)).item() == pytest.approx(by_hand.item())


def test_inputs_are_standardised_with_the_training_frames_statistics(tmp_path: Path, corpora) -> None:
    corpora.write_speech(tmp_path, count=8)
    task = make(tmp_path, batch_size=4)
    train = torch.cat(task.features["train"])
    assert torch.allclose(task.mean, train.mean(0)) and torch.allclose(task.std, train.std(0, correction=0))
    inputs, targets, _ = task.batch("train", [0, 1, 2, 3])
    frames = torch.cat([f[:-1] for f in task.features["train"]])
    standardised = torch.cat([inputs[: len(f) - 1, i] for i, f in enumerate(task.features["train"])])
    assert torch.allclose(standardised, (frames - train.mean(0)) / train.std(0, correction=0), atol=1e-5)
    assert torch.equal(targets[: len(task.features["train"][0]) - 1, 0], task.features["train"][0][1:])
    inputs, _, _ = task.batch("valid", [0, 1])  # other splits take the training frames' scale
    first = task.features["valid"][0]
    assert torch.allclose(inputs[: len(first) - 1, 0], (first[:-1] - task.mean) / task.std, atol=1e-5)


def test_timit_layout_keeps_test_speakers_for_test(tmp_path: Path, corpora) -> None:
    corpora.write_speech(tmp_path, count=8, timit_layout=True)
    task = make(tmp_path, train_size=4, valid_size=2, test_size=2)
    test_files = split_files(task.settings)["test"]
    assert {p.parts[-4] for p in test_files} == {"TEST"}
    assert {len(load_utterance(p)) for p in test_files} == {round((0.08 + 0.01 * i) * 8000) for i in (6, 7)}
    assert sorted(len(f) for f in task.features["test"]) == sorted(
        frame_count(len(load_utterance(p))) for p in test_files
    )


def test_clear_errors(tmp_path: Path, corpora) -> None:
    with pytest.raises(MissingDataError, match="never downloaded"):
        make(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValidationError, match="is a file"):  # refused with the settings
        make(tmp_path / "file")
    corpora.write_speech(tmp_path / "few", count=3)
    with pytest.raises(DataError, match=r"holds 3 \.wav files, fewer than the 8"):
        make(tmp_path / "few")
    corpora.write_wav(tmp_path / "empty.wav", [])
    with pytest.raises(DataError, match=r"empty\.wav: the \.wav file holds no samples"):
        load_utterance(tmp_path / "empty.wav")
    corpora.write_wav(tmp_path / "short.wav", [0.1] * 300)
    with pytest.raises(DataError, match="fewer than the 2 STFT frames"):
        load_utterance(tmp_path / "short.wav")
    corpora.write_wav(tmp_path / "odd.wav", [0.1] * 1000, rate=11025)
    with pytest.raises(DataError, match="11025 Hz is not a multiple of 8 kHz"):
        load_utterance(tmp_path / "odd.wav")
    (tmp_path / "sphere.wav").write_bytes(b"NIST_1A\n   1024\n" + b"\0" * 100)
    with pytest.raises(DataError, match="NIST SPHERE"):
        load_utterance(tmp_path / "sphere.wav")
    (tmp_path / "junk.wav").write_bytes(b"not a wav file at all")
    with pytest.raises(DataError, match=r"junk\.wav: not a readable PCM \.wav file"):
        load_utterance(tmp_path / "junk.wav")
