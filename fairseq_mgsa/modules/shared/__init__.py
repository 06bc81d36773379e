"""What several methods' modules use: the per-batch mask cache that the layers of a PBA or HySAN
model share.
"""
