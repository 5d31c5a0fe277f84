"""Is a URL's host this machine's loopback?  Decides who may be sent what: no proxy for it
(:mod:`app.llm.loopback`), and no key that was exported for a provider
(:mod:`app.platform.secrets`)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine's loopback: ``localhost``, 127.0.0.0/8,
    ``::1`` (or an IPv4-mapped 127.x).  Other names are never resolved here: a name that
    the resolver maps to 127.0.0.1 is still the proxy's to reach, as the user set it."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback
