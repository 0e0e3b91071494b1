"""Figures of the report pages, one module per page (style.py: what they share)."""
