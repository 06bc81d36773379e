"""The recurrence's Triton kernels: recurrence_cells.py (one step's cell each way, a launch per
step) and recurrence_loop.py (the whole recurrence in one persistent launch each way). Imported
only by recurrence_path.py, on first use, where Triton is.
"""
