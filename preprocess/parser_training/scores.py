"""Labeled bracket counts and the precision, recall and F1 made of them: what both scorers
(bracket_score.py, the project's convention; evalb.py, evalb's) add up."""

from collections import Counter
from dataclasses import dataclass


@dataclass
class Scores:
    matched: int = 0
    gold: int = 0
    predicted: int = 0
    sentences: int = 0
    exact: int = 0  # sentences whose brackets all match

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def add(self, gold: Counter, predicted: Counter) -> None:
        self.matched += sum((gold & predicted).values())
        self.gold += sum(gold.values())
        self.predicted += sum(predicted.values())
        self.sentences += 1
        self.exact += gold == predicted

    def as_dict(self) -> dict:
        return {"f1": round(100 * self.f1, 2), "precision": round(100 * self.precision, 2),
                "recall": round(100 * self.recall, 2),
                "exact_match": round(100 * self.exact / max(self.sentences, 1), 2),
                "sentences": self.sentences, "gold_brackets": self.gold, "predicted_brackets": self.predicted}
