"""What each GPU model should reach in the active test (``--active``): the vendor's published peak figures,
and the share of each that the test's own kernels reach on a healthy GPU. Pure data and two lookups.

The table, one row per model, matched on the name NVML reports (longest match first, so "H100 NVL" is not
read as "H100"). Peak fp32 is the non-tensor (CUDA core) rate; memory is the HBM/GDDR bandwidth; the host link
is the PCIe generation and width the card is built for. Sources (NVIDIA's datasheets and product pages):

* H200 SXM / NVL: https://www.nvidia.com/en-us/data-center/h200/ (FP32 67 / 60 TFLOPS, 4.8 TB/s, PCIe Gen5)
* H100 SXM / NVL / PCIe: https://www.nvidia.com/en-us/data-center/h100/ and the H100 PCIe product brief
  PB-11133-001 (FP32 67 / 60 / 51 TFLOPS; 3.35 / 3.9 / 2.0 TB/s; PCIe Gen5 x16)
* B200 (HGX, 1000 W): https://www.nvidia.com/en-us/data-center/hgx/ (8 TB/s per GPU; FP32 75 TFLOPS per GPU
  in the HGX B200 table), PCIe Gen6 x16 (https://glennklockwood.com/garden/processors/B200 collects both)
* A100 SXM4 80GB / PCIe 80GB / 40GB: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/
  nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (FP32 19.5 TFLOPS; 2,039 / 1,935 / 1,555 GB/s; PCIe Gen4)
* L40S: https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413 (FP32 91.6 TFLOPS, 864 GB/s, PCIe Gen4
  x16)
* RTX PRO 6000 Blackwell: https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/
  rtx-pro-6000/ (FP32 125 TFLOPS, 96 GB GDDR7 at 1,792 GB/s, PCIe Gen5 x16)

What the test reaches of those peaks on a healthy GPU (:data:`REACHED`) was measured on the H200
(tests/data/h200_580.159_active/README.md): an FMA loop runs at the boost clock only while the power
limit allows, a device-to-device copy does not reach the HBM's peak, and a PCIe copy loses the packet
overheads. A GPU is judged against ``peak x reached``: its expected figure, the least a healthy one reaches.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """One GPU model's published peaks."""

    model: str  # matched, case-insensitively, inside the GPU's name ("NVIDIA H200" has "h200")
    fp32_tflops: float
    memory_gb_s: float
    pcie_gen: int
    pcie_width: int = 16


PUBLISHED: tuple[Published, ...] = (
    Published(model="H200 NVL", fp32_tflops=60.0, memory_gb_s=4800.0, pcie_gen=5),
    Published(model="H200", fp32_tflops=67.0, memory_gb_s=4800.0, pcie_gen=5),
    Published(model="H100 NVL", fp32_tflops=60.0, memory_gb_s=3900.0, pcie_gen=5),
    Published(model="H100 PCIe", fp32_tflops=51.0, memory_gb_s=2000.0, pcie_gen=5),
    Published(model="H100", fp32_tflops=67.0, memory_gb_s=3350.0, pcie_gen=5),
    Published(model="B200", fp32_tflops=75.0, memory_gb_s=8000.0, pcie_gen=6),
    Published(model="A100-SXM4-80GB", fp32_tflops=19.5, memory_gb_s=2039.0, pcie_gen=4),
    Published(model="A100 80GB PCIe", fp32_tflops=19.5, memory_gb_s=1935.0, pcie_gen=4),
    Published(model="A100", fp32_tflops=19.5, memory_gb_s=1555.0, pcie_gen=4),
    Published(model="L40S", fp32_tflops=91.6, memory_gb_s=864.0, pcie_gen=4),
    Published(model="RTX PRO 6000 Blackwell", fp32_tflops=125.0, memory_gb_s=1792.0, pcie_gen=5),
)

# PCIe per lane and direction, GB/s after line coding (PCI-SIG): 2.5 and 5 GT/s with 8b/10b; 8, 16 and 32
# GT/s with 128b/130b; 64 GT/s (Gen6) with FLIT mode's 242/256.
PCIE_LANE_GB_S = {1: 0.25, 2: 0.5, 3: 8 / 8 * 128 / 130, 4: 16 / 8 * 128 / 130, 5: 32 / 8 * 128 / 130,
                  6: 64 / 8 * 242 / 256}

# The share of each peak a healthy GPU reaches at least in the test. The H200 reached 0.93 of its fp32 peak
# (62.5 of 67 TFLOP/s at 1980 MHz), 0.89 of its HBM peak (4266 of 4800 GB/s) and 0.88 of its Gen5 x16 link
# (55.3 of 63.0 GB/s each way) in every run (tests/data/h200_580.159_active); the floors leave room for other
# models and drivers (a copy engine or a boost clock that reaches less) and for PCIe through a hypervisor.
REACHED = {"compute_tflops": 0.8, "memory_copy_gb_s": 0.8, "pcie_h2d_gb_s": 0.7, "pcie_d2h_gb_s": 0.7}


def published(gpu_name: str | None) -> Published | None:
    """The table's row for a GPU named ``gpu_name`` (NVML's name), or None for a model it does not list."""
    if not gpu_name:
        return None
    name = gpu_name.lower()
    for row in sorted(PUBLISHED, key=lambda r: -len(r.model)):
        if row.model.lower() in name:
            return row
    return None


def pcie_gb_s(gen: int | None, width: int | None) -> float | None:
    """The link's one-direction bandwidth in GB/s after line coding, or None for an unknown generation."""
    if gen is None or width is None or gen not in PCIE_LANE_GB_S:
        return None
    return PCIE_LANE_GB_S[gen] * width


def expected(figure: str, gpu_name: str | None, pcie_gen_max: int | None = None,
             pcie_width_max: int | None = None) -> tuple[float, float] | None:
    """(expected figure, published peak) of ``figure`` (a field of ActiveGpu) for this GPU, or None where the
    table has no row. The host link's peak is the card's (the table), capped by what the slot offers (the
    GPU's maximum generation and width, where read): a Gen5 card in a Gen4 slot is expected at Gen4."""
    row = published(gpu_name)
    if row is None:
        return None
    if figure == "compute_tflops":
        peak = row.fp32_tflops
    elif figure == "memory_copy_gb_s":
        peak = row.memory_gb_s
    else:
        gen = min(row.pcie_gen, pcie_gen_max) if pcie_gen_max else row.pcie_gen
        width = min(row.pcie_width, pcie_width_max) if pcie_width_max else row.pcie_width
        link = pcie_gb_s(gen, width)
        if link is None:
            return None
        peak = link
    return round(peak * REACHED[figure], 1), round(peak, 1)
