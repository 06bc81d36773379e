"""fairseq imported without the logging set-up that its import makes.

Importing fairseq configures the process's root logger as a side effect:
fairseq/models/wav2vec/wav2vec2_classification.py calls ``logging.basicConfig(level=DEBUG)``
(a stderr handler, and from then on every library's DEBUG lines: urllib3's while stanza looks
for its models, for one), and fairseq/tasks/text_to_speech.py then logs "Please install
tensorboardX" at INFO. Every command of the project and every script importing the plugin
printed that line, and the DEBUG lines of whatever ran next.

``import_fairseq()`` imports fairseq with that one message filtered out and then gives the root
logger back the level and handlers it had before, so the process logs as its own code set it up
(the user's ``logging.basicConfig``, a command's ``main``; fairseq's own commands set up their
logging before they import fairseq, and are unchanged). The project's modules call it before
their first fairseq import: fairseq_mgsa/__init__.py, mgsa_preprocess's cli and binarize.
"""

import logging
import sys

_TTS_LOGGER = "fairseq.tasks.text_to_speech"


def _not_tensorboardx(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Please install tensorboardX")


def import_fairseq() -> None:
    if "fairseq" in sys.modules:  # imported already (fairseq's commands, or an earlier call)
        return
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    tts = logging.getLogger(_TTS_LOGGER)
    tts.addFilter(_not_tensorboardx)
    try:
        import fairseq  # noqa: F401
    finally:
        tts.removeFilter(_not_tensorboardx)
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
