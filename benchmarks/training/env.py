"""The machine and the process: versions, device, peak memory on CPU, a copy-throughput probe."""

import ctypes
import gc
import os
import platform
import resource
import statistics

import torch

from benchmarks.timing import synced_seconds

def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device):
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        return {"type": "cuda", "name": torch.cuda.get_device_name(device),
                "memory_GiB": round(p.total_memory / 2 ** 30, 1), "cuda": torch.version.cuda}
    return {"type": "cpu", "name": cpu_name(), "threads": torch.get_num_threads(), "cores": os.cpu_count()}


class CpuPeakMemory:
    """Peak RSS growth of this process during a block, in MB: the peak resident set (VmHWM), reset
    through /proc/self/clear_refs after malloc_trim, over the resident set at start(). Where
    clear_refs is not writable, ru_maxrss's growth, which only sees a new peak (`method` says which)."""

    def __init__(self):
        self.method = "VmHWM growth (peak reset via /proc/self/clear_refs, after malloc_trim)"
        try:
            self._libc = ctypes.CDLL("libc.so.6")
        except OSError:
            self._libc = None
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self._status("VmHWM")
        except (OSError, KeyError):
            self.method = "ru_maxrss growth (getrusage; only models that raise the process peak show)"

    @staticmethod
    def _status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        raise KeyError(key)

    def start(self):
        gc.collect()
        if self._libc is not None:
            self._libc.malloc_trim(0)
        if self.method.startswith("VmHWM"):
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.base = self._status("VmRSS")
        else:
            self.base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak_mb(self):
        if self.method.startswith("VmHWM"):
            peak = self._status("VmHWM")
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return max(0, peak - self.base) / 2 ** 20


def copy_throughput(device, megabytes=256, repeats=5):
    """A fixed memory-bandwidth probe: GB/s (10^9 bytes) of copying one float32 tensor of
    `megabytes` MB into another (bytes read + bytes written over the time), the median of
    `repeats` copies after one untimed; with this process's torch threads. Beside the figures,
    it tells runs on different (or differently loaded) machines apart."""
    n = megabytes * 2 ** 20 // 4
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    seconds = [synced_seconds(lambda: dst.copy_(src), device) for _ in range(repeats)]
    del src, dst
    return round(2 * n * 4 / statistics.median(seconds) / 1e9, 2)
