"""Tests of kangaroo_wbc.estimation (mirror the package)."""
