"""The table is the law: a handler that leads where its rule does not allow is refused."""

from __future__ import annotations

import pytest
from ballet.core.events import ChecksStarted
from ballet.core.machine import TABLE, Rule, TableViolation, advance
from ballet.core.tx import Tx
from core_kit import Ticket


def test_every_rule_leads_only_to_statuses_that_exist() -> None:
    statuses = {"running", "waiting", "paused", "done", "failed", "cancelled"}
    for (before, kind), rule in TABLE.items():
        assert set(rule.to) <= statuses, (before, kind)


def test_a_handler_leading_outside_its_rule_is_refused_before_anything_is_saved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = Ticket()
    assert t.rec.status == "running"
    before = t.rec

    def rogue(tx: Tx, event: ChecksStarted) -> None:
        tx.set(status="done")  # "remember checks" may never finish a ticket

    monkeypatch.setitem(TABLE, ("running", "checks_started"), Rule(rogue, ("running",), "rogue"))
    with pytest.raises(TableViolation, match="checks_started led a running ticket to done"):
        advance(before, ChecksStarted(now=t.now(), head_sha="s1"))
    assert t.rec == before  # the record the caller holds is untouched
