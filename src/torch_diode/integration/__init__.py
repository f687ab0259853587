"""Diode inside torch.compile: the choice handler and its installation."""
