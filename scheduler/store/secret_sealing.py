"""Secrets encrypted at rest: what the `secrets` table holds is a Fernet token, never the value.

A database dump, a backup or a PostgreSQL admin then reads nothing a person put in `nightshift secret set`;
the key lives apart from the database: `secrets_key` (`NIGHTSHIFT_SECRETS_KEY`, one or more Fernet keys,
comma separated, the first sealing and all opening, so a key can be rotated) or, unset, the owner-only file
`secrets.key` in the data folder, made when the first secret is set. A worker on another box needs the
same key (`nightshift secret key` prints it on the server); without it the job that names a secret fails
saying so, and nothing else changes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from scheduler.errors import ServiceUnavailable
from scheduler.private_files import PRIVATE_FILE_MODE

SEALED_PREFIX = "fernet:"


class SecretsKeyError(ServiceUnavailable):
    """This process cannot seal or open secrets: no key, a key that is not a Fernet key, or a stored
    secret sealed with a key it lacks. The message says what to set."""


class SecretSealer:
    """Seals values before they are stored and opens them as a job starts, with the keys of this box."""

    def __init__(self, keys_setting: str | None, key_file: Path) -> None:
        self.keys_setting = keys_setting
        self.key_file = key_file
        self._keys: list[Fernet] | None = None

    def seal(self, value: str) -> str:
        """`value` as stored: the prefix and a token under the first key (made here when none exists)."""
        return SEALED_PREFIX + self._fernet(may_create=True).encrypt(value.encode()).decode()

    def open(self, stored: str, name: str) -> str:
        """The value of a stored secret `name`; one stored before secrets were sealed is returned as is."""
        if not is_sealed(stored):
            return stored
        try:
            return self._fernet(may_create=False).decrypt(stored[len(SEALED_PREFIX) :].encode()).decode()
        except InvalidToken:
            raise SecretsKeyError(
                f"secret {name} was sealed with a key this box lacks: give it the server's key "
                "(`nightshift secret key` there, into NIGHTSHIFT_SECRETS_KEY here), or set the secret again"
            ) from None

    def reseal(self, stored: str) -> str | None:
        """`stored` sealed under the first key, or None when it already is (so a start rewrites nothing):
        a value stored in the clear is sealed, one under an older key of `secrets_key` is sealed anew.
        SecretsKeyError when it was sealed with no key this box has (it is left as it is)."""
        if not is_sealed(stored):
            return self.seal(stored)
        keys = self._keys_in_order(may_create=False)  # a new key could open nothing stored
        token = stored[len(SEALED_PREFIX) :].encode()
        with contextlib.suppress(InvalidToken):
            keys[0].decrypt(token)
            return None
        try:
            return SEALED_PREFIX + MultiFernet(keys).rotate(token).decode()
        except InvalidToken:
            raise SecretsKeyError(
                "a stored secret was sealed with a key this box lacks: set NIGHTSHIFT_SECRETS_KEY to the key "
                "it was sealed with (several, comma separated, the new one first, to rotate)"
            ) from None

    def key_text(self) -> str:
        """The key this box seals with, to give another box (`NIGHTSHIFT_SECRETS_KEY`)."""
        if self.keys_setting:
            return self.keys_setting
        return self._file_key(may_create=False).decode()

    def _fernet(self, may_create: bool) -> MultiFernet:
        return MultiFernet(self._keys_in_order(may_create))

    def _keys_in_order(self, may_create: bool) -> list[Fernet]:
        if self._keys is None:
            if self.keys_setting:
                texts = [part.strip() for part in self.keys_setting.split(",") if part.strip()]
                self._keys = [_fernet_of(text.encode(), "NIGHTSHIFT_SECRETS_KEY") for text in texts]
            else:
                self._keys = [_fernet_of(self._file_key(may_create), str(self.key_file))]
        return self._keys

    def _file_key(self, may_create: bool) -> bytes:
        if may_create and not self.key_file.exists():
            _write_new_key(self.key_file)
        try:
            return self.key_file.read_bytes().strip()
        except FileNotFoundError:
            raise SecretsKeyError(
                f"no secrets key on this box ({self.key_file} is missing, NIGHTSHIFT_SECRETS_KEY unset): "
                "set NIGHTSHIFT_SECRETS_KEY to the server's key (`nightshift secret key` there)"
            ) from None


def is_sealed(stored: str) -> bool:
    """Whether a stored secret is a token (True) or a value stored in the clear before sealing (False)."""
    return stored.startswith(SEALED_PREFIX)


def _fernet_of(key: bytes, source: str) -> Fernet:
    try:
        return Fernet(key)
    except ValueError:
        raise SecretsKeyError(
            f"{source} does not hold a Fernet key (32 url-safe base64-encoded bytes, as `python -c "
            "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` prints)"
        ) from None


def _write_new_key(path: Path) -> None:
    """Create `path` holding a new key, owner-only; when another process made it first, keep theirs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(Fernet.generate_key() + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(staging, path)  # never replaces a key another process wrote meanwhile
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
