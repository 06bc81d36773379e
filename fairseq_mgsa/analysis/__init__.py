"""The paper's analyses as commands: attention maps, probing, the comparison of systems."""
