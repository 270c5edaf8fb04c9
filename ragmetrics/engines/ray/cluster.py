"""Connecting to a Ray cluster, or starting a local one, and leaving it as found."""

from __future__ import annotations

import logging
import os
from typing import Any

from ragmetrics.errors import ConfigError

logger = logging.getLogger("ragmetrics.engines")


def import_ray() -> Any:
    """The `ray` module, or a ConfigError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "engine 'ray' needs Ray: pip install '.[ray]' in a clone of ragmetrics, or pip install 'ray[data]'"
        ) from None
    return ray


def connect(address: str | None, num_cpus: int | None) -> bool:
    """Join the cluster at `address` ('auto', 'ray://host:port') or start a local one; True when this process
    started it (and should shut it down)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {
        "ignore_reinit_error": True,
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
        # Workers import ragmetrics from wherever this process does (an editable install, a checkout).
        "runtime_env": {"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}},
    }
    if address:
        options["address"] = address
    elif num_cpus is not None:
        options["num_cpus"] = num_cpus
    ray.init(**options)
    logger.info("ray: connected (%s)", address or f"local cluster, {num_cpus or 'all'} CPUs")
    return True


def disconnect(started: bool) -> None:
    if started:
        import_ray().shutdown()
