"""`fetch` with the network replaced by local files in the real archive formats."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
import torch

from trainables import data
from trainables.catalog import load_all
from trainables.data import DataError, fetch, md5sum
from trainables.registry import MODELS, TASKS

load_all()


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """URL → local file; `data.download` copies from it, and fails for anything else."""
    files: dict[str, Path] = {}

    def download(url: str, dest: Path) -> None:
        if url not in files:
            raise OSError(f"no route to {url}")
        shutil.copyfile(files[url], dest)

    monkeypatch.setattr(data, "download", download)
    return files


def test_ptb_is_verified_and_the_char_files_derived(
    served: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, corpora
) -> None:
    source = tmp_path / "source"
    corpora.write_ptb(source)
    sums = {}
    for name in data.PTB_WORD_FILES:
        served[data.PTB_URL.format(name=name)] = source / name
        sums[name] = md5sum(source / name)
    monkeypatch.setattr(data, "PTB_MD5", sums)
    target = fetch("ptb_char", tmp_path / "ptb")
    for name in data.PTB_CHAR_FILES:
        assert (target / name).read_text() == (source / name).read_text()
    task = TASKS.get("ptb_char").create(
        {"data_dir": str(target)}, batch_size=2, seed=0, device=torch.device("cpu")
    )
    assert "_" in task.vocabulary


def test_a_checksum_mismatch_is_refused(served: dict[str, Path], tmp_path: Path) -> None:
    for name in data.PTB_WORD_FILES:
        served[data.PTB_URL.format(name=name)] = tmp_path / "tampered"
    (tmp_path / "tampered").write_text(" not the penn treebank \n")
    with pytest.raises(DataError, match="is not the published f26c4b92"):
        fetch("ptb_word", tmp_path / "ptb")
    assert not (tmp_path / "ptb" / "ptb.train.txt").exists()


def test_wikitext2_from_the_zip_with_a_mirror_fallback(
    served: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, corpora
) -> None:
    corpora.write_wikitext(tmp_path / "wikitext-2")
    archive = tmp_path / "wikitext-2-v1.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in data.WIKITEXT2_FILES:
            z.write(tmp_path / "wikitext-2" / name, f"wikitext-2/{name}")
    served[data.WIKITEXT2_URLS[1]] = archive  # the first mirror is down
    monkeypatch.setattr(data, "WIKITEXT2_MD5", md5sum(archive))
    target = fetch("wikitext2", tmp_path / "out")
    assert sorted(p.name for p in target.iterdir()) == sorted(data.WIKITEXT2_FILES)


def test_babi_tarball_is_extracted_and_checked(served: dict[str, Path], tmp_path: Path, corpora) -> None:
    for subset in data.BABI_SETS:
        corpora.write_babi(tmp_path / "src", tasks=tuple(range(1, 21)), subset=subset, stories=2)
    archive = tmp_path / "babi.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "src" / data.BABI_ROOT, arcname=data.BABI_ROOT)
        extra = b"ignored"
        info = tarfile.TarInfo(f"{data.BABI_ROOT}/hn/qa1_x_train.txt")
        info.size = len(extra)
        tar.addfile(info, io.BytesIO(extra))
    served[data.BABI_URLS[0]] = archive
    target = fetch("babi", tmp_path / "babi")
    assert not (target / data.BABI_ROOT / "hn").exists()
    task = TASKS.get("babi").create(
        {"data_dir": str(target), "tasks": [19, 20]}, batch_size=2, seed=0, device=torch.device("cpu")
    )
    network = task.create_network(lambda i, h=None: MODELS.get("gru").create(i, h or 4))
    assert set(task.evaluate(network)) >= {"valid_accuracy_qa19", "valid_accuracy_qa20"}


def test_an_incomplete_babi_archive_is_refused(served: dict[str, Path], tmp_path: Path, corpora) -> None:
    corpora.write_babi(tmp_path / "src", tasks=(1,), stories=2)
    archive = tmp_path / "babi.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "src" / data.BABI_ROOT, arcname=data.BABI_ROOT)
    served[data.BABI_URLS[1]] = archive
    with pytest.raises(DataError, match="lacks"):
        fetch("babi", tmp_path / "babi")


def test_nothing_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="licensed"):
        fetch("timit", tmp_path)
    with pytest.raises(DataError, match="nothing to download"):
        fetch("copying", tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(DataError, match="is a file"):
        fetch("ptb_word", tmp_path / "file")


def test_unreachable_sources_are_all_named(served: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(DataError) as error:
        fetch("wikitext2", tmp_path)
    assert all(url in str(error.value) for url in data.WIKITEXT2_URLS)
