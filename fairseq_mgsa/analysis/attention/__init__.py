"""`mgsa-attention`: attention maps of trained checkpoints (cli.py; docs/analyses.md)."""
