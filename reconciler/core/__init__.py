"""The pure core: manifest and live-state models, diff, plan and Connect's transition rules.

Imports no Kafka, Spark, YAML, file-watching or CLI library (checked by import-linter).
"""
