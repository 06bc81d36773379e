"""The data every system trains and decodes on: a corpus from the project's grammar, binarized
once, and one list of batches shared by all systems."""

import inspect
import itertools
import json
import logging
import os
import subprocess
import sys

logger = logging.getLogger("bench_training")


def make_data(workdir, train_sentences, test_sentences, seed, sentences_per_line=1, valid_sentences=100):
    """Synthetic corpus with gold trees -> `mgsa-preprocess` binaries (joined dictionary, phrase
    files syn1..syn3, tag dictionary). Returns (data-bin dir, summary of the phrase levels)."""
    from mgsa_preprocess.synthetic import write_corpus

    raw, data = os.path.join(workdir, "raw"), os.path.join(workdir, "data-bin")
    write_corpus(raw, (("train", train_sentences), ("valid", valid_sentences), ("test", test_sentences)), seed=seed,
                 sentences_per_line=sentences_per_line)
    proc = subprocess.run([
        sys.executable, "-m", "mgsa_preprocess.cli", "--source-lang", "src", "--target-lang", "tgt",
        "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test", "--destdir", data,
        "--joined-dictionary", "--workers", "1", "--trees-suffix", "tree", "--levels", "3", "--subword-style", "none",
        "--no-progress-bar"], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"mgsa-preprocess failed on the generated corpus:\n{proc.stderr[-3000:]}")
    with open(os.path.join(data, "mgsa_preprocess_report.json"), encoding="utf-8") as f:
        report = json.load(f)
    train = report["splits"]["train"]
    return data, {"tags": report["tags"], "train_sentences": train["sentences"],
                  "mean_phrase_tokens": [lv["mean_phrase_subwords"] for lv in train["levels"]]}


def prepare(a, chosen, workdir, device, n_batches, sized_for, test_sentences):
    """What every system trains on: (data dir, the phrase levels' summary or None for --data, the
    options all systems share, {system: its parsed training options}, the task, the first n_batches
    batches of a corpus generated for `sized_for` batches, or of --data)."""
    from fairseq_mgsa import user_dir

    if a.data:
        data, phrases = a.data, None
    else:
        n_train = a.train_sentences or train_sentences(sized_for, a.max_tokens, a.sentences_per_line)
        logger.info("generating %d training sentences and binarizing them in %s", n_train, workdir)
        data, phrases = make_data(workdir, n_train, test_sentences, a.seed, a.sentences_per_line)
    common = common_args(a, data, user_dir.path())  # the imported package: fairseq must not import a second copy
    all_args = {s.name: parse(common + s.train_args(a.arch_size)) for s in chosen}
    task, batches = build_batches(parse(batch_argv(a, common)), n_batches, device)
    return data, phrases, common, all_args, task, batches


def batch_argv(a, common):
    """The options of the task that makes the batches (any architecture and criterion will do)."""
    return common + ["--task", a.task, "--arch", "transformer", "--criterion", "label_smoothed_cross_entropy"]


def train_sentences(n_batches, max_tokens, sentences_per_line=1):
    """The generated training set's size: enough for n_batches of max_tokens, about max_tokens / 12
    sentences a batch (short sentences, padding, a multiple of 8), at least 2,000."""
    words = 11 * sentences_per_line + 1  # tokens per line, about
    return min(400_000, max(2000, int(n_batches * max_tokens / words * 1.2)))


def common_args(a, data, user_dir):
    """What every system shares: data, training hyper-parameters, batch and seed."""
    return [data, "--user-dir", user_dir, "--share-all-embeddings", "--label-smoothing", "0.1",
            "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", str(a.lr),
            "--max-tokens", str(a.max_tokens), "--seed", str(a.seed)]


def parse(argv):
    from fairseq import options
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, input_args=argv)


def build_batches(args, n, device):
    """The task of `args` with its test split loaded, and the first n batches of one shuffled
    training epoch (cycled if the epoch is shorter), on the device."""
    from fairseq import tasks, utils
    task = tasks.setup_task(args)
    task.load_dataset(args.train_subset, combine=False, epoch=1)
    dataset = task.dataset(args.train_subset)
    itr = task.get_batch_iterator(
        dataset=dataset, max_tokens=args.max_tokens, max_sentences=None,
        max_positions=utils.resolve_max_positions(task.max_positions(), (1024, 1024)),  # model defaults
        ignore_invalid_inputs=True, required_batch_size_multiple=8, seed=args.seed, num_workers=0,
        epoch=1).next_epoch_itr(shuffle=True)
    epoch = list(itertools.islice(itr, n))
    if len(epoch) < n:
        logger.warning("the training set gives %d batches, %d needed: cycling them", len(epoch), n)
    batches = [utils.move_to_cuda(b, device) if device.type == "cuda" else b
               for b in itertools.islice(itertools.cycle(epoch), n)]
    return task, batches


def mean_target_tokens(task, split="test"):
    """Mean target length of a split in tokens, end-of-sentence included."""
    task.load_dataset(split, combine=False, epoch=1)
    dataset = task.dataset(split)
    sizes = [dataset.size(i)[1] for i in range(len(dataset))]  # (source, target) tokens
    return sum(sizes) / len(sizes), len(sizes)


def model_batches(model, batches):
    """The batches as `model` takes them: net_input keys its forward has no parameter for
    (fairseq's TransformerModel.forward has no **kwargs, so no phrase fields) are left out, in
    views sharing the tensors. Returns (batches, names of the keys left out)."""
    params = inspect.signature(model.forward).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return batches, []
    dropped = sorted({k for b in batches for k in b["net_input"] if k not in params})
    if not dropped:
        return batches, []
    return [{**b, "net_input": {k: v for k, v in b["net_input"].items() if k in params}} for b in batches], dropped


def count_tokens(batch, pad):
    """Source + target non-pad tokens."""
    return int(batch["net_input"]["src_tokens"].ne(pad).sum()) + int(batch["target"].ne(pad).sum())


def sentences_in(batches):
    return sum(int(b["nsentences"]) for b in batches)

