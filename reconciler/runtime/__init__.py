"""runtime package."""
