"""torch-diode."""
