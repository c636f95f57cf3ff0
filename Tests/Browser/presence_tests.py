"""Each device's presence on its card: open now while its feed is open, else when it was last seen,
and a device unseen for the retention removed. A mixin of PresenceTests (inspector_test.py)."""

import os
import sqlite3
import time

from selenium.webdriver.common.by import By

from browser_support import OUTPUT, FeedStream


class PresenceChecks:
    def presence(self, client):
        """The presence badge on the device's card: (text, data-online, title), or None."""
        card = self.card(client)
        badges = card.find_elements(By.CSS_SELECTOR, '[data-field="presence"]') if card else []
        if not badges:
            return None
        return badges[0].text, badges[0].get_attribute("data-online"), badges[0].get_attribute("title")

    def wait_presence(self, client, condition, message):
        self.wait(lambda: (lambda p: p is not None and condition(*p))(self.presence(client)), message)
        return self.presence(client)

    def test_a_device_shows_open_now_while_its_feed_is_open_then_last_seen(self):
        self.open_inspector(self.server.editor)
        # A device writes its navigation: its card appears, seen by its command (written down
        # by the server within a second or so), or never seen until then.
        self.server.command("kiosk", {"selectTab": {"tab": "settings"}})
        text, online, _ = self.wait_presence("kiosk", lambda text, online, title: text in ("never seen",) or text.startswith("last seen"),
                                             "the kiosk's card says when it was seen")
        self.assertEqual(online, "false")
        text, online, title = self.wait_presence("kiosk", lambda text, online, title: text.startswith("last seen"), "seen by its command")
        self.assertEqual((text, online), ("last seen just now", "false"))
        seen = self.navigation("kiosk")["lastSeenAt"]
        self.assertIsNotNone(seen)
        self.assertIn(seen, title, "the exact time in the title")
        # Its feed opens: "open now", live; it closes: last seen again.
        stream = FeedStream(self.server, "kiosk")
        try:
            text, online, title = self.wait_presence("kiosk", lambda text, online, title: text == "open now", "open now")
            self.assertEqual(online, "true")
            badge = self.card("kiosk").find_element(By.CSS_SELECTOR, '[data-field="presence"]')
            self.assertEqual(self.driver.execute_script("return getComputedStyle(arguments[0], '::before').backgroundColor;", badge),
                             "rgb(23, 108, 47)", "a green dot")
            self.wait(lambda: "kiosk: open now" in self.driver.find_element(By.ID, "feed").text, "the presence change in the Feed panel")
            self.assertTrue(self.navigation("kiosk")["online"])
        finally:
            stream.close()
        text, online, title = self.wait_presence("kiosk", lambda text, online, title: text.startswith("last seen"), "last seen after closing")
        self.assertEqual(online, "false")
        self.assertIn(self.navigation("kiosk")["lastSeenAt"], title)
        self.assertIn("kiosk: closed", self.driver.find_element(By.ID, "feed").text)
        # A device written but never seen (a PUT of its navigation is no command or feed request).
        status, _, _ = self.server.request("PUT", "/v1/clients/shelf-unit/navigation", {"tab": "inventory", "path": [], "destination": None})
        self.assertEqual(status, 200)
        self.wait_presence("shelf-unit", lambda text, online, title: text == "never seen" and online == "false", "never seen")
        self.assertEqual(self.console_errors(), [])
        # On opening, the page reads the same from the server; at 375 px the card still fits.
        self.driver.set_window_size(375, 812)
        self.driver.refresh()
        self.wait_live()
        self.assertTrue(self.presence("kiosk")[0].startswith("last seen"))
        self.assertEqual(self.presence("shelf-unit")[0], "never seen")
        self.assertLessEqual(self.driver.execute_script("return document.documentElement.scrollWidth;"),
                             self.driver.execute_script("return window.innerWidth;"))
        stream = FeedStream(self.server, "kiosk")
        try:
            self.wait_presence("kiosk", lambda text, online, title: text == "open now", "open now at 375 px")
            self.driver.execute_script("arguments[0].scrollIntoView();", self.card("kiosk"))
            self.driver.save_screenshot(os.path.join(OUTPUT, "inspector-375-presence.png"))
        finally:
            stream.close()
        self.wait_presence("kiosk", lambda text, online, title: text.startswith("last seen"), "last seen again")
        self.assertEqual(self.console_errors(), [])
        # The page follows presence without naming a device: it is not one, so only the kiosk came and went.
        status, page, _ = self.server.request("GET", "/v1/changes?topics=presence&limit=1000")
        self.assertEqual(status, 200)
        self.assertEqual({change["id"] for change in page["changes"]}, {"kiosk"})

    def test_a_device_unseen_for_the_retention_is_removed_and_its_card_goes(self):
        self.server.command("old-phone", {"selectTab": {"tab": "settings"}})
        self.server.command("attic-tablet", {"selectTab": {"tab": "settings"}})
        self.open_inspector(self.server.editor)
        self.wait(lambda: self.card("old-phone") is not None and self.card("attic-tablet") is not None, "both cards")
        # Age both devices while the server is down: old-phone past limits.deviceRetentionDays
        # (90 by default), attic-tablet three days. The server removes old-phone when it starts.
        self.server.stop()
        day = 24 * 3600 * 1000
        now = int(time.time() * 1000)
        with sqlite3.connect(self.server.db) as db:
            for client, age in (("old-phone", 100 * day), ("attic-tablet", 3 * day + 3600 * 1000)):
                db.execute("UPDATE clients SET updated_at = ? WHERE client_id = ?", (now - age, client))
                db.execute("UPDATE devices_seen SET last_seen_at = ? WHERE client_id = ?", (now - age, client))
        db.close()
        self.server.start()
        # The page follows the feed again by itself and removes the card on the navigation delete.
        self.wait(lambda: self.card("old-phone") is None, "the old phone's card goes")
        self.assertIn("old-phone removed", self.driver.find_element(By.ID, "feed").text)
        self.assertNotIn("old-phone", [o.get_attribute("value") for o in self.driver.find_elements(By.CSS_SELECTOR, "#device-list option")])
        self.assertEqual(self.server.request("GET", "/v1/clients/old-phone/navigation")[1]["version"], 0, "gone on the server too")
        self.assertIsNotNone(self.card("attic-tablet"))
        # Opened anew, the page reads attic-tablet's last sighting.
        self.driver.refresh()
        self.wait_live()
        self.assertIsNone(self.card("old-phone"))
        text, online, title = self.presence("attic-tablet")
        self.assertEqual((text, online), ("last seen 3 days ago", "false"))
        self.assertIn(self.navigation("attic-tablet")["lastSeenAt"], title)
        self.assertEqual(self.console_errors(), [])
