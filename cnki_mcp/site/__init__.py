"""site package."""
