"""The item filter of the Items and Feed panels: a mixin of FilterTests (inspector_test.py),
against a server of its own."""

import json

from selenium.webdriver.common.by import By


class FilterChecks:
    def rows(self):
        return sorted(row.get_attribute("data-id") for row in self.driver.find_elements(By.CSS_SELECTOR, "#item-rows tr"))

    def top_change(self):
        return self.driver.find_element(By.CSS_SELECTOR, "#feed li").text

    def put(self, item, quantity):
        status, _, _ = self.server.request(
            "PUT", f"/v1/items/{item['id']}", {"name": item["name"], "color": None, "status": {"inStock": {"quantity": quantity}}})
        self.assertEqual(status, 200)

    def test_a_filter_shows_the_matching_items_and_marks_moves(self):
        low = self.server.create_item("Low cable", 2)
        high = self.server.create_item("High lamp", 50)
        self.open_inspector(self.server.editor)
        self.wait(lambda: {low["id"], high["id"]} <= set(self.rows()), "every item before a filter")

        box = self.driver.find_element(By.ID, "filter")
        box.send_keys("quantity <= 5")
        self.driver.find_element(By.CSS_SELECTOR, "#filter-form button[type=submit]").click()
        self.wait(lambda: high["id"] not in self.rows() and low["id"] in self.rows(), "only the matching items")
        self.assertTrue(self.driver.find_element(By.ID, "feed-filter").is_displayed())
        self.assertEqual(self.driver.find_element(By.ID, "feed-filter-text").text, "quantity <= 5")

        # The lamp moves in, the cable moves out: rows follow, and the Feed panel marks both.
        self.put(high, 3)
        self.wait(lambda: high["id"] in self.rows(), "the lamp moved in")
        self.wait(lambda: "moved in" in self.top_change() and "High lamp" in self.top_change(), "a move in on top of the feed")
        self.put(low, 9)
        self.wait(lambda: low["id"] not in self.rows(), "the cable moved out")
        self.wait(lambda: "moved out" in self.top_change() and "Low cable" in self.top_change(), "a move out on top of the feed")
        moves = [span.get_attribute("data-move") for span in self.driver.find_elements(By.CSS_SELECTOR, "#feed li .move")]
        self.assertEqual(moves[:2], ["out", "in"])

        # A bad filter is the server's 422, shown under the box; the page keeps its filter.
        box.clear()
        box.send_keys("quantity <")
        self.driver.find_element(By.CSS_SELECTOR, "#filter-form button[type=submit]").click()
        self.wait(lambda: "at character 11" in self.driver.find_element(By.ID, "filter-error").text, "the position of the error")
        self.assertEqual(self.driver.find_element(By.ID, "feed-filter-text").text, "quantity <= 5")

        # Show all: the cable comes back without a reload, and the page stays live.
        self.driver.find_element(By.ID, "filter-clear").click()
        self.wait(lambda: {low["id"], high["id"]} <= set(self.rows()), "every item again")
        self.assertFalse(self.driver.find_element(By.ID, "feed-filter").is_displayed())
        self.wait_live()
        errors = [entry for entry in self.console_errors()
                  if not (entry["source"] == "network" and "/v1/snapshot?" in entry["message"] and "status of 422" in entry["message"])]
        self.assertEqual(errors, [], json.dumps(errors))

    def test_apply_while_the_server_cannot_be_reached_says_so_under_the_box(self):
        low = self.server.create_item("Unreached cable", 2)
        high = self.server.create_item("Unreached lamp", 50)
        self.open_inspector(self.server.editor)
        self.wait(lambda: {low["id"], high["id"]} <= set(self.rows()), "every item before a filter")
        before = self.rows()
        box = self.driver.find_element(By.ID, "filter")
        box.send_keys("quantity <= 5")
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/v1/snapshot*"]})
        try:
            self.driver.find_element(By.CSS_SELECTOR, "#filter-form button[type=submit]").click()
            error = self.driver.find_element(By.ID, "filter-error")
            self.wait(lambda: "could not be applied" in error.text, "the error under the box")
            self.assertIn("cannot be reached", error.text)
            # The page keeps what it had: no filter, every item, still live.
            self.assertFalse(self.driver.find_element(By.ID, "feed-filter").is_displayed())
            self.assertEqual(self.rows(), before)
            self.assertEqual(self.driver.find_element(By.ID, "connection").get_attribute("data-state"), "live")
        finally:
            self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        # Reachable again: Apply applies it, and the error goes.
        self.driver.find_element(By.CSS_SELECTOR, "#filter-form button[type=submit]").click()
        self.wait(lambda: high["id"] not in self.rows() and low["id"] in self.rows(), "only the matching items")
        self.assertEqual(self.driver.find_element(By.ID, "filter-error").text, "")
        self.wait_live()
        errors = [entry for entry in self.console_errors()
                  if not (entry["source"] == "network" and "/v1/snapshot?" in entry["message"] and "ERR_BLOCKED_BY_CLIENT" in entry["message"])]
        self.assertEqual(errors, [], json.dumps(errors))
