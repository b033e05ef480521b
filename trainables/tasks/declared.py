"""The built-in tasks, each declared once by name: its settings, what it reports and where its
code is.

The code (`"module:Qualname"`) is imported when a trial first builds the task, so a spec is
validated, its objective checked and `sweeper tasks` listed without importing torch.
`reads_files` marks the tasks whose data a launch checks first.
"""

from __future__ import annotations

from trainables.registry import declare_task
from trainables.tasks.settings import (
    AddingSettings,
    BabiSettings,
    DenoiseSettings,
    ParenthesisSettings,
    PtbCharSettings,
    PtbWordSettings,
    ShortestPathSettings,
    SymbolSettings,
    TimitSettings,
    WikiText2Settings,
)

RECALL_METRICS = ("valid_loss", "valid_accuracy_all_steps", "valid_accuracy_answer_steps")
ACCURACY_METRICS = ("valid_loss", "valid_accuracy")

declare_task(
    "copying",
    SymbolSettings,
    "trainables.tasks.synthetic:Copying",
    description="copying memory: recall 10 symbols after a delay T; CE, baseline 10 ln 8/(T+20)",
    metrics=RECALL_METRICS,
)
declare_task(
    "denoise",
    DenoiseSettings,
    "trainables.tasks.synthetic:Denoise",
    description="denoise: output 10 symbols scattered in T noise steps after a marker; CE, baseline 10 ln 9/(T+20)",
    metrics=RECALL_METRICS,
)
declare_task(
    "parenthesis",
    ParenthesisSettings,
    "trainables.tasks.synthetic:Parenthesis",
    description="parenthesis: count unmatched parentheses per type at every step; "
    "variant goru (10 types, CE) or isan (3 types, MSE)",
    metrics=ACCURACY_METRICS,
)
declare_task(
    "adding",
    AddingSettings,
    "trainables.tasks.synthetic:Adding",
    description="adding problem: sum the two marked values; MSE, baseline 0.167",
)
declare_task(
    "shortest_path",
    ShortestPathSettings,
    "trainables.tasks.shortest_path:ShortestPath",
    description="algorithmic task (GGS-NN shortest path): read a serialized random graph, "
    "emit the unique shortest path; whole-path accuracy",
    objective="valid_accuracy",
    mode="max",
    metrics=ACCURACY_METRICS,
)
declare_task(
    "babi",
    BabiSettings,
    "trainables.tasks.babi:Babi",
    description="bAbI QA v1.2 tasks 1-20 (1k or 10k) with the three-RNN reader; accuracy per task and mean",
    objective="valid_accuracy",
    mode="max",
    metrics=ACCURACY_METRICS,
    reads_files=True,
)
declare_task(
    "ptb_char",
    PtbCharSettings,
    "trainables.tasks.language:PtbChar",
    description="Penn Treebank characters (ptb.char.*.txt); bits per character, carried state",
    objective="valid_bpc",
    metrics=("valid_loss", "valid_bpc"),
    reads_files=True,
)
declare_task(
    "ptb_word",
    PtbWordSettings,
    "trainables.tasks.language:PtbWord",
    description="Penn Treebank words (ptb.*.txt); perplexity, carried state, NC-GRU dropouts",
    objective="valid_ppl",
    metrics=("valid_loss", "valid_ppl"),
    reads_files=True,
)
declare_task(
    "wikitext2",
    WikiText2Settings,
    "trainables.tasks.language:WikiText2",
    description="WikiText-2 (wiki.*.tokens); perplexity, carried state",
    objective="valid_ppl",
    metrics=("valid_loss", "valid_ppl"),
    reads_files=True,
)
declare_task(
    "timit",
    TimitSettings,
    "trainables.tasks.speech:Timit",
    description="TIMIT speech spectra (local .wav only, licensed): predict the next STFT log-magnitude frame; MSE",
    reads_files=True,
)
