"""The GPU check (scripts/gpu_check.sh): every registered system trained and decoded by fairseq in
half precision, the model invariants on the device, and the training benchmark; phase by phase,
each phase's results written as it ends (records.py)."""
