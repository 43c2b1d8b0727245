"""Accelerators and links: the shipped catalog and users' extensions."""

from trainsizer.hardware.catalog import Accelerator, Catalog, Link, default_catalog, load_catalog

__all__ = ["Accelerator", "Catalog", "Link", "default_catalog", "load_catalog"]
