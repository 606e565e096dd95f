"""manifests package."""
