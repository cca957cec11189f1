"""The Redactor: declared values in every form they are printed in, token-shaped
strings of any origin, and ordinary text left alone."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest
from ballet.core.report import Question, Report
from ballet.sessionlog.redact import Redactor
from ballet.sessions.redaction import redacted_report, session_redactor
from session_logs import planted_key

TOKENS = {
    "github-token": [
        "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
        "ghs_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8N",
        "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdefghijklmnopqrstuvwxyzAB",
    ],
    "openai-key": [
        "sk-" + "T3BlbkFJ" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7d",
        "sk-proj-" + "Ab12_Cd34-Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34Yz56",
    ],
    "anthropic-key": ["sk-ant-api03-" + "Xy12Zw34_Ab56-Cd78Ef90Gh12Ij34Kl56Mn78Op90Qr12St34"],
    "google-api-key": ["AIza" + "SyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v"],
    "aws-access-key": ["AKIA" + "IOSFODNN7EXAMPLE", "ASIA" + "Y34FZKBOKMUTVV7A"],
    "slack-token": ["xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"],
}
ORDINARY = [
    "risk-assessment-for-the-new-feature-branch-name",
    "ballet/7-add-task-list-view-for-users-and-admins",
    "commit 3f5e8a9b2c1d4e6f7a8b9c0d1e2f3a4b5c6d7e8f",
    "id 0f8fad5b-d9cb-469f-a165-70867728950e",
    "the highest thing through the right ghost",
    "toolu_01AbCdEfGhIjKlMnOpQrStUv and session_id abcdef",
    "ASIAN food; AKIAB; AIzaWord",
    "-----BEGIN CERTIFICATE----- is public",
]


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_token_shaped_strings_are_redacted_by_kind(kind: str) -> None:
    redactor = Redactor()
    for token in TOKENS[kind]:
        text = f'found "{token}" in the env\n'
        assert redactor.redact(text) == f'found "[redacted:{kind}]" in the env\n'


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor({"SOME_KEY": planted_key()}).redact(text) == text


def test_a_declared_value_is_redacted_in_every_form_it_is_printed_in() -> None:
    key = planted_key() + "/+="  # characters that JSON, URLs and base64 treat apart
    redactor = Redactor({"PLANTED_KEY": key})
    printed = [
        key,
        json.dumps({"v": key}),
        quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(b"x" + key.encode()).decode(),
        base64.b64encode(b"xy:" + key.encode() + b"tail").decode(),
        base64.urlsafe_b64encode(b"ab" + key.encode()).decode(),
    ]
    for text in printed:
        shown = redactor.redact(f"value: {text} end")
        assert "[redacted:PLANTED_KEY]" in shown, text
        assert key[2:-4] not in shown
        assert redactor.contains_secret(text.encode()) == "PLANTED_KEY"
    assert redactor.contains_secret(b"nothing here") is None


def test_a_value_of_several_lines_is_redacted_line_by_line() -> None:
    pem = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\noUOxEUn5ZYj+\n"
    redactor = Redactor({"DEPLOY_KEY": pem + "-----END EC PRIVATE KEY-----\n"})
    shown = redactor.redact(f"cat key.pem\n{pem}")
    assert "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5" not in shown
    assert "oUOxEUn5ZYj+" not in shown
    assert shown.startswith("cat key.pem\n")


def test_a_private_key_on_one_line_as_json_prints_it_is_redacted() -> None:
    event = json.dumps(
        {"output": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nok"}
    )
    shown = Redactor().redact(event)
    assert "MIIEow" not in shown and "[redacted:private-key]" in shown and "nok" in shown


def test_short_values_are_not_redacted_and_are_named() -> None:
    redactor = Redactor({"REGION": "eu", "PIN": "1234567", "PLANTED_KEY": planted_key()})
    assert redactor.too_short == ("REGION", "PIN")
    assert redactor.names == ("PLANTED_KEY",)
    assert redactor.redact("eu 1234567") == "eu 1234567"


def test_the_longer_of_two_overlapping_values_wins() -> None:
    long = planted_key()
    short = long[:20]
    redactor = Redactor({"SHORT": short, "LONG": long})
    assert redactor.redact(long) == "[redacted:LONG]"
    assert redactor.redact(short + "!") == "[redacted:SHORT]!"


def test_a_session_redacts_its_declared_variables_the_workers_credentials_and_the_token() -> None:
    key, token = planted_key(), "ghs_" + planted_key()
    worker = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PLANTED_KEY": key,
        "BALLET_WEBHOOK_SECRET": "whsec-do-not-leak",
        "REDIS_URL": "redis://:hunter2hunter2@valkey:6379/0",
        "BALLET_GITHUB_API_URL": "https://api.github.com",
        "BALLET_DATA_DIR": "/var/lib/ballet-data",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    redactor = session_redactor(worker, ("PLANTED_KEY", "NOT_SET"), token)
    shown = redactor.redact(
        f"{key} whsec-do-not-leak {worker['REDIS_URL']} {token}"
        f" {worker['AWS_SECRET_ACCESS_KEY']} https://api.github.com /var/lib/ballet-data"
    )
    assert shown == (
        "[redacted:PLANTED_KEY] [redacted:BALLET_WEBHOOK_SECRET] [redacted:REDIS_URL]"
        " [redacted:BALLET_GIT_TOKEN] [redacted:AWS_SECRET_ACCESS_KEY]"
        " https://api.github.com /var/lib/ballet-data"
    )


def test_every_string_of_a_report_is_redacted_and_its_outcome_stays_valid() -> None:
    key = planted_key()
    report = Report(
        outcome=key,
        summary=f"used {key}",
        details=key,
        decisions=(key,),
        constraints=(key,),
        open_questions=(key,),
        questions=(Question(text=key, blocking=True),),
        require_signoffs=(key,),
    )
    clean = redacted_report(report, Redactor({"PLANTED_KEY": key}))
    assert key not in clean.model_dump_json()
    assert clean.summary == "used [redacted:PLANTED_KEY]"
    assert clean.questions[0].blocking is True
