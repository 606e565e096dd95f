# Static deployment: the manifests are the only input (KIP-304's read-only idea).
#   docker build -t connect-reconciler .
#   docker run -e RECONCILER_BOOTSTRAP_SERVERS=kafka:9092 -v $PWD/manifests:/manifests:ro connect-reconciler
FROM python:3.11-slim-bookworm

# Spark needs a JRE (17 in bookworm); procps gives Spark's scripts `ps`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends default-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/default-java \
    PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/usr/local/bin/python \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python

WORKDIR /opt/reconciler
COPY pyproject.toml README.md ./
COPY reconciler ./reconciler
RUN pip install --no-cache-dir ".[spark]"

COPY manifests /manifests
RUN useradd --uid 10001 --create-home reconciler && mkdir -p /data && chown reconciler /data
USER 10001
WORKDIR /home/reconciler

ENTRYPOINT ["reconciler"]
CMD ["watch", "/manifests"]
