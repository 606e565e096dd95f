"""The pure core: manifest and live-state models, diff, plan, Connect's transition rules, and
the values the layers above share (`outcomes.TaskOutcome`: what a task's batch did).

The bottom layer: it imports nothing else of the package and no Kafka, Spark, YAML,
file-watching or CLI library (checked by import-linter); every other package may import it.
"""
