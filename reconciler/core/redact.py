"""Secret masking: one rule for every output (docs/secrets.md).

A config value is *sensitive* when
- its key looks secret (`password`, `secret`, `token`, `credentials`, `jaas`, `user.info`, a
  `key` segment such as `ssl.key.password` or `api.key`; not Connect's `key.converter*`, nor
  a bare `key`), or
- its key is in the connector's sensitive set: `spec.sensitive`, plus every key whose value came
  from a `${provider:…}` placeholder (recorded in Kafka, so commands without manifests know), or
- the value itself holds a placeholder (`${file:…}`, `${vault:…}`: kept verbatim for the worker).
A sensitive value is shown as `(sensitive)`. Any other value is shown with the credentials in it
masked: the password of URL userinfo (`scheme://user:****@host`), of Oracle's `user/pw@host`,
and credential parameters (`?password=****`, `;password=****`).

Free text (error messages, traces, logs) cannot be masked by key: `scrub` replaces every known
secret value in it (`secret_values` of the configs involved) and masks URL credentials.

Snapshots are meant to be stored, yet `plan --live-state` must still tell a changed secret
from an unchanged one: there a sensitive value becomes a `seal`, an HMAC-SHA256 of it under a
random per-snapshot salt, which `seal_matches` a candidate value and cannot be read back. A
seal is fast on purpose (10,000 secrets are compared in milliseconds), so a guess can be
checked against it as fast: a weak password is not safe in a leaked snapshot (docs/secrets.md).
Terraform and gitops-engine mask before rendering; so do we. A changed secret is shown as
changed, never its old or new value.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
from collections.abc import Collection, Iterable, Mapping
from itertools import chain
from operator import methodcaller

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

SEAL_PREFIX = "(sensitive hmac-sha256$"
_VALUES = methodcaller("values")
# Digests of whole documents that may hold secrets (a saved plan's fingerprints) are slow on
# purpose: one per plan, and guessing a secret against them costs as much per guess.
SLOW_DIGEST_ROUNDS = 20_000


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
    if "key" in segments and len(segments) > 1:
        return True, segments[-1] == "key"  # `api.key`, `private.key`, `access.key`
    # A bare `key` names a setting about record keys (file-source's `key: location|none`), as
    # Connect's `key.*` do; taking it for a credential masked it and scrubbed its value ("none")
    # from every message.
    return False, False


def is_secret_key(key: str, sensitive: Collection[str] = ()) -> bool:
    """True when `key` looks secret or is in the connector's sensitive set."""
    return key in sensitive or _key_rule(key)[0]


def has_placeholder(value: str | None) -> bool:
    return value is not None and "${" in value and PLACEHOLDER.search(value) is not None


# The last segment of a credential-sounding key that names something about a credential, not
# the credential itself: `sasl.oauthbearer.token.endpoint.url`, `gcs.credentials.path`,
# `aws.credentials.provider.class`. Masked like any such key, but no literal secret.
_ABOUT_A_SECRET = frozenset(
    ("url", "uri", "endpoint", "location", "path", "file", "dir", "class", "type", "mechanism", "provider",
     "enable", "enabled", "algorithm", "mode", "name", "field", "format", "prefix", "ms", "seconds")
)
_BOOLEAN_TEXT = frozenset(("true", "false"))


def literal_secret(key: str, value: str | None) -> str | None:
    """Why `value` is a secret written in clear, which a manifest in git should hold as a
    placeholder instead: "key" (its key holds a credential), "inside" (a credential is written
    inside it: URL userinfo, a `password=` parameter); None otherwise. A value holding a
    placeholder is judged without it: `postgresql://app:${env:PW}@db` is no literal secret."""
    if not value or not value.strip():
        return None
    if _key_rule(key)[1] and not _about_a_secret(key):  # not `primary.key.mode`: masked to be safe only
        return None if has_placeholder(value) or value.strip().lower() in _BOOLEAN_TEXT else "key"
    if not _may_hold_credentials(value):
        return None  # the common case: no `@`, no `=`
    bare = PLACEHOLDER.sub("", value) if "${" in value else value
    return "inside" if any(pattern.search(bare) for pattern in _VALUE_SECRETS) else None


def literal_secrets(config: Mapping[str, str | None]) -> list[tuple[str, str]]:
    """(key, `literal_secret`'s reason) for each value of `config` that is a secret in clear, in
    order. Decided per config for the common case (no credential key, no `@` or `=` in any
    value: one scan), as `secret_values` is: every manifest is checked when it is loaded."""
    _, strong = _rules_for(tuple(config))
    suspect = _suspect(config)
    if not strong and not suspect:
        return []
    keys = config if suspect else [key for key in config if key in strong]
    return [(key, why) for key in keys if (why := literal_secret(key, config[key])) is not None]


@functools.lru_cache(maxsize=4096)
def _about_a_secret(key: str) -> bool:
    return key.lower().replace("_", ".").replace("-", ".").rsplit(".", 1)[-1] in _ABOUT_A_SECRET


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
    _, strong = _rules_for(tuple(config))
    listed = [key for key in sensitive if key in config] if sensitive else []
    if not strong and not listed and not _suspect(config):
        return set()  # the common case, decided without a look at each value
    found: set[str] = set()
    for key, value in config.items():
        if not value:
            continue
        if key in strong or key in listed or has_placeholder(value):
            found.add(value)
            found.add(value.strip())
        if _may_hold_credentials(value):
            found.update(match.group(2) for pattern in _VALUE_SECRETS for match in pattern.finditer(value))
    return {value for value in found if len(value) >= MIN_SCRUB_LENGTH and value != MASK and not is_seal(value)}


def secret_values_of_all(configs: Iterable[Mapping[str, str | None]]) -> set[str]:
    """`secret_values` of many configs that have no sensitive set of their own.

    The common case, no credential key among them all and no value that may hold a placeholder,
    a seal or a credential, is decided in one C-level scan of every value at once instead of one
    per config (the live state's 30,000 configs of bench/state_read.py: 16 ms, against 39 ms
    one config at a time).
    """
    configs = list(configs)
    keys: set[str] = set().union(*configs)
    if any(_key_rule(key)[1] for key in keys) or _suspect_values(chain.from_iterable(map(_VALUES, configs))):
        return {value for config in configs for value in secret_values(config)}
    return set()


def nothing_to_seal(configs: Iterable[Mapping[str, str | None]]) -> bool:
    """Whether `seal_config` (with no sensitive set) returns every one of `configs` as it is,
    decided in one scan of them all (a snapshot's 30,000 configs in bench/state_read.py)."""
    configs = list(configs)
    keys: set[str] = set().union(*configs)
    return not any(_key_rule(key)[0] for key in keys) and not _suspect_values(chain.from_iterable(map(_VALUES, configs)))


@functools.lru_cache(maxsize=4096)
def _rules_for(keys: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """(masked keys, strong keys) among a config's keys. Configs at scale share their key sets
    (10,000 connectors of a few kinds), so this is one lookup per config, not one per key."""
    rules = {key: _key_rule(key) for key in keys}
    return frozenset(k for k, (masked, _) in rules.items() if masked), frozenset(k for k, (_, strong) in rules.items() if strong)


def _suspect(config: Mapping[str, str | None]) -> bool:
    """Whether any value may hold a placeholder, a seal or a credential (one scan of them all)."""
    return _suspect_values(config.values())


def _suspect_values(values: Iterable[str | None]) -> bool:
    blob = "\n".join(filter(None, values))
    return "${" in blob or "@" in blob or "=" in blob or SEAL_PREFIX in blob


def scrub(text: str, values: Iterable[str]) -> str:
    """`text` with every value in `values` replaced by the mask and URL credentials masked.

    A secret that contains another is masked whole, and overlapping ones under one mask.
    """
    index = _scrub_index(frozenset(values))
    if index and len(text) >= MIN_SCRUB_LENGTH:
        text = _mask_spans(text, _spans(text, index))
    return mask_credentials(text, parameters=False)


_Trie = dict[str, "_Trie"]
_END = ""  # a trie key: a value ends here
_HEADS = re.compile(f"(?=(.{{{MIN_SCRUB_LENGTH}}}))", re.DOTALL)  # every substring of that length


@functools.lru_cache(maxsize=256)
def _scrub_index(values: frozenset[str]) -> dict[str, _Trie]:
    """A trie of the values to hunt for, per first MIN_SCRUB_LENGTH characters (their head)."""
    index: dict[str, _Trie] = {}
    for value in chain(values, _quoted_ancestors(values)):
        if len(value) >= MIN_SCRUB_LENGTH:
            node = index.setdefault(value[:MIN_SCRUB_LENGTH], {})
            for char in value[MIN_SCRUB_LENGTH:]:
                node = node.setdefault(char, {})
            node[_END] = {}
    return index


def _quoted_ancestors(values: Iterable[str]) -> set[str]:
    """The directories above each secret absolute path, quoted as an OS error quotes a path.

    Creating or opening a file under a secret path fails naming the first part of it that is
    missing or refused (`FileNotFoundError: [Errno 2] No such file or directory: '/srv/acme-7f3a'`
    for `/srv/acme-7f3a/out`): a prefix of the secret, which masking whole values cannot find.
    Only the quoted forms are hunted, so prose that names a common directory stays readable."""
    found: set[str] = set()
    for value in values:
        if not value.startswith("/"):
            continue
        parts = value.rstrip("/").split("/")
        for depth in range(2, len(parts)):  # "/a" … the parent of the value itself
            ancestor = "/".join(parts[:depth])
            found.update((f"'{ancestor}'", f'"{ancestor}"'))
    return found


def _spans(text: str, index: dict[str, _Trie]) -> list[tuple[int, int]]:
    """(start, end) of the longest value starting at each place a head occurs.

    Heads are found by C-level searches, and only where one occurs is its trie walked: no
    Python step per character of the text, however many values there are (one password per
    connector: thousands). With many heads, the text's every substring of a head's length is
    listed once (one regex pass) and intersected with them, rather than searched per head
    (measured on 2 MB of text with 10,000 values under 1 or 10,000 heads).
    """
    spans = []
    heads = index.keys() if len(index) <= 256 else set(_HEADS.findall(text)) & index.keys()
    for head in heads:
        trie, at = index[head], text.find(head)
        while at >= 0:
            end = _longest(trie, text, at + MIN_SCRUB_LENGTH)
            if end >= 0:
                spans.append((at, end))
            at = text.find(head, at + 1)
    return spans


def _longest(node: _Trie, text: str, at: int) -> int:
    end = at if _END in node else -1
    while at < len(text):
        child = node.get(text[at])
        if child is None:
            break
        node, at = child, at + 1
        if _END in node:
            end = at
    return end


def _mask_spans(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, done = [], 0
    for start, end in sorted(spans):
        if start < done:  # overlaps the value masked last: one mask covers both
            done = max(done, end)
            continue
        parts += [text[done:start], MASK]
        done = end
    parts.append(text[done:])
    return "".join(parts)


# --- seals (snapshots) ----------------------------------------------------------------------------


def is_seal(value: str | None) -> bool:
    return value is not None and value.startswith(SEAL_PREFIX)


def seal(value: str, salt: bytes) -> str:
    """`(sensitive hmac-sha256$<salt>$<digest>)`: comparable, not reversible (see module doc)."""
    return f"{SEAL_PREFIX}{_b64(salt)}${_b64(_hmac(salt, value))})"


def seal_matches(sealed: str, candidate: str) -> bool:
    """Whether `candidate` is the value `sealed` was made from (False for a malformed seal)."""
    salt_text, _, digest_text = sealed[len(SEAL_PREFIX) : -1].partition("$")
    try:
        salt, digest = _salt(salt_text), _unb64(digest_text)
    except ValueError:
        return False
    return hmac.compare_digest(_hmac(salt, candidate), digest)


@functools.lru_cache(maxsize=64)
def _salt(text: str) -> bytes:
    return _unb64(text)  # one per snapshot: decoded once, not once per value


def _hmac(salt: bytes, value: str) -> bytes:
    # Connect trims values before parsing them: " x" and "x" are one value (normalize.same_value).
    return hmac.new(salt, value.strip().encode("utf-8", "surrogatepass"), hashlib.sha256).digest()


def seal_config(config: Mapping[str, str | None], sensitive: Collection[str], salt: bytes) -> dict[str, str | None]:
    """The config as a snapshot stores it: every value `mask_value` would change, sealed.
    A config with nothing to seal is returned as it is (the same object)."""
    masked, _ = _rules_for(tuple(config))
    if not masked and not any(key in config for key in sensitive) and not _suspect(config):
        return config if isinstance(config, dict) else dict(config)
    sealed: dict[str, str | None] = {}
    for key, value in config.items():
        if value is not None and not is_seal(value) and mask_value(key, value, sensitive) != value:
            value = seal(value, salt)
        sealed[key] = value
    return sealed


def slow_digest(raw: bytes, label: bytes) -> str:
    """A hex digest of `raw`, which may hold secrets: PBKDF2 over its SHA-256, so that checking a
    guess against it costs SLOW_DIGEST_ROUNDS rounds (a saved plan is shared)."""
    return hashlib.pbkdf2_hmac("sha256", hashlib.sha256(raw).digest(), label, SLOW_DIGEST_ROUNDS).hex()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from exc
