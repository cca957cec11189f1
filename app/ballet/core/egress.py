"""Egress destinations: what a confined session may reach through Ballet's proxy.

One rule is `host` or `host:port` (port 443 when absent); a host is a DNS name,
a `*.`-prefixed name matching its subdomains, or an IP literal (IPv6 in
brackets). A repository's rules (`egress:` in `.ballet.yml`) may name public
destinations only: loopback, private, link-local and other special addresses
are refused here as literals, and by the proxy when a name resolves to one.
Only the operator's rules (`BALLET_SESSION_EGRESS_ALLOW`) may reach them.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

DEFAULT_PORT = 443
# RFC 1123 labels; a leading `*.` matches any subdomain (not the name itself).
_NAME = re.compile(
    r"^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
)
# Names that always mean this machine or its private network, whatever DNS says.
_LOCAL_NAMES = ("localhost", ".localhost", ".local", ".internal", ".home.arpa")


class EgressRuleError(ValueError):
    """An egress entry cannot be used; the message says what to write instead."""


@dataclass(frozen=True)
class EgressRule:
    host: str  # lower case; IPv6 without brackets
    port: int
    trusted: bool = False  # the operator's: may reach non-public addresses

    def matches(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        if port != self.port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_rule(text: str, *, trusted: bool = False) -> EgressRule:
    """`host[:port]` as a rule; a public rule refuses local and private destinations."""
    host, port = split_host_port(text.strip())
    literal = ip_literal(host)
    if literal is None and not _NAME.match(host):
        raise EgressRuleError(
            f"{text!r} is not a host name, `*.domain` or IP address with an optional :port "
            "(e.g. pypi.org or files.pythonhosted.org:443)"
        )
    if not trusted:
        if literal is not None and not is_public(literal):
            raise EgressRuleError(
                f"{text!r} is a loopback, private or link-local address, which a repository "
                "may not open to its sessions; the operator can, with BALLET_SESSION_EGRESS_ALLOW"
            )
        if host == "localhost" or host.endswith(_LOCAL_NAMES):
            raise EgressRuleError(
                f"{text!r} names this machine or a private network, which a repository may not "
                "open to its sessions; the operator can, with BALLET_SESSION_EGRESS_ALLOW"
            )
    return EgressRule(host, port, trusted)


def split_host_port(text: str) -> tuple[str, int]:
    """`host`, `host:port`, `[v6]` or `[v6]:port`, lower-cased, with the port checked."""
    text = text.lower().rstrip(".")
    port_text = ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise EgressRuleError(f"{text!r}: expected [address]:port")
            port_text = rest[1:]
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host = text  # a name, or a bare IPv6 address
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise EgressRuleError(f"{text!r}: the port must be a number from 1 to 65535")
    return host, int(port_text)


def ip_literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Globally routable: not loopback, private, link-local, multicast or reserved.
    An IPv4-mapped IPv6 address is judged as the IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def is_loopback_host(host: str) -> bool:
    literal = ip_literal(host)
    return host == "localhost" if literal is None else literal.is_loopback
