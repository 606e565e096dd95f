"""Secret masking: one rule for every output (docs/secrets.md).

A config value is *sensitive* when
- its key looks secret (`password`, `secret`, `token`, `credentials`, `jaas`, `user.info`, a
  `key` segment such as `ssl.key.password` or `api.key`; not Connect's `key.converter*`), or
- its key is in the connector's sensitive set: `spec.sensitive`, plus every key whose value came
  from a `${provider:…}` placeholder (recorded in Kafka, so commands without manifests know), or
- the value itself holds a placeholder (`${file:…}`, `${vault:…}`: kept verbatim for the worker).
A sensitive value is shown as `(sensitive)`. Any other value is shown with the credentials in it
masked: the password of URL userinfo (`scheme://user:****@host`), of Oracle's `user/pw@host`,
and credential parameters (`?password=****`, `;password=****`).

Free text (error messages, traces, logs) cannot be masked by key: `scrub` replaces every known
secret value in it (`secret_values` of the configs involved) and masks URL credentials.

Snapshots are meant to be stored, yet `plan --live-state` must still tell a changed secret
from an unchanged one: there a sensitive value becomes a `seal`, a salted PBKDF2 digest that
`seal_matches` a candidate value and cannot be read back. Terraform and gitops-engine mask
before rendering; so do we. A changed secret is shown as changed, never its old or new value.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
from collections.abc import Collection, Iterable, Mapping

MASK = "(sensitive)"
URL_MASK = "****"
# Free-text scrubbing skips shorter values: replacing every "abc" would garble messages while
# hiding nothing a guess would not find. Such values are still masked wherever shown by key.
MIN_SCRUB_LENGTH = 4

# A dotted segment that names a credential: `db.password`, `sasl.jaas.config`,
# `aws.secret.access.key`, `api.token`, `ssl.key.password`, `private.key`, `google.credentials`.
_SECRET_SEGMENT = re.compile(r"password|passwd|pwd|secret|token|credential|jaas|apikey|privatekey|userinfo")
# Connect's own non-secret `key.*` settings (the record-key converter), which share the word.
_NOT_SECRET_PREFIXES = ("key.converter", "key.ignore", "key.serializer", "key.deserializer")
# A credential a value carries inside itself (group 2 is the secret). URL-shaped ones, masked in
# free text too:
_URL_SECRETS = (
    # URL userinfo: scheme://user:password@host (mongodb://, postgresql://, jdbc:mysql://…)
    re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:?#]*:)([^\s/@?#]+)(@)"),
    # Oracle's thin URL: jdbc:oracle:thin:user/password@host
    re.compile(r"(jdbc:oracle:[a-z]+:[^\s/@:]+/)([^\s@]+)(@)", re.IGNORECASE),
)
# …and parameters, in config values only (in prose, `PASSWORD=…` is more often an instruction):
# ?password=…, &sslpassword=…, ;password=… (JDBC, SQL Server), JAAS's password="…".
_VALUE_SECRETS = (
    *_URL_SECRETS,
    re.compile(
        r"((?:^|[?&;:,\s])[\w.\-]*(?:password|passwd|pwd|secret|token|apikey|api_key|credential)[\w.\-]*\s*=\s*\"?)"
        r"([^\s&;\"]+)(\"?)",
        re.IGNORECASE,
    ),
)
# Connect's ConfigTransformer.DEFAULT_PATTERN: `${provider:[path:]key}`.
PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")

# Seals: PBKDF2-HMAC-SHA256, slow on purpose (a stolen snapshot must not be cheap to guess
# against); 20,000 rounds take ~10 ms, paid once per distinct value and salt.
SEAL_PREFIX = "(sensitive pbkdf2-sha256$"
SEAL_ROUNDS = 20_000


@functools.lru_cache(maxsize=65_536)
def _key_rule(key: str) -> tuple[bool, bool]:
    """(masked, strong): `strong` keys hold a credential itself (scrubbed from free text too);
    a `key` segment elsewhere (`primary.key.mode`, `transforms.x.key.field`) is masked to be
    safe, but its value (a field name) is not hunted for in messages."""
    lowered = key.lower()
    if lowered.startswith(_NOT_SECRET_PREFIXES):
        return False, False
    segments = lowered.replace("_", ".").replace("-", ".").split(".")
    joined = ".".join(segments)
    if any(_SECRET_SEGMENT.search(segment) for segment in segments) or "user.info" in joined:
        return True, True
    if "key" in segments:
        return True, segments[-1] == "key"  # `api.key`, `private.key`, `access.key`
    return False, False


def is_secret_key(key: str, sensitive: Collection[str] = ()) -> bool:
    """True when `key` looks secret or is in the connector's sensitive set."""
    return key in sensitive or _key_rule(key)[0]


def has_placeholder(value: str | None) -> bool:
    return value is not None and "${" in value and PLACEHOLDER.search(value) is not None


def is_sensitive(key: str, value: str | None, sensitive: Collection[str] = ()) -> bool:
    """The whole value is masked (by its key, the sensitive set, or a placeholder in it)."""
    return is_secret_key(key, sensitive) or has_placeholder(value) or is_seal(value)


def mask_credentials(text: str, *, parameters: bool = True) -> str:
    """`text` with the credentials written inside it masked: URL userinfo, and with
    `parameters`, `password=…`-style parameters."""
    if not _may_hold_credentials(text):
        return text
    for pattern in _VALUE_SECRETS if parameters else _URL_SECRETS:
        text = pattern.sub(lambda m: f"{m.group(1)}{URL_MASK}{m.group(3)}", text)
    return text


def _may_hold_credentials(text: str) -> bool:
    return "@" in text or "=" in text


def mask_value(key: str, value: str | None, sensitive: Collection[str] = ()) -> str | None:
    """The value as it may be displayed."""
    if value is None:
        return None
    if is_sensitive(key, value, sensitive):
        return MASK
    return mask_credentials(value)


def mask_config(config: Mapping[str, str | None], sensitive: Collection[str] = ()) -> dict[str, str | None]:
    return {key: mask_value(key, value, sensitive) for key, value in config.items()}


# --- free text ------------------------------------------------------------------------------------


def secret_values(config: Mapping[str, str | None], sensitive: Collection[str] = ()) -> set[str]:
    """The values to hunt for in free text: whole values of credential keys, of the sensitive
    set and of placeholders, and the credentials written inside any other value."""
    found: set[str] = set()
    for key, value in config.items():
        if not value:
            continue
        if key in sensitive or _key_rule(key)[1] or has_placeholder(value):
            found.add(value)
            found.add(value.strip())
        if _may_hold_credentials(value):
            found.update(match.group(2) for pattern in _VALUE_SECRETS for match in pattern.finditer(value))
    return {value for value in found if len(value) >= MIN_SCRUB_LENGTH and value != MASK}


def scrub(text: str, values: Iterable[str]) -> str:
    """`text` with every value in `values` replaced by the mask and URL credentials masked."""
    pattern = scrub_pattern(frozenset(values))
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return mask_credentials(text, parameters=False)


@functools.lru_cache(maxsize=256)
def scrub_pattern(values: frozenset[str]) -> re.Pattern[str] | None:
    """One alternation, longest first (a secret containing another is masked whole)."""
    usable = sorted((v for v in values if len(v) >= MIN_SCRUB_LENGTH), key=lambda v: (-len(v), v))
    return re.compile("|".join(map(re.escape, usable))) if usable else None


# --- seals (snapshots) ----------------------------------------------------------------------------


def is_seal(value: str | None) -> bool:
    return value is not None and value.startswith(SEAL_PREFIX)


def seal(value: str, salt: bytes) -> str:
    """`(sensitive pbkdf2-sha256$<rounds>$<salt>$<digest>)`: comparable, not reversible."""
    digest = _pbkdf2(value.strip(), salt, SEAL_ROUNDS)
    return f"{SEAL_PREFIX}{SEAL_ROUNDS}${_b64(salt)}${_b64(digest)})"


def seal_matches(sealed: str, candidate: str) -> bool:
    """Whether `candidate` is the value `sealed` was made from (False for a malformed seal)."""
    try:
        rounds_text, salt_text, digest_text = sealed[len(SEAL_PREFIX) : -1].split("$")
        rounds, salt, digest = int(rounds_text), _unb64(salt_text), _unb64(digest_text)
    except ValueError:
        return False
    if not 1 <= rounds <= 10 * SEAL_ROUNDS:
        return False  # a hand-edited file must not make a plan spin for minutes
    return hmac.compare_digest(_pbkdf2(candidate.strip(), salt, rounds), digest)


def seal_config(config: Mapping[str, str | None], sensitive: Collection[str], salt: bytes) -> dict[str, str | None]:
    """The config as a snapshot stores it: every value `mask_value` would change, sealed."""
    sealed: dict[str, str | None] = {}
    for key, value in config.items():
        if value is not None and not is_seal(value) and mask_value(key, value, sensitive) != value:
            value = seal(value, salt)
        sealed[key] = value
    return sealed


def slow_digest(raw: bytes, label: bytes) -> str:
    """A hex digest of `raw` (which may hold secrets) that costs a guesser as much as a seal."""
    return _pbkdf2_bytes(hashlib.sha256(raw).digest(), label, SEAL_ROUNDS).hex()


@functools.lru_cache(maxsize=4096)
def _pbkdf2(value: str, salt: bytes, rounds: int) -> bytes:
    return _pbkdf2_bytes(value.encode("utf-8", "surrogatepass"), salt, rounds)


def _pbkdf2_bytes(secret: bytes, salt: bytes, rounds: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", secret, salt, rounds)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from exc
