"""Training performance models in PyTorch and exporting them to the engine's model format."""
