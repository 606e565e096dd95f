"""The pure core: manifest and live-state models, diff, plan and Connect's transition rules.

The bottom layer: it imports nothing else of the package and no Kafka, Spark, YAML,
file-watching or CLI library (checked by import-linter); every other package may import it.
"""
