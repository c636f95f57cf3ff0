"""The inspector page itself: it opens live, follows changes in place, recovers from a 410 and
from a snapshot it could not load, opens its Feed panel with the retained changes, and fits a
375 px window. A mixin of InspectorTests (inspector_test.py), which starts the server and the
items these tests read."""

import os
import sys
import time
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from browser_support import OUTPUT, WAIT


class PageTests:
    # -- the page ------------------------------------------------------------------------

    def test_page_loads_live_with_no_console_errors(self):
        self.open_inspector(self.server.editor)
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#item-rows tr")
        self.assertGreaterEqual(len(rows), 1000)
        self.assertEqual(len(rows), len(self.server.request("GET", "/v1/snapshot")[1]["items"]))
        self.assertEqual(self.driver.find_element(By.ID, "whoami").text, "erin (editor)")
        self.assertEqual(self.console_errors(), [])
        # The root page links to the inspector, and the page is served under a strict policy.
        with urllib.request.urlopen(self.server.base + "/") as response:
            self.assertIn('href="/inspector"', response.read().decode())
        with urllib.request.urlopen(self.server.base + "/inspector") as response:
            policy = response.headers["Content-Security-Policy"]
        self.assertIn("default-src 'none'", policy)
        self.assertIn("connect-src 'self'", policy)
        # First paint of 1,000 items, after a reload that signs in from sessionStorage: recorded, not asserted.
        self.driver.refresh()
        self.wait_live()
        paint = self.driver.execute_script(
            "const mark = performance.getEntriesByName('stockroom-snapshot-rendered')[0]; return mark && mark.startTime;")
        self.assertIsNotNone(paint)
        with open(os.path.join(OUTPUT, "first-paint.txt"), "w") as out:
            out.write(f"1000 items rendered {paint:.0f} ms after navigation start (reload, token from sessionStorage)\n")
        print(f"\n  first paint with 1,000 items: {paint:.0f} ms", file=sys.stderr)
        self.assertEqual(self.console_errors(), [])

    def test_a_change_made_with_curl_appears_in_the_table_and_the_device_card_in_place(self):
        self.open_inspector(self.server.editor)
        item = self.server.create_item("Desk lamp", 3)
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, f'#item-rows tr[data-id="{item["id"]}"]'), "the new item's row")
        # Tag every row's element: a re-rendered table would lose the tags.
        self.driver.execute_script("document.querySelectorAll('#item-rows tr').forEach((row) => { row.dataset.tag = 'kept'; });")
        status, updated, _ = self.server.request(
            "PUT", f"/v1/items/{item['id']}", {"name": "Desk lamp (brass)", "color": None, "status": {"inStock": {"quantity": 2}}},
            headers={"If-Match": '"1"'})
        self.assertEqual(status, 200)
        self.wait(lambda: "Desk lamp (brass)" in self.row(item["id"]).text, "the row shows the new name")
        self.assertIn("In stock: 2", self.row(item["id"]).text)
        untagged = self.driver.execute_script("return document.querySelectorAll('#item-rows tr:not([data-tag=kept])').length;")
        self.assertEqual(untagged, 0, "every row element, the changed one included, is the one that was there before")
        # A device that edits elsewhere: its card shows the open edit and the draft fields that differ.
        self.server.command("phone", {"openEdit": {"itemID": item["id"]}})
        self.server.command("phone", {"updateDraft": {"draft": {"name": "Desk lamp (green)", "color": None,
                                                                   "status": {"inStock": {"quantity": 2}}}}})
        self.wait(lambda: self.card("phone") is not None and "Desk lamp (green)" in self.card("phone").text, "the phone's card shows the draft")
        card = self.card("phone")
        self.assertIn("Edit Desk lamp (brass)", card.find_element(By.CSS_SELECTOR, '[data-field="destination"]').text)
        self.assertEqual(card.find_element(By.CSS_SELECTOR, 'tr[data-field="name"]').get_attribute("class"), "differs")
        self.assertEqual(card.find_element(By.CSS_SELECTOR, 'tr[data-field="status"]').get_attribute("class"), "")
        feed = self.driver.find_element(By.ID, "feed").text
        self.assertIn("from phone", feed)
        self.server.command("phone", {"cancel": {}})
        self.assertEqual(self.console_errors(), [])

    def test_410_shows_the_banner_and_the_page_recovers_from_a_new_snapshot(self):
        self.open_inspector(self.server.editor)
        cursor = self.driver.find_element(By.ID, "cursor").text
        # Keep the page away from the feed while the server restarts and the log moves on without it.
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/v1/changes/stream*"]})
        try:
            self.server.stop()
            self.server.start()
            missed = [self.server.create_item(f"Missed {index}") for index in range(8)]
            # Wait until retention has trimmed the page's position away.
            deadline = time.monotonic() + WAIT
            while self.server.request("GET", f"/v1/changes?since={cursor}")[0] != 410:
                self.assertLess(time.monotonic(), deadline, "the log was not trimmed")
                time.sleep(0.2)
        finally:
            self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        self.wait(lambda: self.driver.find_element(By.ID, "banner").is_displayed(), "the 410 banner")
        self.assertIn("410 resyncRequired", self.driver.find_element(By.ID, "banner-text").text)
        self.wait_live()
        for item in missed:
            self.assertTrue(self.driver.find_elements(By.CSS_SELECTOR, f'#item-rows tr[data-id="{item["id"]}"]'), item["name"])
        # And it follows the feed again.
        after = self.server.create_item("After the resync")
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, f'#item-rows tr[data-id="{after["id"]}"]'), "live again")

    def test_a_snapshot_that_cannot_be_loaded_says_so_and_loads_by_itself_once_reachable(self):
        self.driver.get(self.server.base + "/inspector")
        # Count the page's snapshot requests.
        self.driver.execute_script("""
            const original = window.fetch;
            window.snapshotRequests = 0;
            window.fetch = (input, init) => {
              if (String(input).startsWith("/v1/snapshot")) window.snapshotRequests++;
              return original(input, init);
            };""")
        # The token is checked (GET /v1/users/me), then every snapshot request fails before any answer.
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/v1/snapshot*"]})
        connection = self.driver.find_element(By.ID, "connection")
        try:
            self.driver.find_element(By.ID, "token").send_keys(self.server.editor)
            self.driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
            self.wait(lambda: "Could not load the snapshot" in connection.text, "the page says it could not load")
            self.assertEqual(connection.get_attribute("data-state"), "failed")
            self.assertIn("Retrying", connection.text)
            # It keeps trying (a retry that fails the same way says so again, and tries again).
            self.wait(lambda: self.driver.execute_script("return window.snapshotRequests;") >= 2, "a second try")
            self.wait(lambda: "Could not load the snapshot" in connection.text, "the second try fails the same way")
        finally:
            self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        self.wait_live()
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#item-rows tr")),
                         len(self.server.request("GET", "/v1/snapshot")[1]["items"]))
        # Chromium logs each blocked request; nothing else (no unhandled rejection).
        errors = [entry for entry in self.console_errors()
                  if not (entry["source"] == "network" and "/v1/snapshot" in entry["message"] and "ERR_BLOCKED_BY_CLIENT" in entry["message"])]
        self.assertEqual(errors, [])

    def test_screenshots_desktop_and_375px(self):
        self.server.command("phone", {"openEdit": {"itemID": self.keyboard["id"]}})
        self.server.command("phone", {"updateDraft": {"draft": {"name": "Keyboard (US layout)", "color": None,
                                                                   "status": {"inStock": {"quantity": 100}}}}})
        self.server.command("tablet", {"push": {"route": {"item": {"id": self.keyboard["id"]}}}})
        self.server.command("tablet", {"setCheckpoint": {"name": "keyboard"}})
        # A conflict alert too: laptop's edit goes stale under an item change.
        item = self.server.create_item("Screenshot chair", 4)
        self.server.command("laptop", {"openEdit": {"itemID": item["id"]}})
        self.server.command("laptop", {"updateDraft": {"draft": {"name": "Screenshot chair (red)", "color": None,
                                                                    "status": {"inStock": {"quantity": 4}}}}})
        self.server.request("PUT", f"/v1/items/{item['id']}", {"name": "Screenshot chair", "color": None, "status": {"inStock": {"quantity": 1}}})
        self.server.command("laptop", {"save": {"onConflict": "alert"}})
        self.driver.set_window_size(1280, 1500)
        self.open_inspector(self.server.editor)
        self.wait(lambda: self.card("phone") is not None and self.alert("laptop") is not None, "the phone's card and the laptop's alert")
        self.driver.save_screenshot(os.path.join(OUTPUT, "inspector-desktop.png"))
        self.driver.set_window_size(375, 812)
        width = self.driver.execute_script("return document.documentElement.scrollWidth;")
        self.assertLessEqual(width, 375, "nothing wider than the 375 px window")
        self.driver.save_screenshot(os.path.join(OUTPUT, "inspector-375.png"))
        alert = self.alert("laptop")
        self.driver.execute_script("arguments[0].scrollIntoView();", alert)
        for button in alert.find_elements(By.CSS_SELECTOR, ".alert-buttons button"):
            right = self.driver.execute_script("return arguments[0].getBoundingClientRect().right;", button)
            self.assertLessEqual(right, 375, f"{button.text} is inside the window")
        self.driver.save_screenshot(os.path.join(OUTPUT, "inspector-375-alert.png"))
        self.server.command("phone", {"cancel": {}})
        self.server.command("laptop", {"cancel": {}})

    def test_the_feed_panel_opens_with_the_retained_changes(self):
        # This server keeps 5 log entries, so the page's walk back from the snapshot stops at the
        # oldest one (since=oldest) and must find everything retained, and ask for nothing trimmed.
        self.server.create_item("Seen in the feed on opening", 2)
        # A trim between the page's first request and its window's would answer 410 (see below).
        self.server.wait_trimmed()
        self.open_inspector(self.server.editor)
        seqs = self.feed_seqs()
        self.assertGreaterEqual(len(seqs), 5, "every retained change (the newest 5 are never trimmed)")
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] - len(seqs), -1)), "newest first, no gap, no repeat")
        top = self.driver.find_element(By.CSS_SELECTOR, "#feed li")
        self.assertEqual(top.find_element(By.CLASS_NAME, "seq").get_attribute("title"), self.driver.find_element(By.ID, "cursor").text,
                         "the newest entry is the snapshot's position")
        self.assertIn("Seen in the feed on opening", top.text)
        severe = [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]
        self.assertEqual(severe, [], "not even a 410: the walk back starts at since=oldest")

    def test_a_trim_during_the_walk_back_sends_the_feed_panel_to_the_new_oldest(self):
        self.server.wait_trimmed()
        self.driver.get(self.server.base + "/inspector")
        # Hold the walk back's first window (the request after since=oldest) until a trim has run.
        self.driver.execute_script("""
            const original = window.fetch;
            window.releaseWindow = null;
            const held = new Promise((resolve) => { window.releaseWindow = resolve; });
            window.fetch = async (input, init) => {
              if (!window.windowHeld && String(input).includes("/v1/changes?since=c1.")) {
                window.windowHeld = true;
                await held;
              }
              return original(input, init);
            };""")
        self.driver.find_element(By.ID, "token").send_keys(self.server.editor)
        self.driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
        self.wait(lambda: self.driver.execute_script("return window.windowHeld === true;"), "the first window is asked for")
        newer = [self.server.create_item(f"Written during the walk back {index}") for index in range(2)]
        self.server.wait_trimmed()
        self.driver.execute_script("window.releaseWindow();")
        self.wait_live()
        self.wait(lambda: len(self.feed_seqs()) >= 5, "the retained changes and the two written meanwhile")
        seqs = self.feed_seqs()
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] - len(seqs), -1)), "newest first, no gap, no repeat")
        self.assertIn(newer[-1]["name"], self.driver.find_element(By.CSS_SELECTOR, "#feed li").text)
        self.assertFalse(self.driver.find_element(By.ID, "banner").is_displayed(), "no resync: only the walk back met the trim")

    def test_forget_token_is_a_quiet_link_and_the_primary_actions_lead(self):
        self.open_inspector(self.server.editor)
        style = lambda element, name: self.driver.execute_script("return getComputedStyle(arguments[0])[arguments[1]];", element, name)
        forget = self.driver.find_element(By.ID, "sign-out")
        create = self.driver.find_element(By.CSS_SELECTOR, "#create-form button[type=submit]")
        self.assertTrue(forget.is_displayed())
        self.assertEqual(style(forget, "backgroundColor"), "rgba(0, 0, 0, 0)", "no fill")
        self.assertEqual(style(forget, "borderTopColor"), "rgba(0, 0, 0, 0)", "no border")
        self.assertEqual(style(forget, "textDecorationLine"), "underline", "a link's look")
        self.assertNotEqual(style(create, "backgroundColor"), "rgba(0, 0, 0, 0)", "the primary button is filled")
        self.assertNotEqual(style(forget, "color"), style(create, "backgroundColor"), "not the primary colour")

    def test_an_out_of_stock_draft_shows_no_quantity(self):
        item = self.server.create_item("Umbrella", 4)
        self.server.command("shelf", {"openEdit": {"itemID": item["id"]}})
        self.server.command("shelf", {"updateDraft": {"draft": {"name": "Umbrella", "color": None,
                                                                   "status": {"outOfStock": {"isOnBackOrder": False}}}}})
        try:
            self.open_inspector(self.server.editor)
            self.wait(lambda: self.card("shelf") is not None and self.card("shelf").find_elements(By.CSS_SELECTOR, ".draft-quantity"), "the shelf's draft form")
            card = self.card("shelf")
            self.assertEqual(card.find_element(By.CSS_SELECTOR, 'tr[data-field="status"] td').text, "Out of stock")
            self.assertFalse(card.find_element(By.CSS_SELECTOR, ".draft-quantity").is_displayed())
            self.assertNotIn("Quantity", card.text)
            self.assertTrue(card.find_element(By.CSS_SELECTOR, ".draft-backorder").is_displayed())
            # Choosing "In stock" in the form brings the quantity back (and hides back order).
            Select(card.find_element(By.CSS_SELECTOR, ".draft-stock")).select_by_value("inStock")
            self.assertTrue(card.find_element(By.CSS_SELECTOR, ".draft-quantity").is_displayed())
            self.assertFalse(card.find_element(By.CSS_SELECTOR, ".draft-backorder").is_displayed())
            self.assertEqual(self.console_errors(), [])
        finally:
            self.server.command("shelf", {"cancel": {}})

    def test_at_375px_the_items_table_fits_and_shows_status_and_version(self):
        self.driver.set_window_size(375, 812)
        self.open_inspector(self.server.editor)
        viewport = self.driver.execute_script("return window.innerWidth;")
        self.assertLessEqual(viewport, 400, "the window really is narrow")
        wrap = self.driver.find_element(By.CSS_SELECTOR, ".table-wrap")
        scroll, client = self.driver.execute_script("return [arguments[0].scrollWidth, arguments[0].clientWidth];", wrap)
        self.assertLessEqual(scroll, client, "the table needs no sideways scroll")
        self.assertLessEqual(self.driver.execute_script("return document.documentElement.scrollWidth;"), viewport)
        row = self.row(self.keyboard["id"])
        self.driver.execute_script("arguments[0].scrollIntoView();", row)
        for column, expected in ((3, "In stock: 100"), (4, "1")):
            cell = row.find_element(By.CSS_SELECTOR, f":scope > :nth-child({column})")
            self.assertTrue(cell.is_displayed())
            self.assertIn(expected, cell.text)
            left, right = self.driver.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.right];", cell)
            self.assertGreaterEqual(left, 0)
            self.assertLessEqual(right, viewport, f"column {column} is inside the window")
        self.driver.save_screenshot(os.path.join(OUTPUT, "inspector-375-items.png"))
