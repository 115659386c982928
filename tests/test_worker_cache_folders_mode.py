"""The shared build caches kernelevo makes are readable by the uid candidates run as, whatever the
umask, and `kernelevo doctor` names a cache folder that candidates cannot read (then each candidate
rebuilds what the judge built once)."""

import os
import stat

import pytest

from kernelevo.backends import nvcc
from kernelevo.worker import sandbox_view


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def strict_umask():
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_cache_folders_made_under_a_strict_umask_are_readable_by_other_uids(
    tmp_path, monkeypatch, strict_umask
):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "kc"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    dirs = sandbox_view.cache_dirs()
    for path in dirs.values():
        assert _mode(path) & 0o005 == 0o005, (path, oct(_mode(path)))
    assert _mode(nvcc.cache_dir("triton-key")) & 0o005 == 0o005
    if os.geteuid() == 0:
        assert sandbox_view.unreadable_caches() == []


def test_a_folder_the_user_made_private_is_left_as_it_is_and_named(tmp_path, monkeypatch):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "kc"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(private))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    sandbox_view.cache_dirs()
    assert _mode(private) == 0o700  # never opened up behind the user's back
    if os.geteuid() == 0:  # candidates get a uid of their own only under root
        assert sandbox_view.unreadable_caches() == [private.resolve()]


def test_doctor_names_a_build_cache_the_candidates_cannot_read(tmp_path, monkeypatch, capsys):
    from kernelevo.cli import main
    from kernelevo.sandbox import isolation

    iso = isolation()
    if not iso.ok or iso.detail.get("uid") in (None, 0):
        pytest.skip("candidates do not run as a uid of their own here")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(private))
    assert main(["doctor"]) == 0
    said = capsys.readouterr().out
    assert f"{private.resolve()}: candidates, each run as a uid of its own, cannot read" in said
    assert f"chmod 755 {private.resolve()}" in said
