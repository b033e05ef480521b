"""Speech spectrum prediction on TIMIT (GORU paper section 4.7).

Audio at 8 kHz (16 kHz TIMIT is low-passed and decimated here), samples scaled to [−1, 1]; STFT
with a periodic Hann window of 256 samples and a hop of 128, no centring, so an utterance of N
samples gives 1 + ⌊(N − 256)/128⌋ frames of 129 bins of 10·log10(1e-5 + |X|²). The network sees
frames up to t and predicts frame t + 1; the loss is the squared error averaged over the bins of
the valid (unpadded) frames. As in the papers' pipelines, each bin of the network's input is
standardised with the training utterances' mean and standard deviation (computed once, cached with
the spectrograms); targets and the loss stay in the spectrogram's units, the units of the papers'
MSE.

TIMIT is licensed: the task reads a local directory of .wav files (RIFF PCM, read with the
standard `wave` module) and never downloads. A `TRAIN`/`TEST` pair of subdirectories, as in
TIMIT's layout, keeps its test speakers for the test set; otherwise the files are split by
`data_seed`. The papers' sizes are 2,400 / 600 / 1,000 utterances.

Decoding, resampling and transforming 4,000 utterances takes from seconds to minutes and gives
every trial the same spectrograms, so they are cached on disk once per data directory
(`trainables.cache`, keyed by the chosen files' contents and the split sizes) and kept in the
process for the trials that reuse it.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from trainables.cache import content_key, file_stamps, load_or_build, process_cache
from trainables.data import DataError, MissingDataError, check_directory
from trainables.tasks.base import Task
from trainables.tasks.settings import TimitSettings

SAMPLE_RATE = 8000
WINDOW = 256
HOP = 128
BINS = WINDOW // 2 + 1
FLOOR = 1e-5
PCM_DTYPES = {1: np.uint8, 2: np.int16, 4: np.int32}
FEATURES_VERSION = 2  # bump when the features change, so caches written before are not read


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """Mono samples in [−1, 1] and the sample rate of a PCM .wav file."""
    with path.open("rb") as f:
        if f.read(7) == b"NIST_1A":
            raise DataError(
                f"{path}: a NIST SPHERE file (TIMIT's original format), not RIFF .wav; convert it first, "
                "e.g. `sph2pipe -f wav IN OUT` or `sox IN OUT.wav`"
            )
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, channels, n = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
            frames = w.readframes(n)
    except (wave.Error, EOFError) as exc:
        raise DataError(f"{path}: not a readable PCM .wav file ({exc})") from None
    if n == 0 or not frames:
        raise DataError(f"{path}: the .wav file holds no samples")
    if width not in PCM_DTYPES:
        raise DataError(f"{path}: {8 * width}-bit samples are not supported (8, 16 or 32-bit PCM)")
    samples = np.frombuffer(frames, dtype=PCM_DTYPES[width]).astype(np.float32)
    if width == 1:
        samples = (samples - 128.0) / 128.0
    else:
        samples /= float(2 ** (8 * width - 1))
    return samples.reshape(-1, channels).mean(axis=1), rate


def to_8khz(samples: np.ndarray, rate: int, path: Path) -> torch.Tensor:
    """Low-pass (windowed sinc at the new Nyquist) and decimate by an integer factor."""
    if rate == SAMPLE_RATE:
        return torch.from_numpy(np.ascontiguousarray(samples))
    if rate % SAMPLE_RATE:
        raise DataError(
            f"{path}: sample rate {rate} Hz is not a multiple of 8 kHz; resample it to 8 kHz first"
        )
    factor = rate // SAMPLE_RATE
    half = 16 * factor
    n = torch.arange(-half, half + 1, dtype=torch.float64)
    taps = (
        torch.sinc(n / factor) / factor * torch.hann_window(2 * half + 1, periodic=False, dtype=torch.float64)
    )
    x = torch.from_numpy(np.ascontiguousarray(samples)).double().view(1, 1, -1)
    filtered = F.conv1d(F.pad(x, (half, half)), taps.view(1, 1, -1))
    return filtered.view(-1)[::factor].float().contiguous()


def log_spectrogram(waves: torch.Tensor) -> torch.Tensor:
    """(B, N) samples → (B, frames, 129) log power, frames = 1 + ⌊(N − 256)/128⌋."""
    window = torch.hann_window(WINDOW, periodic=True, device=waves.device)
    spectrum = torch.stft(waves, WINDOW, HOP, window=window, center=False, return_complex=True)
    return (10 * torch.log10(FLOOR + spectrum.abs() ** 2)).transpose(1, 2)


def frame_count(samples: int) -> int:
    return 1 + (samples - WINDOW) // HOP if samples >= WINDOW else 0


def wav_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.suffix.lower() == ".wav" and p.is_file())


def split_files(settings: TimitSettings) -> dict[str, list[Path]]:
    """The utterances of each split, chosen by `data_seed`; clear errors when there are too few."""
    data_dir = check_directory(Path(settings.data_dir), "timit")
    if not data_dir.is_dir():
        raise MissingDataError(
            f"task 'timit' needs a directory of .wav files at {str(data_dir)!r}, which does not exist. "
            "TIMIT is licensed by the LDC and never downloaded: copy your TIMIT (converted to RIFF .wav "
            "at 8 or 16 kHz) there, or set data_dir"
        )
    subdirs = {p.name.lower(): p for p in data_dir.iterdir() if p.is_dir()}
    gen = torch.Generator().manual_seed(settings.data_seed)

    def pick(files: list[Path], size: int) -> list[Path]:
        return [files[i] for i in torch.randperm(len(files), generator=gen)[:size].tolist()]

    sizes = {"train": settings.train_size, "valid": settings.valid_size, "test": settings.test_size}
    if "train" in subdirs and "test" in subdirs:
        pools = {"train": wav_files(subdirs["train"]), "test": wav_files(subdirs["test"])}
        needs = {"train": sizes["train"] + sizes["valid"], "test": sizes["test"]}
        for name, need in needs.items():
            if len(pools[name]) < need:
                raise DataError(
                    f"task 'timit': {subdirs[name]} holds {len(pools[name])} .wav files, fewer than the "
                    f"{need} the settings ask for; lower the split sizes"
                )
        train_valid = pick(pools["train"], needs["train"])
        return {
            "train": train_valid[: sizes["train"]],
            "valid": train_valid[sizes["train"] :],
            "test": pick(pools["test"], sizes["test"]),
        }
    files = wav_files(data_dir)
    need = sum(sizes.values())
    if len(files) < need:
        raise DataError(
            f"task 'timit': {str(data_dir)!r} holds {len(files)} .wav files, fewer than the {need} "
            "(train + valid + test) the settings ask for; lower the split sizes"
        )
    chosen = pick(files, need)
    return {
        "train": chosen[: sizes["train"]],
        "valid": chosen[sizes["train"] : sizes["train"] + sizes["valid"]],
        "test": chosen[sizes["train"] + sizes["valid"] :],
    }


def load_utterance(path: Path) -> torch.Tensor:
    samples, rate = read_wav(path)
    waveform = to_8khz(samples, rate, path)
    if frame_count(len(waveform)) < 2:
        raise DataError(
            f"{path}: {len(waveform)} samples at 8 kHz give fewer than the 2 STFT frames "
            f"(at least {WINDOW + HOP} samples) that predicting the next frame needs"
        )
    return waveform


Splits = tuple[tuple[str, tuple[Path, ...]], ...]


@dataclass(frozen=True)
class Features:
    """Each split's log spectrograms, (frames, 129) per utterance, and the training frames' mean
    and standard deviation per bin, which standardise the network's input."""

    splits: dict[str, list[torch.Tensor]]
    mean: torch.Tensor
    std: torch.Tensor

    @classmethod
    def of(cls, splits: dict[str, list[torch.Tensor]]) -> Features:
        train = torch.cat(splits["train"])
        return cls(splits, train.mean(0), train.std(0, correction=0).clamp_min(1e-6))


def load_features(settings: TimitSettings) -> Features:
    """The spectrograms and their scale: from this process's memory, the disk cache, or the audio."""
    splits = tuple((name, tuple(files)) for name, files in split_files(settings).items())
    stamps = file_stamps(p for _, files in splits for p in files)
    return _features(splits, Path(settings.data_dir).expanduser(), stamps)


@process_cache(maxsize=2)
def _features(splits: Splits, data_dir: Path, stamps: tuple[tuple[int, int], ...]) -> Features:
    sizes = ",".join(f"{name}:{len(files)}" for name, files in splits)
    recipe = f"timit features v{FEATURES_VERSION} rate={SAMPLE_RATE} window={WINDOW} hop={HOP} floor={FLOOR} {sizes}"
    return load_or_build(
        data_dir,
        "timit-features",
        content_key(recipe, [p for _, files in splits for p in files], data_dir),
        lambda: Features.of(
            {
                name: [log_spectrogram(load_utterance(p).unsqueeze(0))[0] for p in files]
                for name, files in splits
            }
        ),
        lambda features: {
            "frames": {name: torch.cat(utterances) for name, utterances in features.splits.items()},
            "lengths": {
                name: torch.tensor([len(u) for u in utterances])
                for name, utterances in features.splits.items()
            },
            "mean": features.mean,
            "std": features.std,
        },
        lambda entry: Features(
            {
                name: list(torch.split(entry["frames"][name], entry["lengths"][name].tolist()))
                for name, _ in splits
            },
            entry["mean"],
            entry["std"],
        ),
    )


class Timit(Task):
    """Next-frame log-spectrum regression; reports the masked MSE."""

    stream_attributes: ClassVar[tuple[str, ...]] = ("_gen", "_order")

    input_size = BINS
    output_size = BINS

    @classmethod
    def check_data(cls, settings: TimitSettings) -> None:
        split_files(settings)

    @classmethod
    def sized(cls, settings: TimitSettings) -> Timit:
        task = cls.__new__(cls)
        task.settings = settings
        return task

    def __init__(self, settings: TimitSettings, batch_size: int, seed: int, device: torch.device) -> None:
        self.settings = settings
        self.batch_size = batch_size
        self.device = device
        # an utterance's spectrogram never changes: computed once, not in every batch (where the
        # STFT took ~10% of a training step on a CPU)
        features = load_features(settings)
        self.features = features.splits
        self.mean, self.std = features.mean.to(device), features.std.to(device)
        self._gen = torch.Generator().manual_seed(seed)
        self._order = torch.empty(0, dtype=torch.long)

    def batch(self, split: str, index: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Standardised inputs and targets (frames − 1, B, 129) and the mask (frames − 1, B) of
        valid targets."""
        utterances = [self.features[split][i] for i in index]
        features = pad_sequence(utterances).to(self.device)  # (frames, B, 129), zeros after an utterance
        frames = torch.tensor([len(u) for u in utterances], device=self.device)
        steps = torch.arange(1, features.shape[0], device=self.device)
        mask = steps.unsqueeze(1) < frames.unsqueeze(0)
        return (features[:-1] - self.mean) / self.std, features[1:], mask

    def train_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if len(self._order) < self.batch_size:  # a new epoch, reshuffled
            fresh = torch.randperm(len(self.features["train"]), generator=self._gen)
            self._order = torch.cat([self._order, fresh])
        index, self._order = self._order[: self.batch_size], self._order[self.batch_size :]
        return self.batch("train", index.tolist())

    @staticmethod
    def squared_error(
        network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed squared error over valid frames and bins, and the number of terms."""
        inputs, targets, mask = batch
        error = ((network(inputs) - targets) ** 2).sum(-1)
        return (error * mask).sum(), mask.sum() * BINS

    def loss(
        self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        total, terms = self.squared_error(network, batch)
        return total / terms

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        """Masked MSE over the validation utterances, or with `split="test"` the test ones."""
        n = len(self.features[split])
        total, terms = 0.0, 0
        for start in range(0, n, self.batch_size):
            batch_total, batch_terms = self.squared_error(
                network, self.batch(split, list(range(start, min(start + self.batch_size, n))))
            )
            total += batch_total.item()
            terms += int(batch_terms)
        return {f"{split}_loss": total / terms}
