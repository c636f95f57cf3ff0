"""The Feed panel on opening, against a server that keeps its whole log: a mixin of
FeedHistoryTests (inspector_test.py), which writes the log these tests read."""

from selenium.webdriver.common.by import By


class FeedHistoryChecks:
    def visible_seqs(self):
        """Every seq erin's editor token sees, read forward from the beginning of the log."""
        seqs, since = [], ""
        while True:
            status, page, _ = self.server.request("GET", f"/v1/changes?limit=1000{since}")
            self.assertEqual(status, 200)
            seqs += [change["seq"] for change in page["changes"]]
            if not page["hasMore"]:
                return seqs
            since = f"&since={page['cursor']}"

    def test_the_feed_panel_opens_with_the_last_200_changes_then_follows(self):
        expected = self.visible_seqs()
        self.assertGreater(len(expected), 200)
        self.open_inspector(self.server.editor)
        self.assertEqual(self.feed_seqs(), expected[-200:][::-1], "the last 200 this token sees, newest first")
        feed = self.driver.find_element(By.ID, "feed").text
        self.assertIn("deleted Doomed lamp", feed)
        self.assertNotIn("olga-phone", feed)
        # Then live: a new change goes on top, and the panel keeps 200.
        item = self.server.create_item("After opening")
        self.wait(lambda: "After opening" in self.driver.find_element(By.CSS_SELECTOR, "#feed li").text, "the new change on top")
        seqs = self.feed_seqs()
        self.assertEqual(len(seqs), 200)
        self.assertEqual(seqs[1:], expected[-199:][::-1])
        self.assertEqual(len(set(seqs)), 200)
        self.assertEqual(self.console_errors(), [])
        self.server.request("DELETE", f"/v1/items/{item['id']}")
