"""kernelevo/atomic_write.py: a file is replaced whole or not at all. A write that fails part
way (here: the disk refusing the flush) leaves the old file byte for byte and no temporary
beside it; the new file keeps the old one's permission bits; a new file gets what `open` gives
it (the umask applied) unless a mode is asked for; text goes as UTF-8 with newlines untouched."""

import os
import stat

import pytest

from kernelevo import atomic_write
from kernelevo.atomic_write import temp_beside, write_atomic


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_write_that_fails_leaves_the_old_file_whole_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "model.py"
    path.write_bytes(b"old\r\ncontent\n" * 1000)

    def refused(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "fsync", refused)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, "new" * 100_000)
    assert path.read_bytes() == b"old\r\ncontent\n" * 1000
    assert os.listdir(tmp_path) == ["model.py"]


def test_a_failed_rename_leaves_no_temporary(tmp_path):
    folder = tmp_path / "target-is-a-folder"
    (folder / "inside").mkdir(parents=True)
    with pytest.raises(OSError):
        write_atomic(folder, b"x")
    assert sorted(os.listdir(tmp_path)) == ["target-is-a-folder"]


def test_the_new_file_keeps_the_old_ones_mode(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/sh\n")
    os.chmod(path, 0o750)
    write_atomic(path, "#!/bin/sh\necho hi\n")
    assert path.read_text() == "#!/bin/sh\necho hi\n" and _mode(path) == 0o750


def test_a_new_file_gets_the_umask_mode_or_the_one_asked_for(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.json", "{}")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.json") == 0o640
    write_atomic(tmp_path / "b.py", "x = 1\n", new_file_mode=0o604)
    assert _mode(tmp_path / "b.py") == 0o604


def test_text_is_utf8_with_newlines_untouched(tmp_path):
    write_atomic(tmp_path / "t.py", "π = 3\r\nτ = 6\n")
    assert (tmp_path / "t.py").read_bytes() == "π = 3\r\nτ = 6\n".encode()


def test_a_temporary_is_beside_the_file_until_renamed(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")
    tmp = temp_beside(path, "new")
    assert os.path.dirname(tmp) == str(tmp_path) and path.read_text() == "old"
    assert temp_beside(path, "other") != tmp  # two writers never share a temporary
    os.replace(tmp, path)
    assert path.read_text() == "new"
