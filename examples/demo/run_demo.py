"""The main job, offline on CPU: baseline Transformer vs n-gram MG-SA on a generated corpus.

Generates a parallel corpus from the project's grammar (preprocess/synthetic.py),
binarizes it with fairseq-preprocess, trains fairseq's `transformer` and
`mgsa_transformer` (n-gram granularities, SAN composition, layer 1) with the same
small dimensions and update budget, decodes the test set with fairseq-generate and
scores it with sacrebleu. Every step is the real command a user would run.

    python examples/demo/run_demo.py [--workdir DIR] [--max-update N]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import sacrebleu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from preprocess.synthetic import write_corpus  # noqa: E402

USER_DIR = os.path.join(ROOT, "fairseq_mgsa")
SMALL = [  # the same small dimensions for every model
    "--encoder-layers", "3", "--decoder-layers", "3",
    "--encoder-embed-dim", "128", "--decoder-embed-dim", "128",
    "--encoder-ffn-embed-dim", "256", "--decoder-ffn-embed-dim", "256",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--share-all-embeddings",
]
MODELS = {
    "transformer": ["--arch", "transformer"],
    "mgsa_ngram": ["--arch", "mgsa_transformer", "--mgsa-granularities", "word,ngram2,ngram3,ngram4"],
}


def run(cmd, log):
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}), see {log}:\n  {' '.join(cmd)}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workdir", default="work/demo")
    p.add_argument("--train-size", type=int, default=3000)
    p.add_argument("--max-update", type=int, default=800)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    os.makedirs(a.workdir, exist_ok=True)
    raw, data = os.path.join(a.workdir, "raw"), os.path.join(a.workdir, "data-bin")

    print(f"[demo] corpus: {a.train_size} training sentences from the project's grammar -> {raw}", flush=True)
    write_corpus(raw, (("train", a.train_size), ("valid", 200), ("test", 300)), seed=a.seed)
    run(["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", f"{raw}/train", "--validpref", f"{raw}/valid", "--testpref", f"{raw}/test",
         "--destdir", data, "--joined-dictionary", "--workers", "2"], os.path.join(a.workdir, "preprocess.log"))

    results = {}
    for name, args in MODELS.items():
        save = os.path.join(a.workdir, "checkpoints", name)
        t0 = time.time()
        print(f"[demo] training {name} for {a.max_update} updates ...", flush=True)
        run(["fairseq-train", data, "--user-dir", USER_DIR, *args, *SMALL,
             "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "1e-3",
             "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200",
             "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
             "--dropout", "0.1", "--max-tokens", "2048", "--max-update", str(a.max_update),
             "--seed", str(a.seed), "--save-dir", save, "--no-epoch-checkpoints",
             "--no-progress-bar", "--log-interval", "50", "--cpu"], os.path.join(a.workdir, f"train.{name}.log"))
        out = os.path.join(a.workdir, f"generate.{name}.txt")
        run(["fairseq-generate", data, "--user-dir", USER_DIR, "--path", f"{save}/checkpoint_best.pt",
             "--gen-subset", "test", "--beam", "4", "--max-tokens", "4096", "--cpu"], out)
        hyps, refs = read_generate(out)
        bleu = sacrebleu.corpus_bleu(hyps, [refs])
        results[name] = {"bleu": round(bleu.score, 2), "sentences": len(hyps),
                         "minutes": round((time.time() - t0) / 60, 1)}
        print(f"[demo] {name}: BLEU {bleu.score:.2f} on {len(hyps)} test sentences", flush=True)

    print(json.dumps(results, indent=2))
    with open(os.path.join(a.workdir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)


def read_generate(path):
    """Hypotheses and references from fairseq-generate output, in the test set's order."""
    hyps, refs = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("H-"):
                i, _, text = line.rstrip("\n").split("\t")
                hyps[int(i[2:])] = text
            elif line.startswith("T-"):
                i, text = line.rstrip("\n").split("\t")
                refs[int(i[2:])] = text
    ids = sorted(refs)
    return [hyps[i] for i in ids], [refs[i] for i in ids]


if __name__ == "__main__":
    main()
