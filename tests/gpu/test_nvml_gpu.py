"""NVML on a real GPU: the facts measure/gpus.py reads agree with torch's view of the same GPU,
and the verdict's device record carries the driver and clocks from them."""

from __future__ import annotations

import threading

import pytest

from kernelevo.measure import device_info, gpus, machine

pytestmark = pytest.mark.gpu


def test_nvml_sees_the_gpu_torch_sees():
    import torch

    found = gpus.scan()
    assert found.gpus, f"NVML found no GPU on a GPU machine: {found.problem}"
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    facts = gpus.for_device(found.gpus, str(props.uuid), index)
    assert facts is not None and facts.same_uuid(str(props.uuid)), (props.uuid, found.gpus)
    assert facts.name == torch.cuda.get_device_name(index)
    assert facts.compute_capability == torch.cuda.get_device_capability(index)
    assert facts.driver.count(".") >= 1
    assert facts.max_sm_clock_mhz and facts.sm_clock_mhz and facts.mem_clock_mhz
    assert 0 < facts.sm_clock_mhz <= facts.max_sm_clock_mhz
    machine.probe.cache_clear()
    m = machine.probe()
    assert m.has_gpu and m.driver == found.gpus[0].driver and m.arch == found.gpus[0].arch


def test_device_info_takes_driver_and_clocks_from_nvml():
    info = device_info.device_info(0)
    assert info["device"] == "cuda" and info["driver"] and info["versions"]["driver"]
    assert info["clocks_mhz"]["max_sm"] and info["clocks_mhz"]["sm"]


def test_utilization_while_a_kernel_runs():
    import torch

    index = torch.cuda.current_device()
    uuid = str(torch.cuda.get_device_properties(index).uuid)
    facts = gpus.for_device(gpus.gpus(), uuid, index)
    assert facts is not None
    stop = threading.Event()
    seen: list[float] = []

    def sample() -> None:
        seen.extend(gpus.utilization_samples(facts.index, 0.05, stop))

    t = threading.Thread(target=sample)
    t.start()
    x = torch.randn(8192, 8192, device="cuda")
    for _ in range(60):  # fp32 GEMMs of 1.1 TFLOP each: about a second
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
    stop.set()
    t.join()
    assert seen and all(0 <= u <= 100 for u in seen) and max(seen) > 0, seen
