"""The endpoint's secrets on the Model tab: its API key and the credentials in its base URL.

Both are kept in the system keychain under the base URL's host
(:mod:`app.platform.secrets`), never in ``settings.toml``, and both follow the host: when
the base URL's host changes, the key field shows what is stored for the *new* host (most
often nothing, with a request for its key or for none), so a key meant for one provider is
never sent to a relay the user is only trying out. Credentials typed into the base URL
(``https://user:password@relay/v1``, or a token as the user-info) are saved like a key and
shown back in the URL field, so the field still reads as the URL the client requests.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLineEdit

from app.platform import secrets
from app.ui.settings.tab import hint_label

Read = Callable[[str | None], str | None]
"""A keychain lookup for a base URL's host."""


def _stored_key(base_url: str | None) -> str | None:
    return secrets.get_api_key(base_url, environ={})  # the keychain only: the field edits what it holds


class EndpointSecrets:
    """The key row and note, and what the keychain holds for each host the URL has named."""

    def __init__(self, base_url: str | None) -> None:
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.note = hint_label()
        self._keys: dict[str, str] = {}
        """host → the key stored for it ("" = none, or the keychain could not be read)."""
        self._credentials: dict[str, str] = {}
        """host → the base URL credentials stored for it ("" = none)."""
        self._keychain_ok = True
        """False after a keychain failure: no more reads (each may wait on a locked keychain)."""
        self._host = secrets.keychain_username(base_url)
        self.api_key.setText(self._stored(self._keys, base_url, _stored_key))
        url = (base_url or "").strip()
        if url and not secrets.split_url_credentials(url)[1]:
            stored = self._stored(self._credentials, url, secrets.get_url_credentials)
            if stored:
                url = url.replace("://", f"://{stored}@", 1)
        self.url_text = url
        """The base URL to show: the saved one with its host's stored credentials put back."""
        self._ask(changed=False)

    def row(self) -> QHBoxLayout:
        """The key field with its Show box."""
        show = QCheckBox("Show")
        show.toggled.connect(
            lambda on: self.api_key.setEchoMode(
                QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password
            )
        )
        row = QHBoxLayout()
        row.addWidget(self.api_key, 1)
        row.addWidget(show)
        return row

    def follow(self, base_url: str) -> None:
        """The base URL was edited: a new host gets its own stored key, or an empty field."""
        host = secrets.keychain_username(base_url)
        if host == self._host:
            return
        self._host = host
        self.api_key.setText(self._stored(self._keys, base_url, _stored_key))
        self._ask(changed=True)

    def save(self, base_url: str) -> None:
        """Store or forget the key and the URL's credentials for ``base_url``'s host.

        Raises :class:`~app.platform.secrets.SecretStoreError` (a sentence for the user).
        """
        clean, credentials = secrets.split_url_credentials(base_url)
        key = self.api_key.text().strip()
        stored_key = self._stored(self._keys, clean, _stored_key)
        if key and key != stored_key:
            secrets.set_api_key(clean, key)
        elif not key and stored_key:
            secrets.delete_api_key(clean)
        stored_credentials = self._stored(self._credentials, clean, secrets.get_url_credentials)
        if credentials and credentials != stored_credentials:
            secrets.set_url_credentials(clean, credentials)
        elif not credentials and stored_credentials:
            secrets.delete_url_credentials(clean)

    def _stored(self, cache: dict[str, str], base_url: str | None, read: Read) -> str:
        """What the keychain holds for ``base_url``'s host (read once per host), "" for nothing."""
        host = secrets.keychain_username(base_url)
        if host not in cache:
            value = ""
            if self._keychain_ok:
                try:
                    value = read(base_url) or ""
                except secrets.SecretStoreError as exc:
                    self._keychain_ok = False
                    self.note.setText(str(exc))
            cache[host] = value
        return cache[host]

    def _ask(self, *, changed: bool) -> None:
        """Say whose key the field holds, and ask for the new host's key when it has none."""
        where = "the default endpoint" if self._host == "default" else self._host
        self.api_key.setPlaceholderText(
            f"the key for {where}, or empty for none (kept in the system keychain)")
        if not self._keychain_ok:
            return  # the keychain's failure stays on show
        if changed and not self.api_key.text():
            self.note.setText(f"Enter the key for {where}, or leave it empty for none: "
                              "each endpoint (scheme, host and port) keeps its own key.")
        else:
            self.note.setText("")
