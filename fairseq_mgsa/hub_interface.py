"""Decoding syntactic MG-SA models from Python: fairseq's hub interface plus the phrases.

    from fairseq_mgsa import MGSATransformerModel
    mgsa = MGSATransformerModel.from_pretrained("checkpoints", "checkpoint_best.pt", "data-bin",
                                                bpe="subword_nmt", bpe_codes="codes")
    mgsa.translate("Anna saw the dog with a telescope .")          # parsed with stanza (--parser-lang ...)
    mgsa.translate(["(ROOT (S ...))"], source_input="trees")        # or given trees

fairseq's GeneratorHubInterface encodes each sentence to tokens before the task sees
it, so a syntactic model could not get its phrases there: this subclass hands the
sentences to the task (as fairseq-interactive does), which parses or reads them,
applies the interface's tokenizer and BPE, and keeps each sentence's phrases with it
through fairseq's batching. Models without syntactic heads decode as in fairseq.
"""

from typing import List, Optional, Union

from fairseq.hub_utils import GeneratorHubInterface


class MGSAHubInterface(GeneratorHubInterface):
    def sample(self, sentences: Union[str, List[str]], beam: int = 1, verbose: bool = False,
               source_input: Optional[str] = None, **kwargs):
        """source_input: 'text' (parsed by the task's parser) or 'trees' (one bracketed tree
        per sentence); default: the task's --source-input."""
        if isinstance(sentences, str):
            return self.sample([sentences], beam=beam, verbose=verbose, source_input=source_input, **kwargs)[0]
        if not self.task.required_levels:
            return super().sample(sentences, beam=beam, verbose=verbose, **kwargs)
        tokens = self.task.annotate(sentences, tokenizer=self.tokenizer, bpe=self.bpe, source_input=source_input)
        batched_hypos = self.generate(tokens, beam, verbose, **kwargs)
        return [self.decode(hypos[0]["tokens"]) for hypos in batched_hypos]
