"""Secrets out of text before it leaves the store: search results, context packs, hovers.

`find_secrets(text)` lists the spans of secret values, sorted and non-overlapping; `redact(text)`
replaces each with `[REDACTED:<kind>]`. Only the value goes: key names, URL schemes, users, hosts
and the text around stay. Overlapping finds merge into one span (the earliest, most specific kind
names it), so a secret is never half shown; a quoted literal that holds a secret goes whole.
Markers are never matched again: redact is idempotent. Every pattern runs in linear time (no
nested quantifiers over one run; bodies stop at the next delimiter), so hostile input is safe.

Kinds recognised by their format, anywhere (formats as gitleaks, detect-secrets and GitHub's
secret scanning describe them; a token starts at a word edge, and the formats added for issue 15
also end at one: a longer run is something else):
    private-key      -----BEGIN [RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP ]PRIVATE KEY[ BLOCK]-----
                     through the END line, BEGIN line included; with no END before the next BEGIN,
                     to the first blank line or quote, or to the end of the text. A GCP
                     service-account file's "private_key" is one, with JSON-escaped newlines
    aws-access-key   AKIA / ASIA + 16 upper-case letters or digits
    gcp-api-key      AIza + 35
    github-token     ghp_ gho_ ghu_ ghs_ ghr_ + 36 or more; github_pat_ + 22 or more
    gitlab-token     glpat- + 20 or more
    slack-token      xoxa- xoxb- xoxe- xoxo- xoxp- xoxr- xoxs- xapp- + 10 or more
    slack-webhook    the T…/B…/… path after hooks.slack.com/services/
    stripe-key       sk_ / rk_ + live_ / test_ / prod_ + 10 or more letters and digits; whsec_
                     + 32 or more. Publishable keys (pk_live_…) are left: they are public, sent
                     to every browser of a checkout page
    npm-token        npm_ + 36 letters and digits
    pypi-token       pypi-AgEIcHlwaS5vcmc (or the test.pypi.org prefix) + 50 or more
    anthropic-key    sk-ant- + 32 or more of [A-Za-z0-9_-]
    openai-key       sk- (sk-proj-, sk-svcacct-, …) + 32 or more of [A-Za-z0-9_-], with a digit
    twilio-key       SK + 32 hex
    sendgrid-key     SG. + 22 + . + 43
    huggingface-token  hf_ or api_org_ + 34 letters and digits
    shopify-token    shpat_ shpca_ shppa_ shpss_ + 32 hex
    square-token     sq0atp- + 22; sq0csp- + 43; EAAA + 60
    mailgun-key      key- + 32 hex (newer keys, 32 hex-8 hex-8 hex, only under a key name)
    digitalocean-token  dop_v1_ doo_v1_ dor_v1_ + 64 hex
    doppler-token    dp.pt. dp.st. dp.sa. dp.ct. dp.scim. dp.audit. + 40 or more
    databricks-token dapi + 32 hex [+ -digit]
    azure-storage-key  the 86 base64 characters and "==" after AccountKey= (connection strings)
    jwt              eyJ….eyJ….signature
Kinds recognised by their context:
    aws-secret-key   40 base64 characters assigned to aws_secret_access_key, SecretAccessKey, …
    url-credentials  the password of scheme://user:password@host (a token alone as the user,
                     https://ghp_…@github.com, is caught by its format)
    bearer-token     what follows "Bearer ";  basic-auth: what follows "Basic "
    cli-password     the password of `curl -u user:password` (--user, -su, -uUSER:PW, quoted or
                     not; a proxy's -U/--proxy-user too), of `mysql -pPASSWORD` (mysqldump,
                     mysqladmin, …; -p'PW'): read as
                     shell words up to the command's end (a line break, | ; & and the like; a
                     backslash continues the line); a value that reads as a name or a
                     placeholder stays, as an unquoted assigned value does
    password         a value assigned to …password, …passwd, …pass, …passphrase, …pwd
    generic-api-key  a value assigned to …secret, …token, …api_key/apikey, …secret_key,
                     …access_key, …private_key, …auth_key, …signing_key, …encryption_key; and a
                     high-entropy value assigned to …key, …credential(s), …creds (not
                     …public_key, …publishable_key, …pub_key)
High entropy: 20 or more characters of [A-Za-z0-9+/=_-], not all hex digits and dashes (commit
shas, digests, UUIDs), with a Shannon entropy of at least ENTROPY_BITS (4.0) bits per character.
Words and most identifiers stay below it; random base-62 strings of 32 characters were above it
in 2,000 draws of 2,000, of 20 characters in two draws of three.
Assignments: `k = v`, `k: v`, `k := v`, `k => v`, `"k": v`, `ENV["k"] = v`, `k: T = v`, `--k v`,
`--k=v`, URL queries `?k=v&`. A key name matches when the keyword ends it after `_ . -` or a
camelCase edge (db_password, dbPassword, self.password, X-Api-Key); passwordless, tokenizer,
max_tokens, password_hash and getToken() do not.

Values kept, because they are not secrets:
  - empty, None/null/nil/true/false/undefined, and well-known defaults: changeme, changeit,
    password, secret, example, dummy, placeholder, redacted (a default is public knowledge);
  - placeholders: <…>, {…}, ${…}, {{…}}, $VAR, %s, %(name)s, ***, xxx, ...;
  - unquoted references: identifiers without digits (token=token, password: str), dotted names
    (self.secret, process.env.X), calls and subscripts (get_token(), os.environ["X"]), paths
    (PWD=/home/me), numbers under 4 digits — in code an unquoted value is a name, in config it
    usually has a digit;
  - token/secret/API-key values shorter than 8 characters, or without a digit and below the
    entropy threshold; …key/…credentials values below it (cache_key = "v1:users", a sha, a UUID);
    bearer/basic values that look like words: a lexer's token = "(" or "Bearer tokens" is prose.
Known false negatives: unquoted all-letter passwords (PASSWORD=hunter), unquoted values with
spaces, values starting with $, multi-line YAML values, XML elements, `-pVALUE` of commands
other than mysql's, prose ("the password is x"), keys with no edge before the keyword
(DBPASSWORD, DBPassword; PGPASSWORD is known), a bare AWS
secret or any high-entropy string with no key name, an unquoted token with no digit (read as a
name), a short one with no digit and low entropy, hex secrets under a bare …key name, a Stripe
publishable key (on purpose), an Azure AD client secret with no key name, and the part of a
truncated key block after a blank line.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Secret:
    """A secret value's span in a text, and its kind."""
    kind: str
    start: int
    end: int  # the value only: key names, schemes, users and hosts stay outside


_LABEL = r"(?:[A-Z0-9]+ ){0,2}PRIVATE KEY(?: BLOCK)?-----"
# A block's body loops never cross a BEGIN or END line, so each character is read by one block's
# two attempts (with END, then truncated) at most: linear however many BEGINs the text holds.
_PRIVATE_KEY = (rf"-----BEGIN {_LABEL}(?:(?:(?!-----(?:BEGIN|END) )[\s\S])*+-----END {_LABEL}"
                r"|(?:(?!\n[ \t]*\r?\n|-----BEGIN |[\"'])[\s\S])*+)")
# A token starts at a word edge, never inside a longer run: fewer false hits, and no run is
# scanned again from each of its characters. Every such edge also refuses "]", the end of a
# marker, and every closing edge refuses "[", its start: otherwise redacting a neighbour would
# open an edge, and a second pass would find more than the first.
_EDGE = r"(?<![A-Za-z0-9_\-\]])"
# The end of a fixed-format token: no more token characters (a longer run is something else) and
# no "[", for the same reason as above.
_CLOSE = r"(?![A-Za-z0-9_\-\[])"
_URL_CHARS = r"[^\s/?#@\[\]\"'<>]"  # no "[" either: a marker is never a password
_TEMPLATES = ("${", "{{")
_MARKER = re.compile(r"\[REDACTED:[a-z\-]+\]")
_DUMMIES = frozenset(("none", "null", "nil", "true", "false", "undefined", "changeme", "changeit",
                     "password", "secret", "example", "dummy", "placeholder", "redacted",
                     "x-oauth-basic"))   # GitHub's documented password for a token as the user
_PLACEHOLDER = re.compile(r"<[^<>]*>|\{[^{}]*\}|\$\w*|%\(?\w*\)?[sd]|\**|[xX*.#_\-]{3,}")
# Unquoted values that name something: identifiers, dotted names, paths; and small numbers, which
# in prose are lengths ("password: 8 characters"), not PINs.
_REFERENCE = re.compile(r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[/~.].*|\d{1,3}", re.DOTALL)


def _literal(value: str, quoted: bool = True, after: str = "") -> bool:
    """Whether an assigned value is a secret, not a placeholder, a default or a name for one."""
    if value.lower() in _DUMMIES or _PLACEHOLDER.fullmatch(value) or any(
            t in value for t in _TEMPLATES):
        return False
    return quoted or not (after in ("(", "[") or _REFERENCE.fullmatch(value))


def _command_literal(value: str) -> bool:
    """A password given on a command line, unless it reads as a placeholder: as an unquoted
    value is (`curl --user user:passwd`, `-u "name:some_password"` in docs and tests)."""
    return _literal(value, quoted=False)


def _token_like(value: str) -> bool:
    """Long enough, one word, with a digit: what generated keys look like and words do not."""
    return len(value) >= 8 and not any(c.isspace() for c in value) and any(
        c.isdigit() for c in value)


def _random_like(value: str) -> bool:
    """A digit, or a capital past the first letter beside small ones ("dXNlcjpw", not "Tokens")."""
    return any(c.isdigit() for c in value) or (
        any(c.isupper() for c in value[1:]) and any(c.islower() for c in value))


def _digit_and_letter(value: str) -> bool:
    """Generated keys mix both; a long kebab-case name ("sk-learn-…") has no digit."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_\-]{20,}")
_HEX = re.compile(r"[0-9a-fA-F\-]+")
# Bits per character, chosen on real non-secrets (bench/bench_secrets.py prints the figures). Hex
# is refused by its alphabet: 16 symbols hold at most 4 bits and commit shas come close (6,489 shas
# of psf/requests: up to 3.94; uuid4 with its dashes: up to 4.02). Random base-62 strings pass it
# in 2,000 draws of 2,000 at 32 characters, 94% of them at 24, 66% at 20.
ENTROPY_BITS = 4.0


def entropy(value: str) -> float:
    """Shannon entropy of the characters of value, in bits per character."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values()) if size else 0.0


def _high_entropy(value: str) -> bool:
    """20 or more token characters, not hex, and at least ENTROPY_BITS bits per character."""
    return bool(_TOKEN_CHARS.fullmatch(value)) and not _HEX.fullmatch(value) and (
        entropy(value) >= ENTROPY_BITS)


class _OnFirstUse:
    """A pattern compiled when first used. A format runs only on texts that hold its hint (see
    _HINTS), so most processes use few of them: compiling them all was most of this module's
    import, a good part of the start of a short command such as `cortex history`."""

    def __init__(self, source: str):
        self.source = source

    def __getattr__(self, name: str):    # finditer, groupindex, pattern...: those of the regex
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(self.source)
        return getattr(compiled, name)


# (kind, pattern, check on the value); the value is group "v" or the whole match. Earlier entries
# name a span when several start at the same place.
_FORMATS: list[tuple[str, _OnFirstUse, Callable[[str], bool] | None]] = [
    (kind, _OnFirstUse(pattern), check) for kind, pattern, check in (
        ("private-key", _PRIVATE_KEY, None),
        ("aws-access-key", r"(?<![A-Z0-9\]])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9\[])", None),
        ("gcp-api-key", _EDGE + r"AIza[A-Za-z0-9_\-]{35}" + _CLOSE, None),
        ("github-token", _EDGE + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
         None),
        ("gitlab-token", _EDGE + r"glpat-[A-Za-z0-9_\-]{20,}", None),
        ("slack-token", _EDGE + r"(?:xox[abeoprs]|xapp)-[A-Za-z0-9\-]{10,}", None),
        ("slack-webhook",
         r"hooks\.slack\.com/services/(?P<v>T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)", None),
        ("stripe-key", _EDGE + r"(?:[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}+"
         r"|whsec_[A-Za-z0-9]{32,}+)" + _CLOSE, None),
        ("npm-token", _EDGE + r"npm_[A-Za-z0-9]{36}" + _CLOSE, None),
        ("pypi-token", _EDGE + r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}+"
         + _CLOSE, None),
        ("anthropic-key", _EDGE + r"sk-ant-[A-Za-z0-9_\-]{32,}+" + _CLOSE, None),
        ("openai-key", _EDGE + r"sk-[A-Za-z0-9_\-]{32,}+" + _CLOSE, _digit_and_letter),
        ("twilio-key", _EDGE + r"SK[0-9a-fA-F]{32}" + _CLOSE, None),
        ("sendgrid-key", _EDGE + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _CLOSE, None),
        ("huggingface-token", _EDGE + r"(?:hf_|api_org_)[A-Za-z0-9]{34}" + _CLOSE, None),
        ("shopify-token", _EDGE + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _CLOSE, None),
        ("square-token", _EDGE + r"(?:sq0atp-[A-Za-z0-9_\-]{22}|sq0csp-[A-Za-z0-9_\-]{43}"
         r"|EAAA[A-Za-z0-9_\-]{60})" + _CLOSE, None),
        ("mailgun-key", _EDGE + r"key-[0-9a-f]{32}" + _CLOSE, None),
        ("digitalocean-token", _EDGE + r"do[opr]_v1_[0-9a-f]{64}" + _CLOSE, None),
        ("doppler-token", _EDGE + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}+" + _CLOSE,
         None),
        ("databricks-token", _EDGE + r"dapi[0-9a-f]{32}(?:-\d)?" + _CLOSE, None),
        ("azure-storage-key", (
            r"(?<![A-Za-z0-9\]])(?i:accountkey)[ \t]*=[ \t]*(?P<v>[A-Za-z0-9+/]{86}==)"
            r"(?![A-Za-z0-9+/=\[])"), None),
        ("jwt", _EDGE + r"eyJ[\w\-]++\.eyJ[\w\-]++\.[\w\-]++", None),
        ("aws-secret-key", (
            r"(?<![A-Za-z0-9\]])(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)"
            r"[\"']?[ \t]*(?::=|=>|=|:)[ \t]*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=\[])"),
         None),
        # The outer loop backtracks whole "@…" groups only, so an unencoded "@" in a password
        # ends the password at the last "@" before the host, never the first.
        ("url-credentials", (
            r"(?<![A-Za-z0-9+.\-\]])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:"
            rf"(?P<v>{_URL_CHARS}++(?:@{_URL_CHARS}++)*)@"), _literal),
        ("bearer-token", r"(?<![\w\]])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/\-]{8,}=*)",
         _random_like),
        ("basic-auth",
         r"(?<![\w\]])(?i:basic)[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=\[])",
         _random_like),
    )]

# Strings every match of a format holds: a format runs only on a text that holds one of its
# hints (in any case for the kinds in _ANY_CASE). Most texts hold none, and a regex pass per
# format would double the time of redact(). tests/test_redact.py checks that every match in the
# corpus holds a hint of its kind.
_HINTS: dict[str, tuple[str, ...]] = {
    "private-key": ("-----BEGIN ",), "aws-access-key": ("AKIA", "ASIA"), "gcp-api-key": ("AIza",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-",), "slack-token": ("xox", "xapp-"),
    "slack-webhook": ("hooks.slack.com/services/",),
    "stripe-key": ("k_live_", "k_test_", "k_prod_", "whsec_"), "npm-token": ("npm_",),
    "pypi-token": ("pypi-AgE",), "anthropic-key": ("sk-",), "openai-key": ("sk-",),
    "twilio-key": ("SK",), "sendgrid-key": ("SG.",), "huggingface-token": ("hf_", "api_org_"),
    "shopify-token": ("shp",), "square-token": ("sq0", "EAAA"), "mailgun-key": ("key-",),
    "digitalocean-token": ("_v1_",), "doppler-token": ("dp.",), "databricks-token": ("dapi",),
    "azure-storage-key": ("accountkey",), "jwt": ("eyJ",), "aws-secret-key": ("secret",),
    "url-credentials": ("://",), "bearer-token": ("bearer",), "basic-auth": ("basic",),
}
_ANY_CASE = frozenset(("azure-storage-key", "aws-secret-key", "bearer-token", "basic-auth"))


_KINDS_OF_HINT: dict[str, frozenset[str]] = {}
for _kind, _hints in _HINTS.items():
    for _hint in _hints:
        _KINDS_OF_HINT[_hint] = _KINDS_OF_HINT.get(_hint, frozenset()) | {_kind}
# Each hint is looked for as a substring (`in` is many times faster than one regex trying every
# hint at every position). In any case: in text.lower() when the text is ASCII; otherwise by the
# regex engine, whose case folding also matches a Kelvin sign to "k" and a long s to "s" as
# the formats' own (?i:…) patterns do, and str.lower() does not.
_CASED_HINTS = tuple((h, kinds) for h, kinds in sorted(_KINDS_OF_HINT.items())
                     if not kinds & _ANY_CASE)
_ANY_CASE_HINTS = tuple((h.lower(), re.compile(re.escape(h), re.IGNORECASE), kinds)
                        for h, kinds in sorted(_KINDS_OF_HINT.items()) if kinds & _ANY_CASE)


def _hinted(text: str, lower: str | None) -> set[str]:
    """The kinds whose hints are in text; `lower` is text.lower() when text is ASCII, else None."""
    kinds: set[str] = set()
    for hint, of_hint in _CASED_HINTS:
        if hint in text:
            kinds |= of_hint
    for hint, pattern, of_hint in _ANY_CASE_HINTS:
        if (hint in lower) if lower is not None else pattern.search(text):
            kinds |= of_hint
    return kinds

_KEYWORD = (r"(?i:(?P<pw>(?:pg)?pass(?:word|wd|phrase)?|pwd)|secret(?:[_.\-]?key)?|token"
            r"|(?:api|access|private|auth|signing|encryption)[_.\-]?key"
            r"|(?P<weak>key|credentials?|creds))")
# Key: an optional prefix ending at "_ . -" or a camelCase edge, then a keyword that ends the name.
# Separator: "--k v" for options, else an optional annotation ("k: str = v") and = : := =>.
# Key and separator are atomic: when the value turns out to be a marker, the match fails instead
# of backtracking into another reading ("k: x = [REDACTED…]" read again as "k: x"), which would
# break idempotence.
# Value: a quoted string (escapes honoured, one line) or an unquoted run up to a delimiter, which
# excludes "(" and "[" so that a call or subscript is seen by the character after the value.
_ASSIGNMENT = re.compile(
    r"(?<![\w.\-/@\]])(?<!REDACTED:)(?>(?P<dash>--)?"
    r"(?P<name>[A-Za-z_][\w.\-]*?(?:[_.\-]|(?<=[a-z0-9])(?=[A-Z])))?" + _KEYWORD + r"(?![\w.\-])"
    r"[\"'`]?\]?"
    r"(?(dash)(?:[ \t]*=[ \t]*|[ \t]+)"
    r"|(?:[ \t]*:[ \t]*[A-Za-z_][\w.\[\], |]{0,40}?[ \t]*(?==(?!=)))?"
    r"[ \t]*(?::=|=>|=(?!=)|:(?!:))[ \t]*))"
    r"(?:[rbufRBUF]{0,2}(?P<q>[\"'`])(?P<qv>(?:(?!(?P=q))[^\\\n]|\\.)*+)(?P=q)"
    r"|(?P<uv>[^\s\"'`,;&|()\[\]{}<>]+))")


_PUBLIC = re.compile(r"(?i)pub(?:lic|lishable)?[_.\-]?$")
# A name that ends as "secret_", "api.", "access-" or "private" (camelCase: "myApi") before "key":
# _KEYWORD's lazy prefix takes "secret_" and leaves the weak "key" (a regex tries the prefix
# before the shorter reading), so the strong keywords with a separator are told here.
_STRONG_BEFORE_KEY = re.compile(r"(?:^|(?<=[_.\-])|(?<=[a-z0-9])(?=[A-Z]))"
                                r"(?i:secret|api|access|private|auth|signing|encryption)[_.\-]?$")


def _looks_secret(m: re.Match[str], value: str) -> bool:
    """A password is any literal; a token or secret looks generated (a digit, or high entropy);
    a bare …key or …credentials must be high-entropy, and a public key is no secret."""
    if m.group("pw"):
        return True
    if m.group("weak") and not _STRONG_BEFORE_KEY.search(m.group("name") or ""):
        return not _PUBLIC.search(m.group("name") or "") and _high_entropy(value)
    return _token_like(value) or _high_entropy(value)


# Every keyword of _KEYWORD holds one of these, in any case. An assignment's match lies within
# one line (no part of it can match a line break), so an ASCII text is searched only on the lines
# that hold one: most changed lines hold none.
_KEYWORD_STEMS = ("pass", "pwd", "secret", "token", "key", "cred")


def _keyword_lines(text: str) -> list[tuple[int, int]] | None:
    """(start, end) of each line of an ASCII text that holds a keyword stem, its line break
    included, in order; None when text is not ASCII (search all of it)."""
    if not text.isascii():
        return None
    lower = text.lower()
    starts: set[int] = set()
    for stem in _KEYWORD_STEMS:
        at = lower.find(stem)
        while at >= 0:
            starts.add(lower.rfind("\n", 0, at) + 1)
            # On to the next line: a line of many stems is read once a stem, not once a stem
            # found (one 3 MB line of "key" took 17.7 s that way, against 0.5 s before).
            end = lower.find("\n", at)
            at = lower.find(stem, end + 1) if end >= 0 else -1
    spans = []
    for start in sorted(starts):
        end = lower.find("\n", start)
        spans.append((start, len(text) if end < 0 else end + 1))
    return spans


def _assignment_matches(text: str):
    spans = _keyword_lines(text)
    if spans is None:
        yield from _ASSIGNMENT.finditer(text)
        return
    for start, end in spans:
        # Lookbehinds see before `start` as in a search of the whole text; `end` keeps the line
        # break, so the lookaheads at the line's end see what they would see there.
        yield from _ASSIGNMENT.finditer(text, start, end)


def _assignments(text: str):
    """(start, end, kind) of each assigned secret value in text whose formats are masked."""
    for m in _assignment_matches(text):
        if m.group("qv") is not None:
            value, start, quoted = m.group("qv"), m.start("qv"), True
        else:
            value, start, quoted = m.group("uv").rstrip("."), m.start("uv"), False
        rest = _MARKER.sub("", value)
        if rest != value:  # a literal around a masked secret is one; a marker alone is done
            secret = bool(rest.strip())
        else:
            secret = _literal(value, quoted, text[m.end():m.end() + 1]) and _looks_secret(
                m, value)
        if secret:
            yield start, start + len(value), "password" if m.group("pw") else "generic-api-key"


def _merge(found: list[tuple[int, int, int, str]]) -> list[Secret]:
    """(start, priority, end, kind) finds, sorted, overlaps merged: nothing is half shown."""
    secrets: list[Secret] = []
    for start, _, end, kind in sorted(found):
        if secrets and start < secrets[-1].end:
            last = secrets[-1]
            secrets[-1] = Secret(last.kind, last.start, max(last.end, end))
        else:
            secrets.append(Secret(kind, start, end))
    return secrets


# -- passwords on command lines ----------------------------------------------------------------

# A command whose password can be an option's value: curl's -u/--user USER:PASSWORD and mysql's
# -pPASSWORD (mysqldump, mysqladmin, ...), as a word of a shell line (a path before it allowed).
_COMMAND = re.compile(r"(?<![\w\].\-])(curl|mysql(?:dump|admin|import|check|sh)?)(?=[ \t]|\\\r?\n)")
# The pieces of the shell words after it: blanks (a backslash line continuation is one), the end
# of the command (a line break, | ; & ` ( ), or a quote never closed: the command was quoted in
# code, `run('curl … -u a:b')`, and ends with that string), quoted text, and runs of anything
# else; a lone backslash is a piece of its own, so every step moves on.
_PIECE = re.compile(
    r"(?P<blank>(?:[ \t]|\\\r?\n)+)"
    r"|'(?P<sq>[^'\n]*)'"
    r"|\"(?P<dq>(?:[^\"\\\n]|\\.)*)\""
    r"|(?P<end>\r?\n|[|;&`()'\"])"
    r"|(?P<bare>(?:[^\s'\"|;&`()\\]|\\[^\r\n])+|\\)")
# curl's one-letter options that take no value: in a cluster such as -sSu the letters before "u".
_CURL_SWITCHES = frozenset("sSfLvkiIqgGjJlnNOpRZ0123456aBM#")


def _words(text: str, start: int, reached: list[int]):
    """The shell words of text from `start` up to the command's end: for each, its text (quotes
    removed) and, for each of its characters, the position in text it came from. `reached[0]`
    follows how far the text was read."""
    at = start
    word: list[str] = []
    where: list[int] = []
    while at < len(text):
        m = _PIECE.match(text, at)
        if m is None:
            break
        at = reached[0] = m.end()
        kind = m.lastgroup
        if kind in ("blank", "end"):
            if word:
                yield "".join(word), where
                word, where = [], []
            if kind == "end":
                return
            continue
        content = m.group(kind)
        first = m.start(kind)
        word.append(content)
        where.extend(range(first, first + len(content)))
    if word:
        yield "".join(word), where


_CURL_CREDENTIALS = ("-u", "--user", "-U", "--proxy-user")


def _option_values(command: str, words):
    """The values (text, positions) of curl's -u/--user and -U/--proxy-user (user:password), or
    of mysql's first glued -pVALUE."""
    words = iter(words)
    for word, where in words:
        if command == "curl":
            if word in _CURL_CREDENTIALS:
                found = next(words, None)
                if found is not None:
                    yield found
                continue
            name, equals, _ = word.partition("=")
            if equals and name in ("--user", "--proxy-user"):
                yield word[len(name) + 1:], where[len(name) + 1:]
            elif word[:1] == "-" and word[1:2] != "-":
                for j in range(1, len(word)):
                    if word[j] in "uU":
                        if j + 1 < len(word):
                            yield word[j + 1:], where[j + 1:]
                        else:
                            found = next(words, None)
                            if found is not None:
                                yield found
                        break
                    if word[j] not in _CURL_SWITCHES:
                        break   # an option with a value: the rest of the word is that value
        elif word.startswith("-p") and len(word) > 2:
            yield word[2:], where[2:]
            return


def _colon(value: str) -> int:
    """Where user:password splits: the first ":" outside a marker (a token given as the user
    was masked already, `-u sk_test_…:` being `-u [REDACTED:stripe-key]:`); -1 if none."""
    at = 0
    for marker in _MARKER.finditer(value):
        found = value.find(":", at, marker.start())
        if found >= 0:
            return found
        at = marker.end()
    return value.find(":", at)


def _command_passwords(text: str):
    """(start, end, "cli-password") of each password given on a curl or mysql command line:
    the value after the first ":" of curl's -u/--user or -U/--proxy-user, the glued value of
    mysql's -p. A command's words are read to its end; a command word among them (a URL's
    /mysql, a quoted "curl 8") is one of its words, not another command: so each character is
    read once."""
    if "curl" not in text and "mysql" not in text:
        return
    reached = [0]
    for m in _COMMAND.finditer(text):
        if m.start() < reached[0]:
            continue
        command = "curl" if m.group(1) == "curl" else "mysql"
        for value, where in _option_values(command, _words(text, m.end(), reached)):
            if command == "curl":
                colon = _colon(value)
                if colon < 0:
                    continue   # no password: curl asks for it
                value, where = value[colon + 1:], where[colon + 1:]
            if value and not _MARKER.search(value) and _command_literal(value):
                start, end = where[0], where[-1] + 1
                if any(c in "'\"" for c in text[start:end]):   # pieces in quotes: the pair goes
                    start -= text[start - 1:start] in ("'", '"')
                    end += text[end:end + 1] in ("'", '"')
                yield start, end, "cli-password"


def find_secrets(text: str) -> list[Secret]:
    """The secret values in text, sorted by position, overlapping finds merged."""
    found: list[tuple[int, int, int, str]] = []  # start, priority, end, kind
    hinted = _hinted(text, text.lower() if text.isascii() else None)
    for priority, (kind, pattern, check) in enumerate(_FORMATS):
        if kind not in hinted:
            continue
        for m in pattern.finditer(text):
            group = "v" if "v" in pattern.groupindex else 0
            if check is None or check(m.group(group)):
                found.append((m.start(group), priority, m.end(group), kind))
    # Assignments are read with the formats already masked, as a second pass reads them: a key
    # glued to a token ("ghp_…_token: x") cannot hide what follows it in one pass and not in the
    # next. Offsets in the masked text map back through the markers.
    formats = _merge(found)
    marks, shift = [], 0  # masked start, masked end, original start, original end
    for secret in formats:
        size = len(secret.kind) + len("[REDACTED:]")
        marks.append((secret.start + shift, secret.start + shift + size, secret.start, secret.end))
        shift += size - (secret.end - secret.start)
    starts = [mark[0] for mark in marks]

    def original(position: int, is_end: bool) -> int:
        i = (bisect_left if is_end else bisect_right)(starts, position) - 1
        if i < 0:
            return position
        _, masked_end, start, end = marks[i]
        if position < masked_end or (is_end and position == masked_end):
            return end if is_end else start
        return position + end - masked_end

    masked = _replace(text, formats)
    found.extend((original(start, False), len(_FORMATS), original(end, True), kind)
                 for start, end, kind in (*_assignments(masked), *_command_passwords(masked)))
    return _merge(found)


def _replace(text: str, secrets: list[Secret]) -> str:
    parts, position = [], 0
    for secret in secrets:
        parts += [text[position:secret.start], f"[REDACTED:{secret.kind}]"]
        position = secret.end
    parts.append(text[position:])
    return "".join(parts)


def redact(text: str) -> str:
    """text with each secret value replaced by [REDACTED:<kind>]."""
    return _replace(text, find_secrets(text))


def redact_pair(title: str, body: str) -> tuple[str, str]:
    """A title and its body redacted as one text: a secret that spans them is found whole (a
    private key committed as the message: its BEGIN line is the subject, the rest the body,
    where no pattern would know the base64 for a key's)."""
    if not body or "\n" in title:
        return redact(title), redact(body)
    head, _, rest = redact(f"{title}\n{body}").partition("\n")
    return head, rest
