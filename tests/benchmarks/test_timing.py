"""benchmarks/timing.py, the paired timing, the one every benchmark uses (bench_training's
training and decoding, profile_layers): the order rotates from item to item and on
across rounds, the i-th values of two names are a pair, the rounds stop early when told, and the
speed ratio is the baseline's time over the system's (> 1: faster)."""

from benchmarks.timing import interleaved, paired, paired_ms, speed_ratios


def test_the_order_rotates_and_the_values_pair_up():
    order = []

    def measure(name, item):
        order.append(name)
        return (name, item)

    times = interleaved(measure, ["a", "b", "c"], [0, 1], rounds=2)
    # item 0 from a, item 1 from b, then round 2 goes on: item 0 from c, item 1 from a
    assert order == list("abc" "bca" "cab" "abc")
    assert all(times[n] == [(n, 0), (n, 1), (n, 0), (n, 1)] for n in "abc")


def test_the_rounds_stop_when_told():
    seen = []

    def stop(times):
        seen.append(len(times["a"]))
        return len(times["a"]) >= 6

    times = interleaved(lambda n, i: 1.0, ["a", "b"], [0, 1, 2], rounds=5, stop=stop)
    assert seen == [3, 6] and len(times["a"]) == len(times["b"]) == 6


def test_the_speed_ratio_is_the_baseline_time_over_the_system_time():
    system, baseline = [2.0, 1.0, 4.0], [1.0, 1.0, 2.0]
    assert speed_ratios(system, baseline) == [0.5, 1.0, 0.5]  # twice as slow: 0.5
    figures = paired(system, baseline, resamples=10)
    assert figures["speed_ratio_interleaved_median"] == 0.5 and figures["time_ratio_median"] == 2.0


def test_the_profiles_warm_every_step_then_rotate():
    calls = []
    steps = [lambda: calls.append("a"), lambda: calls.append("b")]
    times = paired_ms(steps, 3)
    assert calls == ["a", "b"] + ["a", "b", "b", "a", "a", "b"]  # one untimed call each, then the rounds
    assert list(times) == [0, 1] and all(len(t) == 3 and min(t) >= 0 for t in times.values())
