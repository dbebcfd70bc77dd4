"""The README's "Errors and retries" names every code the client raises, and which are retryable
(offline: it reads the page and the package)."""

from __future__ import annotations

import re
import unittest
from pathlib import Path

from agent_audit import AUDIT_ERROR_CODES, TRANSPORT_ERROR

README = Path(__file__).resolve().parents[1] / "README.md"


def bullet(name: str) -> str:
    """The text of the README's "Errors and retries" bullet about ``name``."""
    section = README.read_text(encoding="utf-8").split("## Errors and retries", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"^- `{name}`:(.*?)(?=^- |^$)", section, re.MULTILINE | re.DOTALL)
    assert found, f"no bullet for {name}"
    return found.group(1)


class ReadmeErrorsTest(unittest.TestCase):
    def test_the_code_bullet_names_every_code(self) -> None:
        text = bullet("code")
        for code in (*AUDIT_ERROR_CODES, TRANSPORT_ERROR):
            self.assertIn(f"`{code}`", text)

    def test_the_retryable_bullet_names_unavailable_with_its_retry_after(self) -> None:
        # AuditApiError(code="UNAVAILABLE") is retryable, and retried by the client after its Retry-After.
        text = bullet("retryable")
        self.assertIn("`UNAVAILABLE`", text)
        self.assertIn("`retry_after`", text)


if __name__ == "__main__":
    unittest.main()
