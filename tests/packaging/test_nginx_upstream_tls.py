"""The relay recipe verifies its HTTPS upstream (issue 54, item 7): its HTTPS lines, applied
to the recipe, make nginx refuse an upstream whose certificate the trusted file does not
vouch for (502), and pass one it does; the recipe without them passed both."""

from __future__ import annotations

import contextlib
import http.server
import re
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.test_relay import RECIPE, nginx

HTTPS_LINES = re.compile(r"^\s*#   (proxy_\S+ .*;)$", re.MULTILINE)


def https_directives() -> list[str]:
    return HTTPS_LINES.findall(RECIPE.read_text(encoding="utf-8"))


def test_the_https_lines_verify_the_upstream() -> None:
    said = {line.split()[0]: line.split(None, 1)[1].rstrip(";") for line in https_directives()}
    assert said["proxy_ssl_verify"] == "on"
    assert said["proxy_ssl_server_name"] == "on"
    assert said["proxy_ssl_trusted_certificate"].endswith(".crt")
    assert said["proxy_pass"] == "https://llm_upstream"


def make_certificate(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for localhost (its own CA) and its key."""
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


@contextlib.contextmanager
def https_upstream(cert: Path, key: Path) -> Iterator[int]:
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"object": "list", "data": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def https_recipe(trusted: Path) -> str:
    """The recipe with its HTTPS lines applied, for ``localhost``, trusting ``trusted``."""
    text = RECIPE.read_text(encoding="utf-8")
    lines = [line.replace("api.openai.com", "localhost") for line in https_directives()]
    lines = [f"proxy_ssl_trusted_certificate {trusted};" if line.startswith("proxy_ssl_trusted_certificate")
             else line for line in lines]
    text, n = re.subn(r"^\s*proxy_pass http://llm_upstream;$", "\n".join(lines), text, flags=re.MULTILINE)
    assert n == 1
    text = re.sub(r"^\s*proxy_set_header Host \$proxy_host;$", "", text, flags=re.MULTILINE)
    return text  # the upstream's port: nginx() below sets it, as for the plain recipe


@pytest.mark.parametrize("trusted_is_the_upstreams", [True, False], ids=["trusted", "impostor"])
def test_nginx_with_the_https_lines_refuses_an_upstream_it_cannot_verify(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted_is_the_upstreams: bool) -> None:
    cert, key = make_certificate(tmp_path, "upstream")
    other, _ = make_certificate(tmp_path, "other")
    with https_upstream(cert, key) as port:
        recipe = tmp_path / "recipe.conf"
        recipe.write_text(https_recipe(cert if trusted_is_the_upstreams else other))
        monkeypatch.setattr("tests.llm.test_relay.RECIPE", recipe)
        with nginx(port, tmp_path / "nginx", buffering=False) as base_url:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=10) as reply:
                    status = reply.status
            except urllib.error.HTTPError as exc:
                status = exc.code
        log = (tmp_path / "nginx" / "error.log").read_text()
    assert status == (200 if trusted_is_the_upstreams else 502), log
    if not trusted_is_the_upstreams:  # refused for its certificate, not for want of a server
        assert "certificate verify failed" in log or "upstream SSL certificate" in log, log
