"""The one timing helper of the benchmarks: how two or more things are timed against each other.

Every comparison is paired: the things measured back to back on the same item, in an order that
rotates from item to item (interleaved), so that a machine whose speed drifts slows them alike and
the i-th values of two of them form a pair. A ratio is a speed ratio, baseline time / system time
(> 1: the system is faster); a time ratio, where one is reported, is its inverse. Medians come with
their 95% bootstrap interval: a target is decided only where the interval clears it.
"""

import random
import statistics
import time

import torch


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(fn, *args):
    """Seconds of fn(*args) by the host's clock."""
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def synced_seconds(fn, device):
    """Seconds of fn() by the host's clock, the device idle before it and waited for after it."""
    sync(device)
    seconds = clock(fn)
    sync(device)
    return seconds


def timed_update(step, sample, device):
    """Seconds of one update: CUDA events around it on a GPU (the GPU's own clock, no host
    timer), the host's clock elsewhere; the device idle before it starts."""
    sync(device)
    if device.type != "cuda":
        return clock(step, sample)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step(sample)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000


def interleaved(measure, names, items, rounds=1, stop=None):
    """Paired measurements, the one way every benchmark here times its systems against each other:
    {name: [measure(name, item) for each round and item]}, every item measured for every name back
    to back, in an order that rotates from item to item (and on across rounds), so that a machine
    whose speed drifts slows them alike and the i-th values of two names form a pair. stop(times),
    called after each round but the last, ends the rounds early when true."""
    names = list(names)
    items = list(items)
    times = {n: [] for n in names}
    for r in range(rounds):
        for j, item in enumerate(items):
            k = (r * len(items) + j) % len(names)
            for n in names[k:] + names[:k]:
                times[n].append(measure(n, item))
        if stop is not None and r + 1 < rounds and stop(times):
            break
    return times


def paired_ms(steps, iters):
    """{k: [milliseconds of steps[k] in each round]}: every step once untimed, then `iters` rounds of
    all of them back to back in rotating order (interleaved), by the host's clock: the profiles'
    timing of a module against its baseline, steps[0]."""
    for step in steps:
        step()  # warm-up
    return interleaved(lambda k, _: 1000 * clock(steps[k]), range(len(steps)), range(iters))


def speed_ratios(times, baseline):
    """The speed ratio of each pair: the baseline's time / the system's time (> 1: the system is
    faster). The benchmarks' one direction; a time ratio, where one is reported, is its inverse."""
    return [b / m for m, b in zip(times, baseline)]


def within(times, baseline, target, resamples=500):
    """Whether every system's median speed ratio has a 95% interval within +-target of it."""
    for n, t in times.items():
        if n == baseline:
            continue
        if len(t) < 8:  # too few pairs for an interval
            return False
        speed = speed_ratios(t, times[baseline])
        lo, hi = bootstrap_median_ci(speed, resamples)
        if (hi - lo) / 2 > target * statistics.median(speed):
            return False
    return True


def paired(times, baseline, resamples=2000):
    """Per-batch ratios against the baseline's time on the same batch: the median, the
    quartiles (the spread) and the median's 95% bootstrap interval of model time / baseline
    time, the speed ratio from total times, and the median speed ratio with its interval over
    the batches (how far the median itself can be trusted: a target is decided only where the
    interval clears it)."""
    speed = speed_ratios(times, baseline)
    ratios = [m / b for m, b in zip(times, baseline)]  # the time ratio: the inverse of each pair's speed ratio
    q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else [ratios[0]] * 3
    return {"time_ratio_median": statistics.median(ratios), "time_ratio_q1": q[0], "time_ratio_q3": q[2],
            "time_ratio_ci95": bootstrap_median_ci(ratios, resamples),
            "speed_ratio_interleaved": sum(baseline) / sum(times),
            "speed_ratio_interleaved_median": statistics.median(speed),
            "speed_ratio_interleaved_ci95": bootstrap_median_ci(speed, resamples),
            "paired_updates": len(ratios)}


def bootstrap_median_ci(values, resamples=2000):
    """95% percentile-bootstrap interval of the median of `values` (resampled with replacement)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return [medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]]
