"""Model architectures, parameter counts and the preset catalog."""

from trainsizer.models.architecture import Architecture, architecture_from_config
from trainsizer.models.catalog import model_ids, resolve_model
from trainsizer.models.param_counts import ParamCounts, count_params

__all__ = ["Architecture", "ParamCounts", "architecture_from_config", "count_params", "model_ids",
           "resolve_model"]
