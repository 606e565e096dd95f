# The reconciler as a container (static deployments, KIP-304's read-only idea): the manifests
# are the only input, mounted at /manifests (a ConfigMap on Kubernetes: examples/kubernetes/).
#   docker build -t connect-reconciler .
#   docker run -v "$PWD/manifests:/manifests:ro" -e RECONCILER_BOOTSTRAP_SERVERS=kafka:9092 -p 8083:8083 connect-reconciler
# The image holds no manifests: without a mount the entrypoint says what to mount and exits 64.
FROM python:3.11-slim-bookworm

# Spark needs a JRE (17 in bookworm); procps gives Spark's scripts `ps`; tini runs as PID 1:
# it forwards SIGTERM to the reconciler (only to it: the reconciler stops Spark itself, after
# the batch) and reaps the zombies Spark's Python workers leave.
RUN apt-get update \
 && apt-get install -y --no-install-recommends default-jre-headless procps tini \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/default-java \
    PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/usr/local/bin/python \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python \
    RECONCILER_MANIFESTS=/manifests \
    RECONCILER_SPARK_CDS_DIR=/opt/reconciler/spark-cds

WORKDIR /opt/reconciler
COPY pyproject.toml README.md ./
COPY reconciler ./reconciler
RUN pip install --no-cache-dir ".[spark]"
# Spark's classes as one class-data-sharing archive for the driver's JVM (runtime/spark/cds.py):
# a session starts in about half the time (~140 MB). Built with the image's own Java and jars,
# which it must match, into RECONCILER_SPARK_CDS_DIR: outside the home directory's cache, which
# a deployment may mount a volume over (examples/kubernetes/), and readable by any user.
RUN python -m reconciler.runtime.spark.cds_build
COPY docker/entrypoint.sh docker/healthcheck.py /usr/local/lib/connect-reconciler/

RUN useradd --uid 10001 --create-home reconciler && mkdir -p /data && chown reconciler /data
USER 10001
WORKDIR /home/reconciler

# The read-only REST API, health and metrics. Inside the image it listens on every interface
# (outside, it defaults to 127.0.0.1); Kubernetes probes /healthz and /readyz here.
EXPOSE 8083
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/usr/local/lib/connect-reconciler/healthcheck.py"]

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/lib/connect-reconciler/entrypoint.sh"]
CMD ["watch", "/manifests", "--http-bind", "0.0.0.0:8083"]
