"""The model gateway: sessions reach their model provider through Ballet, which holds
the keys, meters every answer and enforces the spend caps (server.py)."""

from ballet.core.provider_keys import UpstreamsError, parse_upstreams
from ballet.sessions.gateway.metering import AnswerMeter, Metering, ProviderMetering
from ballet.sessions.gateway.server import GatewaySession, ModelGateway
from ballet.sessions.gateway.terms import Ledger, MonthlyCaps, SessionTerms
from ballet.sessions.gateway.upstream import PUBLIC_APIS

__all__ = [
    "PUBLIC_APIS",
    "AnswerMeter",
    "GatewaySession",
    "Ledger",
    "Metering",
    "ModelGateway",
    "MonthlyCaps",
    "ProviderMetering",
    "SessionTerms",
    "UpstreamsError",
    "parse_upstreams",
]
