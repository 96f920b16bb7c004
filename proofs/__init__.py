"""Machine-checked arguments that are not plain model runs (see README.md here)."""
