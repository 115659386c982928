import json

import pytest
import torch

from kernelevo.measure import device_info as di
from kernelevo.measure import device_peaks as dp
from kernelevo.measure.gpus import GpuFacts, for_device


def test_cpu_device_info():
    info = di.device_info("cpu")
    assert info["device"] == "cpu"
    assert info["versions"]["torch"] == torch.__version__
    assert info["versions"]["python"].count(".") == 2
    json.dumps(info)  # plain data


def test_versions_include_triton_when_installed():
    pytest.importorskip("triton")
    assert "triton" in di.versions()


def _gpu(index: int, uuid: str) -> GpuFacts:
    return GpuFacts(index=index, uuid=uuid, name="NVIDIA H200", driver="570.86.15")


def test_gpu_facts_matched_to_a_torch_device_by_uuid_not_index():
    found = [_gpu(0, "GPU-1111-aaaa"), _gpu(1, "GPU-2222-bbbb")]
    # CUDA_VISIBLE_DEVICES=1 makes the second GPU torch's device 0; torch drops the GPU- prefix
    assert for_device(found, "2222-bbbb", 0).index == 1
    assert for_device(found, "GPU-1111-AAAA", 5).index == 0
    assert for_device(found, None, 1).index == 1
    assert for_device(found[:1], "other", 3).index == 0  # the only GPU
    assert for_device([], "x", 0) is None


def test_peaks_key_names_gpu_driver_and_torch():
    info = {"name": "NVIDIA H200", "driver": "570.86.15", "versions": {"torch": "2.11.0"}}
    assert dp.peaks_key(info) == "NVIDIA H200|driver 570.86.15|torch 2.11.0"
    assert dp.peaks_key(info, quick=True).endswith("|quick")


def _peaks(key="gpu|driver 1|torch 2", copy=4200.0):
    return dp.DevicePeaks(
        copy_gbps=copy, bf16_tflops=693.0, fp32_tflops=51.0, key=key, measured_at=1.0
    )


def test_cache_round_trip_and_merge(tmp_path):
    dp.store(_peaks("a"), tmp_path)
    dp.store(_peaks("b", copy=3000.0), tmp_path)
    assert dp.load_cached("a", tmp_path).copy_gbps == 4200.0
    assert dp.load_cached("b", tmp_path).copy_gbps == 3000.0
    assert dp.load_cached("c", tmp_path) is None
    assert [p.name for p in tmp_path.iterdir()] == [dp.CACHE_FILE]  # no temp files left


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "c"))
    assert dp.cache_dir() == tmp_path / "c"
    dp.store(_peaks("k"))
    assert (tmp_path / "c" / dp.CACHE_FILE).exists()
    monkeypatch.delenv("KERNELEVO_CACHE")
    assert dp.cache_dir().parts[-2:] == (".cache", "kernelevo")


def test_corrupt_cache_is_ignored_and_rewritten(tmp_path):
    (tmp_path / dp.CACHE_FILE).write_text("{not json")
    assert dp.load_cached("a", tmp_path) is None
    dp.store(_peaks("a"), tmp_path)
    assert dp.load_cached("a", tmp_path) is not None


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU behaviour")
def test_no_peaks_without_cuda(tmp_path):
    assert dp.get_peaks(directory=tmp_path) is None
    assert dp.measure_peaks(quick=True) is None
    assert not any(tmp_path.iterdir())


def test_fp32_matmul_sets_and_restores_precision():
    from kernelevo.measure.precision import fp32_matmul

    before = torch.backends.cuda.matmul.fp32_precision
    with fp32_matmul(tf32=False):
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
        with fp32_matmul(tf32=True):
            assert torch.backends.cuda.matmul.fp32_precision == "tf32"
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
    assert torch.backends.cuda.matmul.fp32_precision == before
