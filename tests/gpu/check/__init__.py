"""The GPU check's phases as tests (marker gpu), run phase by phase by scripts/gpu_check.sh
(`make gpu-check`, docs/gpu.md): each test writes what it measured to OUT/results.jsonl as it ends
(records.py); summary.py reports it."""
