"""Phone numbers in the one form the banking data stores (E.164, +1XXXXXXXXXX), whatever way they were typed."""

from __future__ import annotations

import re

_PHONE_CHARS = re.compile(r"\+?[\d\s().-]+")


def normalize_phone(s: str) -> str | None:
    """'555-123-4567', '+1 (555) 123-4567', '1-555-123-4567', … -> '+15551234567'; None if not a US number.

    Accepts digits with spaces, dots, dashes, parentheses and a leading '+'; the digits must be 10
    (a NANP number) or 11 starting with the country code 1.
    """
    s = s.strip()
    if not _PHONE_CHARS.fullmatch(s):
        return None
    digits = re.sub(r"\D", "", s)
    if len(digits) == 10:
        digits = "1" + digits
    if len(digits) != 11 or not digits.startswith("1"):
        return None
    return "+" + digits
