"""The lab: contaminate a model on purpose, then run the detector on contaminated and clean checkpoints."""
