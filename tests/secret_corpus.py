"""One fake but format-valid example of every kind of secret `cortex_core.text.redact` knows.

Each value is assembled at import time from a fixed prefix and pseudo-random characters (seeded),
so no token is pasted in this file and scanners that guard pushes have nothing to match. Shared by
tests/test_redact.py, tests/test_secrets_corpus.py and bench/bench_secrets.py.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

_RNG = random.Random(15)
_ALNUM = string.ascii_letters + string.digits
_HEXDIGITS = "0123456789abcdef"


def rand(size: int, alphabet: str = _ALNUM) -> str:
    """size characters of alphabet; with the default alphabet, a digit, a capital and a small
    letter are always in (a generated key has them, and some rules ask for them)."""
    chars = [_RNG.choice(alphabet) for _ in range(size)]
    if alphabet == _ALNUM and size >= 3:
        chars[:3] = [_RNG.choice(string.digits), _RNG.choice(string.ascii_uppercase),
                     _RNG.choice(string.ascii_lowercase)]
        _RNG.shuffle(chars)
    return "".join(chars)


def hexdigits(size: int) -> str:
    return rand(size, _HEXDIGITS)


@dataclass(frozen=True)
class Example:
    kind: str     # the [REDACTED:<kind>] marker it must get
    value: str    # the secret value: all of it goes, nothing else
    line: str     # a line of code (or config) that holds it
    needle: str   # a part of the value that is never escaped (markdown, JSON): must not show


def _example(kind: str, value: str, line: str | None = None, needle: str | None = None):
    return Example(kind, value, line or f'VALUE = "{value}"', needle or value)


_KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + rand(60) + "\n" + rand(64)
_PEM = f"-----BEGIN PRIVATE KEY-----\n{_KEY_BODY}\n-----END PRIVATE KEY-----\n"
_GCP_JSON = json.dumps({"type": "service_account", "project_id": "acme-ci",
                        "private_key_id": hexdigits(40), "private_key": _PEM,
                        "client_email": "ci@acme-ci.iam.gserviceaccount.com"})
_JWT = ".".join(base64.urlsafe_b64encode(part).decode().rstrip("=") for part in (
    b'{"alg":"HS256","typ":"JWT"}', b'{"sub":"1234567890"}', rand(24).encode()))
_BASIC = base64.b64encode(b"alice:" + rand(12).encode()).decode()
_AZURE = base64.b64encode(_RNG.randbytes(64)).decode()
_RSA_BODY = rand(64)
_RSA = f"-----BEGIN RSA PRIVATE KEY-----\n{_RSA_BODY}\n{rand(40)}\n-----END RSA PRIVATE KEY-----"
_LETTERS = rand(40, string.ascii_letters)
_CURL_PASSWORD = "hunter2-" + rand(8)
_MYSQL_PASSWORD = "s3cret" + rand(8)
_WEBHOOK = f"T{rand(8, string.ascii_uppercase)}/B{rand(8, string.ascii_uppercase)}/{rand(24)}"

EXAMPLES: list[Example] = [
    _example("private-key", _RSA, f'KEY = """{_RSA}"""', _RSA_BODY),
    # A GCP service-account file: its private key is a key block with JSON-escaped newlines; the
    # whole string goes (a quoted literal that holds a secret goes whole).
    _example("private-key", _PEM.replace("\n", "\\n"), _GCP_JSON, _KEY_BODY[32:92]),
    _example("aws-access-key", "AKIA" + rand(16, string.ascii_uppercase + string.digits)),
    _example("gcp-api-key", "AIza" + rand(35)),
    _example("github-token", "ghp_" + rand(36)),
    _example("github-token", "github_" + "pat_" + rand(22) + "_" + rand(59)),
    _example("gitlab-token", "glpat-" + rand(20)),
    _example("slack-token", "xoxb-" + rand(12, string.digits) + "-" + rand(13, string.digits)
             + "-" + rand(24)),
    _example("slack-token", "xapp-1-" + rand(11, string.ascii_uppercase + string.digits) + "-"
             + rand(13, string.digits) + "-" + hexdigits(64)),
    _example("slack-webhook", _WEBHOOK, f'HOOK = "https://hooks.slack.com/services/{_WEBHOOK}"'),
    _example("stripe-key", "sk_" + "live_" + rand(24)),
    _example("stripe-key", "rk_" + "live_" + rand(24)),
    _example("stripe-key", "sk_" + "test_" + rand(24)),
    _example("npm-token", "npm_" + rand(36)),
    _example("pypi-token", "pypi-" + "AgEIcHlwaS5vcmc" + rand(70)),
    _example("anthropic-key", "sk-" + "ant-api03-" + rand(93) + "AA"),
    _example("openai-key", "sk-" + "proj-" + rand(74) + "T3Blbk" + "FJ" + rand(74)),
    _example("openai-key", "sk-" + rand(20) + "T3Blbk" + "FJ" + rand(20)),
    _example("twilio-key", "SK" + hexdigits(32)),
    _example("sendgrid-key", "SG." + rand(22) + "." + rand(43)),
    _example("huggingface-token", "hf_" + rand(34, string.ascii_letters)),
    _example("shopify-token", "shpat_" + hexdigits(32)),
    _example("square-token", "sq0atp-" + rand(22)),
    _example("square-token", "sq0csp-" + rand(43)),
    _example("square-token", "EAAA" + rand(60)),
    _example("mailgun-key", "key-" + hexdigits(32)),
    _example("digitalocean-token", "dop_" + "v1_" + hexdigits(64)),
    _example("doppler-token", "dp.pt." + rand(43)),
    _example("databricks-token", "dapi" + hexdigits(32)),
    _example("azure-storage-key", _AZURE,
             f'CONN = "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={_AZURE};'
             'EndpointSuffix=core.windows.net"', _AZURE[:60]),
    _example("jwt", _JWT, f'HEADERS = {{"Authorization": "Bearer {_JWT}"}}'),
    # Kinds found by their context.
    _example("aws-secret-key", rand(40), None, None),
    _example("url-credentials", rand(16), None, None),
    _example("bearer-token", rand(32), None, None),
    _example("basic-auth", _BASIC, f'AUTH = "Authorization: Basic {_BASIC}"'),
    _example("password", "hunter2-" + rand(8), None, None),
    _example("cli-password", _CURL_PASSWORD,
             f"curl -fsS -u deploy:{_CURL_PASSWORD} https://ci.example.com/api/jobs"),
    _example("cli-password", _MYSQL_PASSWORD,
             f"mysqldump -h db.internal -u root -p{_MYSQL_PASSWORD} app > app.sql"),
    _example("generic-api-key", rand(32), None, None),
    # High entropy, no digit: found by the entropy check on a secret-looking name.
    _example("generic-api-key", _LETTERS, f'SERVICE_KEY = "{_LETTERS}"'),
]
# Lines for the kinds found by their context.
_CONTEXT_LINES = {
    "aws-secret-key": 'aws_secret_access_key = "{}"',
    "url-credentials": 'DATABASE_URL = "postgres://app:{}@db.internal:5432/app"',
    "bearer-token": 'HEADERS = {{"Authorization": "Bearer {}"}}',
    "password": 'db_password = "{}"',
    "generic-api-key": 'client_secret = "{}"',
}
EXAMPLES = [Example(e.kind, e.value, _CONTEXT_LINES[e.kind].format(e.value), e.needle)
            if e.line == f'VALUE = "{e.value}"' and e.kind in _CONTEXT_LINES else e
            for e in EXAMPLES]

# Public by design, left alone: a Stripe publishable key ships in every checkout page.
PUBLISHABLE = "pk_" + "live_" + rand(24)
