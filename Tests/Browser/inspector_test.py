#!/usr/bin/env python3
"""Browser tests: headless Chromium (Debian's chromium and chromium-driver, driven by selenium)
against a live `stockroom serve` that the tests start themselves.

    python3 Tests/Browser/inspector_test.py            # after `swift build` (uses .build/debug/stockroom)
    STOCKROOM_BIN=path/to/stockroom python3 Tests/Browser/inspector_test.py

Screenshots and the timing of the first paint go to BROWSER_TEST_OUTPUT (default
.build/browser-test-output).
"""

import os
import sys
import unittest

from action_tests import ActionTests
from browser_support import BINARY, OUTPUT, BrowserCase, InspectorHelpers, Server, StaticSite
from feed_history_tests import FeedHistoryChecks
from filter_tests import FilterChecks
from origin_tests import OriginTests
from page_tests import PageTests
from presence_tests import PresenceChecks
from transfer_tests import TransferChecks

# The fixtures are in browser_support.py; the tests in page_tests.py, action_tests.py, origin_tests.py,
# feed_history_tests.py, presence_tests.py and filter_tests.py, mixins of the test cases below (each with the
# server its tests share).


class InspectorTests(PageTests, ActionTests, OriginTests, InspectorHelpers, BrowserCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(OUTPUT, exist_ok=True)
        cls.site = StaticSite()
        cls.server = Server(cors_origins=[f"http://127.0.0.1:{cls.site.port}"])
        cls.keyboard = cls.server.create_item("Keyboard", 100)
        # 1,000 items in all, so that first paint and in-place updates are measured at that size.
        for index in range(999):
            cls.server.create_item(f"Item {index:04d}", index)


class FeedHistoryTests(FeedHistoryChecks, InspectorHelpers, BrowserCase):
    """The Feed panel on opening, against a server that keeps its whole log."""

    @classmethod
    def setUpClass(cls):
        os.makedirs(OUTPUT, exist_ok=True)
        cls.server = Server(cors_origins=[], retention_entries=None)
        olga = cls.server.token("editor", user="olga")
        # 250 changes erin's token may see, with another user's navigation changes (which it may
        # not) in between, and a delete whose item was created within the last 200.
        tabs = ["settings", "inventory"]
        for index in range(130):
            cls.server.create_item(f"Shelf item {index:03d}")
            if index % 2 == 0:
                cls.server.command("olga-phone", {"selectTab": {"tab": tabs[index // 2 % 2]}}, token=olga)
        doomed = cls.server.create_item("Doomed lamp")
        for index in range(118):
            cls.server.command("phone", {"selectTab": {"tab": tabs[index % 2]}})
        status, _, _ = cls.server.request("DELETE", f"/v1/items/{doomed['id']}")
        assert status == 204, status


class PresenceTests(PresenceChecks, InspectorHelpers, BrowserCase):
    """Each device's presence on its card, against a server of its own (one test restarts it)."""

    @classmethod
    def setUpClass(cls):
        os.makedirs(OUTPUT, exist_ok=True)
        cls.server = Server(cors_origins=[], retention_entries=None)


class FilterTests(FilterChecks, InspectorHelpers, BrowserCase):
    """The item filter of the Items and Feed panels, against a server of its own."""

    @classmethod
    def setUpClass(cls):
        os.makedirs(OUTPUT, exist_ok=True)
        cls.server = Server(cors_origins=[], retention_entries=None)



class TransferTests(TransferChecks, InspectorHelpers, BrowserCase):
    """The Items panel's Export and Import, against a server of its own."""

    @classmethod
    def setUpClass(cls):
        os.makedirs(OUTPUT, exist_ok=True)
        cls.server = Server(cors_origins=[], retention_entries=None)


if __name__ == "__main__":
    if not os.path.exists(BINARY):
        sys.exit(f"{BINARY} is missing: run `swift build` first, or set STOCKROOM_BIN")
    unittest.main(verbosity=2)
