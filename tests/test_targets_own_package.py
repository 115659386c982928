"""Where a file's own package is imported from (kernelevo/targets/own_package.py), on the real
files of tests/corpus/public."""

from __future__ import annotations

from pathlib import Path

from kernelevo.targets.own_package import OwnPackage, own_package, package_parent

CORPUS = Path(__file__).parent / "corpus" / "public"


def test_a_file_in_a_folder_without_an_init_is_imported_by_its_packages_dotted_name() -> None:
    """flux's src/flux/modules/ has no __init__.py; layers.py imports flux.math, and flux imports
    it as flux.modules.layers: its regression test and its guarded import must do the same."""
    user = CORPUS / "flux" / "src" / "flux" / "modules" / "layers.py"
    found = own_package(str(user), user.read_text())
    assert found == OwnPackage(str(CORPUS / "flux" / "src"), "flux.modules")
    assert found.relative_root(str(user.parent)) == "../.."
    assert package_parent(str(user.parent), "flux") == str(CORPUS / "flux" / "src")


def test_regular_packages_and_files_that_import_no_package_above_them_are_left_as_they_are() -> (
    None
):
    mingpt = CORPUS / "minGPT" / "mingpt" / "model.py"  # mingpt/ has an __init__.py
    assert own_package(str(mingpt), mingpt.read_text()) is None
    # whisper's model.py sits in this repository's tests/ folder, but imports no package above it
    whisper = CORPUS / "whisper" / "whisper" / "model.py"
    assert own_package(str(whisper), whisper.read_text()) is None
    assert package_parent(str(whisper.parent), "torch") is None
