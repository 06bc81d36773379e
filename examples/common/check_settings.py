"""Every setting of a recipe that a step reads, checked before any step works (one line naming
each bad one), so that a typo stops the recipe at once rather than after hours of data steps:

    printf '%s=%s\0' NAME VALUE ... | python examples/common/check_settings.py [--user-dir DIR]

The settings come on stdin as NUL-separated NAME=VALUE pairs (preamble.sh's check_settings passes
every variable the recipe has set); names this file does not know are left alone, and so are
known names the recipe has not set. Names of systems and sizes are checked against the
registry (DIR/systems.py, by default the fairseq_mgsa package Python finds; read as a file: no
fairseq import) when there is one (without it, a later step says how to install the package).
--given NAMES: the settings the user gave (the environment's), not the recipe's defaults: a
default MULTI_SEED_SYSTEMS may name systems left out of SYSTEMS, a given one may not.
"""

import argparse
import importlib.util
import math
import os
import re
import sys

POSITIVE = ("MAX_UPDATE", "VALID_INTERVAL", "SAVE_INTERVAL_UPDATES", "AVG_N", "RUN_JOBS", "MAX_TOKENS",
            "UPDATE_FREQ", "BEAM", "BPE_MERGES", "LEVELS", "NUM_SHARDS", "WORKERS", "GEN_MAX_TOKENS",
            "PARSER_BATCH_SIZE", "LOG_INTERVAL", "MAX_LEN", "PARSER_DEV", "PARSER_TEST", "PAPER_GPUS",
            "VALID_EVERY", "CONNECT_TIMEOUT", "CHECK_TIMEOUT",
            "WARMUP")  # 0 warm-up updates: fairseq's inverse_sqrt schedule divides by it
NON_NEGATIVE = ("SEED", "GPUS")
MAX_SEED = 2**32 - 1  # fairseq-train seeds numpy with it, which takes 0 .. 2**32 - 1
POSITIVE_OR_EMPTY = ("PATIENCE", "THREADS", "PARSE_JOBS")  # empty: off (PATIENCE), torch's default, ...
NON_NEGATIVE_OR_EMPTY = ("SHARD_ID",)
NUMBERS = {  # name: (lowest, highest, whether the lowest itself is allowed)
    "LR": (0, None, True), "WARMUP_INIT_LR": (0, None, True), "WEIGHT_DECAY": (0, None, True),
    "DROPOUT": (0, 1, True), "LABEL_SMOOTHING": (0, 1, True), "LENPEN": (None, None, True),
    "LEN_RATIO": (0, None, False),
}
SWITCHES = ("LOWERCASE", "COMPOUND_SPLIT", "LENIENT", "SKIP_DOWNLOAD", "AGGRESSIVE_DASH", "ZH_T2S",
            "SEPARATE_VOCAB")  # 0 off, 1 on
CHOICES = {"STOP_METRIC": ("loss", "bleu"), "DECODE_CHECKPOINT": ("average", "best"), "FP16": ("auto", "0", "1"),
           "PARSER": ("treebank", "stanza"), "MODEL_SIZE": ("base", "big"), "NEWS_COMMENTARY": ("v9", "v12")}
NOT_EMPTY = ("SRC", "TGT", "WORKDIR", "MULTI30K_TEST", "SEEDS", "SYSTEMS", "TEST_SETS")
SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*$")  # a file name's part: RAW_DIR/NAME.LANG
INTEGER = re.compile(r"[0-9]+$")


def check_value(name: str, value: str, registry):
    """What is wrong with NAME=VALUE, or None."""
    if name in NOT_EMPTY and not value.strip():
        return "must not be empty"
    if name in POSITIVE or (name in POSITIVE_OR_EMPTY and value != ""):
        if not INTEGER.match(value) or int(value) < 1:
            return "must be a whole number of at least 1" + (" (or empty)" if name in POSITIVE_OR_EMPTY else "")
    if name in NON_NEGATIVE or (name in NON_NEGATIVE_OR_EMPTY and value != ""):
        if not INTEGER.match(value):
            return "must be a whole number (0 or more)"
    if name in NUMBERS:
        low, high, low_ok = NUMBERS[name]
        try:
            x = float(value)
        except ValueError:
            return "must be a number"
        if not math.isfinite(x):  # nan passes every comparison below; inf is no rate nor probability
            return "must be a finite number"
        if (low is not None and (x < low or (x == low and not low_ok))) or (high is not None and x >= high):
            bounds = [f"at least {low}" if low_ok else f"above {low}"] if low is not None else []
            return "must be " + " and ".join(bounds + ([f"below {high}"] if high is not None else []))
    if name in SWITCHES and value not in ("0", "1"):
        return "must be 0 (off) or 1 (on)"
    if name in CHOICES and value not in CHOICES[name]:
        return "must be one of " + ", ".join(CHOICES[name])
    if name == "FROM_STEP" and not (INTEGER.match(value) and 1 <= int(value) <= 9):
        return "must be a step number, 1 to 9"
    if name == "SEED" and INTEGER.match(value) and int(value) > MAX_SEED:
        return f"must be at most {MAX_SEED} (fairseq seeds numpy with it)"
    if name == "SEEDS":
        bad = [s for s in value.split() if not INTEGER.match(s)]
        if bad:
            return f"must be seed numbers separated by spaces, e.g. SEEDS=\"1 2 3\" ({bad[0]!r} is not one)"
        big = [s for s in value.split() if int(s) > MAX_SEED]
        if big:
            return f"must be seed numbers of at most {MAX_SEED} (fairseq seeds numpy with them; {big[0]!r} is not one)"
        seeds = [int(s) for s in value.split()]
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        if twice:  # the same seed twice is the same run twice: a mean and sd over copies
            return f"names seed {', '.join(map(str, twice))} more than once: each seed is one training run"
    if name == "TEST_SETS":
        names = value.split()
        bad = [n for n in names if not SPLIT_NAME.match(n) or n in ("train", "valid") or re.match(r"test\d+$", n)]
        if bad:
            return (f"must be names of test sets separated by spaces (letters, digits, - and _; not train, valid, "
                    f"or test1, test2 ..., fairseq's names of the binarized test sets): {bad[0]!r} is not one")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            return f"names {', '.join(twice)} more than once"
    if registry is not None:
        if name in ("SYSTEMS", "MULTI_SEED_SYSTEMS", "SYSTEM"):
            unknown = [s for s in value.split() if s not in registry.SYSTEMS]
            if unknown:
                return (f"names no registered system: {', '.join(unknown)} (registered: "
                        f"{', '.join(registry.SYSTEMS)}; python -m fairseq_mgsa.systems lists them)")
        if name == "ARCH_SIZE" and value not in registry.SIZES:
            return "must be one of the registry's sizes: " + ", ".join(registry.SIZES)
    return None


def check_together(settings: dict, given=(), registry=None):
    """Problems of two settings together (GIVEN: the names the user set, see --given)."""
    problems = []
    systems = settings.get("SYSTEMS", "").split()
    baseline = settings.get("BASELINE", "transformer")
    # a multi-seed system must be one of the table's; the recipe's default list may name others
    # (multi30k's: transformer mgsa_syntactic, whatever SYSTEMS is), the user's may not
    if "MULTI_SEED_SYSTEMS" in given and "SYSTEMS" in settings:
        outside = [s for s in settings.get("MULTI_SEED_SYSTEMS", "").split() if s not in systems
                   and (registry is None or s in registry.SYSTEMS)]  # an unknown name is told as such
        if outside:
            problems.append(f"MULTI_SEED_SYSTEMS='{settings['MULTI_SEED_SYSTEMS']}' names {', '.join(outside)}, not "
                            f"in SYSTEMS ({' '.join(systems)}): only the systems of SYSTEMS are trained; add "
                            f"{'them' if len(outside) > 1 else 'it'} to SYSTEMS or leave {'them' if len(outside) > 1 else 'it'} out")
    # step 09 compares with BASELINE when there are two systems or more; the default baseline
    # absent from SYSTEMS is replaced by the first system (system_steps.sh: step_compare)
    if len(systems) > 1 and baseline != "transformer" and baseline not in systems:
        problems.append(f"BASELINE='{baseline}' is not one of SYSTEMS ({' '.join(systems)}): step 09 compares every "
                        f"system with it")
    return problems


def load_registry(user_dir: str):
    """fairseq_mgsa/systems.py as a module, from USER_DIR or where Python finds the package; None if neither."""
    if not user_dir:
        found = importlib.util.find_spec("fairseq_mgsa")  # locates, does not import
        user_dir = os.path.dirname(found.origin) if found and found.origin else ""
    path = os.path.join(user_dir, "systems.py")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("mgsa_systems_registry", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--user-dir", default="", help="the fairseq_mgsa package directory (default: the one Python finds)")
    p.add_argument("--prog", default="check_settings.py", help="the name the error line starts with")
    p.add_argument("--given", default="", help="the names of the settings the user gave (space-separated)")
    a = p.parse_args(argv)
    settings = dict(item.split("=", 1) for item in sys.stdin.read().split("\0") if "=" in item)
    registry = load_registry(a.user_dir)
    problems = []
    for name, value in settings.items():
        wrong = check_value(name, value, registry)
        if wrong:
            problems.append(f"{name}='{value}' {wrong}")
    problems += check_together(settings, a.given.split(), registry)
    if problems:
        print(f"{a.prog}: error: " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
