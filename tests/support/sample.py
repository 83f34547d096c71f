"""A sample of the suite for slow builds (.ci/sanitize's sanitizer build): with
``KDUMP_TEST_SAMPLE=N`` each parametrized test keeps every Nth case (its first always) and each
hypothesis test runs about 1/N of its examples (5 at least). Unset, every test runs in full."""

from __future__ import annotations

import os

from hypothesis import settings

SAMPLE = int(os.environ.get("KDUMP_TEST_SAMPLE", "1") or 1)


def sample(items: list) -> list:
    if SAMPLE <= 1:
        return items
    kept, seen = [], {}
    for item in items:
        key = (item.path, getattr(item, "originalname", item.name))
        n = seen[key] = seen.get(key, -1) + 1
        if n % SAMPLE == 0:
            kept.append(item)
        inner = getattr(item, "obj", None)
        own = getattr(inner, "_hypothesis_internal_use_settings", None)
        if own is not None:
            inner._hypothesis_internal_use_settings = settings(own, max_examples=max(5, own.max_examples // SAMPLE))
    return kept
