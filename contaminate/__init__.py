"""The lab: contaminate a model on purpose, then run the detector on contaminated and clean checkpoints."""

from omegaconf import OmegaConf

# conf/contaminate/full.yaml: `epochs: ${lab.if_null:${.exposures},5}`: 5 epochs unless exposures are counted
OmegaConf.register_new_resolver("lab.if_null", lambda value, default: default if value is None else None,
                                replace=True)
