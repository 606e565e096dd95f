"""Secret masking: applied to every value before anything is displayed or serialised.

Terraform and gitops-engine mask before rendering; so do we. A changed secret is shown as
changed, never its old or new value.
"""

from __future__ import annotations

import re
from collections.abc import Collection

MASK = "(sensitive)"

# A dotted segment that names a credential: `db.password`, `sasl.jaas.config`-style secrets,
# `aws.secret.access.key`, `api.token`, `ssl.key.password`, `private.key`.
_SECRET_SEGMENT = re.compile(r"password|passwd|secret|token|credential|jaas|apikey|privatekey")
# Connect's own non-secret `key.*` settings (the record-key converter), which share the word.
_NOT_SECRET_PREFIXES = ("key.converter", "key.ignore", "key.serializer", "key.deserializer")


def is_secret_key(key: str, sensitive: Collection[str] = ()) -> bool:
    """True when `key` looks secret (docs/product-rules.md#secrets) or is listed in `spec.sensitive`."""
    if key in sensitive:
        return True
    lowered = key.lower()
    if lowered.startswith(_NOT_SECRET_PREFIXES):
        return False
    segments = lowered.replace("_", ".").replace("-", ".").split(".")
    if any(_SECRET_SEGMENT.search(segment) for segment in segments):
        return True
    return "key" in segments


def mask_value(key: str, value: str | None, sensitive: Collection[str] = ()) -> str | None:
    """The value as it may be displayed."""
    if value is None or not is_secret_key(key, sensitive):
        return value
    return MASK


def mask_config(config: dict[str, str | None], sensitive: Collection[str] = ()) -> dict[str, str | None]:
    return {key: mask_value(key, value, sensitive) for key, value in config.items()}
