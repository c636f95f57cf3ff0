"""What the inspector sends: edits, saves and deletes from the page, the alerts a device has open
(delete and conflict) and their buttons, the URL copied, what a viewer token may do, devices
named like the page's own ids, and the Open form's item choices. A mixin of InspectorTests
(inspector_test.py)."""

import json
import urllib.parse

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select


class ActionTests:
    # -- actions and alerts --------------------------------------------------------------

    def test_open_an_edit_change_the_draft_and_save_from_the_page(self):
        self.open_inspector(self.server.editor)
        item = self.server.create_item("Monitor", 7)
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, f'#open-item option[value="{item["id"]}"]'), "the item is offered")
        device = self.driver.find_element(By.ID, "open-device")
        device.clear()
        device.send_keys("tablet")
        Select(self.driver.find_element(By.ID, "open-item")).select_by_value(item["id"])
        Select(self.driver.find_element(By.ID, "open-what")).select_by_value("openEdit")
        self.driver.find_element(By.CSS_SELECTOR, "#open-form button[type=submit]").click()
        self.wait(lambda: self.card("tablet") is not None and self.card("tablet").find_elements(By.CSS_SELECTOR, ".draft-name"), "the tablet's draft form")
        name = self.card("tablet").find_element(By.CSS_SELECTOR, ".draft-name")
        name.clear()
        name.send_keys("Monitor 27in")
        self.card("tablet").find_element(By.CSS_SELECTOR, "form.draft-form button[type=submit]").click()
        self.wait(lambda: self.card("tablet").find_element(By.CSS_SELECTOR, 'tr[data-field="name"]').get_attribute("class") == "differs",
                  "the draft's name differs from the item")
        # The item is untouched until save.
        self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[1]["name"], "Monitor")
        save = [b for b in self.card("tablet").find_elements(By.TAG_NAME, "button") if b.text == "Save"][0]
        save.click()
        self.wait(lambda: "Monitor 27in" in self.row(item["id"]).text, "the table shows the saved item")
        status, saved, headers = self.server.request("GET", f"/v1/items/{item['id']}")
        self.assertEqual((status, saved["name"], saved["version"], headers["ETag"]), (200, "Monitor 27in", 2, '"2"'))
        self.wait(lambda: self.card("tablet").find_element(By.CSS_SELECTOR, '[data-field="destination"]').text == "nothing",
                  "the tablet's edit closed")
        self.assertEqual(self.console_errors(), [])

    def test_delete_with_its_alert_from_the_page(self):
        self.open_inspector(self.server.editor)
        item = self.server.create_item("Old chair", 1)
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, f'#open-item option[value="{item["id"]}"]'), "the item is offered")
        Select(self.driver.find_element(By.ID, "open-item")).select_by_value(item["id"])
        Select(self.driver.find_element(By.ID, "open-what")).select_by_value("openDeleteAlert")
        self.driver.find_element(By.CSS_SELECTOR, "#open-form button[type=submit]").click()
        self.wait(lambda: self.card("inspector") is not None and "Delete alert for Old chair" in self.card("inspector").text, "the alert")
        self.alert_button("inspector", {"confirmDelete": {}}).click()
        self.wait(lambda: not self.driver.find_elements(By.CSS_SELECTOR, f'#item-rows tr[data-id="{item["id"]}"]'), "the row is gone")
        self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[0], 404)

    def test_an_open_delete_alert_shows_as_an_alert_and_its_destructive_button_deletes(self):
        item = self.server.create_item("Walnut shelf", 2)
        self.open_inspector(self.server.editor)
        self.server.command("counter", {"openDeleteAlert": {"itemID": item["id"]}})
        self.wait(lambda: self.alert("counter") is not None, "the counter's alert")
        alert = self.alert("counter")
        expected = self.navigation("counter")["destination"]["deleteAlert"]["alert"]
        self.assertEqual(alert.find_element(By.CLASS_NAME, "alert-title").text, expected["title"]["text"])
        self.assertIn("Walnut shelf", alert.find_element(By.CLASS_NAME, "alert-title").text, "the title names the item")
        self.assertEqual(alert.find_element(By.CLASS_NAME, "alert-message").text, expected["message"]["text"])
        self.assertEqual(self.alert_buttons("counter"), [
            ("Delete", "destructive", {"confirmDelete": {}}),
            ("Cancel", "cancel", {"cancel": {}}),
        ])
        # Styled by role: destructive filled red, cancel quiet (no fill).
        self.assertEqual(self.style(self.alert_button("counter", {"confirmDelete": {}}), "backgroundColor"), "rgb(163, 22, 27)")
        self.assertEqual(self.style(self.alert_button("counter", {"cancel": {}}), "backgroundColor"), "rgb(255, 255, 255)")
        self.alert_button("counter", {"confirmDelete": {}}).click()
        self.wait(lambda: self.alert("counter") is None, "the alert closes")
        self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[0], 404)
        self.wait(lambda: not self.driver.find_elements(By.CSS_SELECTOR, f'#item-rows tr[data-id="{item["id"]}"]'), "the row is gone")
        self.assertEqual(self.card("counter").find_element(By.CSS_SELECTOR, '[data-field="destination"]').text, "nothing")
        self.assertEqual(self.console_errors(), [])

    def test_a_conflict_shows_the_draft_beside_current_and_take_theirs_closes_it(self):
        item = self.server.create_item("Oak desk", 2)
        self.open_inspector(self.server.editor)
        # Device B names two checkpoints on its way (one with a value handed back), then both devices edit.
        self.server.command("desk-b", {"setCheckpoint": {"name": "start"}})
        self.server.command("desk-b", {"push": {"route": {"item": {"id": item["id"]}}}})
        self.server.command("desk-b", {"returnToCheckpoint": {"name": "start", "value": {"picked": item["id"], "n": 1}}})
        self.server.command("desk-b", {"push": {"route": {"item": {"id": item["id"]}}}})
        self.server.command("desk-b", {"setCheckpoint": {"name": "detail"}})
        for client, name, quantity in (("desk-a", "Oak desk (A)", 2), ("desk-b", "Oak desk (B)", 5)):
            self.server.command(client, {"openEdit": {"itemID": item["id"]}})
            self.server.command(client, {"updateDraft": {"draft": {"name": name, "color": None, "status": {"inStock": {"quantity": quantity}}}}})
        self.assertIsNone(self.server.command("desk-a", {"save": {}})["navigation"]["destination"])
        result = self.server.command("desk-b", {"save": {"onConflict": "alert"}})
        self.assertIn("conflict", result["navigation"]["destination"])
        self.wait(lambda: self.alert("desk-b") is not None, "desk B's conflict alert")
        alert = self.alert("desk-b")
        self.assertEqual(alert.get_attribute("data-kind"), "conflict")
        expected = result["navigation"]["destination"]["conflict"]["alert"]
        self.assertEqual(alert.find_element(By.CLASS_NAME, "alert-title").text, expected["title"]["text"])
        self.assertEqual(alert.find_element(By.CLASS_NAME, "alert-message").text, expected["message"]["text"])
        # The kept draft beside current, the fields that differ marked.
        cells = lambda field: [td.text for td in alert.find_elements(By.CSS_SELECTOR, f'tr[data-field="{field}"] td')]
        row_class = lambda field: alert.find_element(By.CSS_SELECTOR, f'tr[data-field="{field}"]').get_attribute("class")
        self.assertEqual(cells("name"), ["Oak desk (B)", "Oak desk (A)"])
        self.assertEqual(row_class("name"), "differs")
        self.assertEqual(cells("status"), ["In stock: 5", "In stock: 2"])
        self.assertEqual(row_class("status"), "differs")
        self.assertEqual(row_class("colour"), "")
        self.assertEqual(self.alert_buttons("desk-b"), [
            ("Keep my edit", "none", {"resolveConflict": {"keep": "mine"}}),
            ("Take theirs", "destructive", {"resolveConflict": {"keep": "theirs"}}),
            ("Review", "cancel", {"resolveConflict": {"keep": "review"}}),
        ])
        # No draft form while the alert is open: only its buttons apply.
        self.assertEqual(self.card("desk-b").find_elements(By.CSS_SELECTOR, "form.draft-form"), [])
        # The canonical URL and the checkpoints.
        card = self.card("desk-b")
        self.assertEqual(card.find_element(By.CSS_SELECTOR, "code.url").text, result["navigation"]["url"])
        checkpoints = card.find_elements(By.CSS_SELECTOR, '[data-field="checkpoints"] li')
        self.assertEqual([li.get_attribute("data-checkpoint") for li in checkpoints], ["detail", "start"])
        self.assertEqual(checkpoints[0].text, "detail → depth 1", "no value: none shown")
        self.assertTrue(checkpoints[1].text.startswith("start → depth 0, value {"), checkpoints[1].text)
        shown = checkpoints[1].find_element(By.CSS_SELECTOR, "code.value").text
        self.assertNotIn(" ", shown, "compact JSON")
        self.assertEqual(json.loads(shown), {"picked": item["id"], "n": 1})
        self.alert_button("desk-b", {"resolveConflict": {"keep": "theirs"}}).click()
        self.wait(lambda: self.alert("desk-b") is None, "the conflict alert closes")
        navigation = self.navigation("desk-b")
        self.assertIsNone(navigation["destination"])
        self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[1]["name"], "Oak desk (A)")
        self.wait(lambda: self.card("desk-b").find_element(By.CSS_SELECTOR, "code.url").text == navigation["url"], "the URL follows")
        self.assertEqual(self.card("desk-b").find_element(By.CSS_SELECTOR, '[data-field="destination"]').text, "nothing")
        self.assertEqual(self.console_errors(), [])

    def test_the_url_can_be_copied(self):
        item = self.server.create_item("Copied lamp", 1)
        self.server.command("copier", {"push": {"route": {"item": {"id": item["id"]}}}})
        url = self.navigation("copier")["url"]
        self.assertEqual(url, f"stockroom://inventory/items/{item['id']}")
        self.open_inspector(self.server.editor)
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.server.base,
                                                                 "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        self.wait(lambda: self.card("copier") is not None, "the copier's card")
        self.assertEqual(self.card("copier").find_element(By.CSS_SELECTOR, "code.url").text, url)
        self.card("copier").find_element(By.CSS_SELECTOR, "button.copy").click()
        self.wait(lambda: self.driver.find_element(By.ID, "message").text == f"Copied {url}", "the page says it copied")
        copied = self.driver.execute_async_script("navigator.clipboard.readText().then(arguments[0], (e) => arguments[0]('failed: ' + e));")
        self.assertEqual(copied, url)
        self.assertEqual(self.console_errors(), [])

    def test_a_stale_save_from_the_page_opens_the_conflict_alert_and_review_goes_back_to_the_edit(self):
        item = self.server.create_item("Pine stool", 3)
        self.open_inspector(self.server.editor)
        self.server.command("bench", {"openEdit": {"itemID": item["id"]}})
        self.wait(lambda: self.card("bench") is not None and self.card("bench").find_elements(By.CSS_SELECTOR, ".draft-name"), "the bench's draft form")
        name = self.card("bench").find_element(By.CSS_SELECTOR, ".draft-name")
        name.clear()
        name.send_keys("Pine stool (tall)")
        self.card("bench").find_element(By.CSS_SELECTOR, "form.draft-form button[type=submit]").click()
        self.wait(lambda: self.card("bench").find_element(By.CSS_SELECTOR, 'tr[data-field="name"]').get_attribute("class") == "differs",
                  "the draft is updated")
        # Meanwhile the item changes elsewhere.
        status, changed, _ = self.server.request("PUT", f"/v1/items/{item['id']}",
                                                 {"name": "Pine stool", "color": None, "status": {"inStock": {"quantity": 9}}})
        self.assertEqual(status, 200)
        self.wait(lambda: "In stock: 9" in self.row(item["id"]).text, "the table has the change")
        [b for b in self.card("bench").find_elements(By.TAG_NAME, "button") if b.text == "Save"][0].click()
        self.wait(lambda: self.alert("bench") is not None, "the conflict alert, not an error")
        self.assertNotIn("error", self.driver.find_element(By.ID, "message").get_attribute("class"))
        self.assertIn("conflict", self.navigation("bench")["destination"])
        self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[1]["version"], changed["version"], "nothing written")
        self.alert_button("bench", {"resolveConflict": {"keep": "review"}}).click()
        self.wait(lambda: self.alert("bench") is None and self.card("bench").find_elements(By.CSS_SELECTOR, ".draft-name"), "back to the edit")
        self.assertEqual(self.navigation("bench")["destination"]["edit"]["baseVersion"], changed["version"])
        [b for b in self.card("bench").find_elements(By.TAG_NAME, "button") if b.text == "Save"][0].click()
        self.wait(lambda: "Pine stool (tall)" in self.row(item["id"]).text, "saved over the version reviewed")
        self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[1]["status"], {"inStock": {"quantity": 3}})
        self.assertEqual(self.console_errors(), [])

    def test_a_viewer_sees_an_alert_and_a_refused_button_says_403(self):
        item = self.server.create_item("Glass vase", 1)
        self.server.command("hall", {"openDeleteAlert": {"itemID": item["id"]}})  # the editor token, same user
        try:
            self.open_inspector(self.server.viewer)
            self.wait(lambda: self.alert("hall") is not None, "the hall's alert")
            self.alert_button("hall", {"confirmDelete": {}}).click()
            self.wait(lambda: "403 forbidden" in self.alert("hall").find_element(By.CLASS_NAME, "alert-error").text, "the refusal, on the alert")
            message = self.driver.find_element(By.ID, "message")
            self.assertIn("403 forbidden", message.text)
            self.assertIn("error", message.get_attribute("class"))
            self.assertEqual(self.server.request("GET", f"/v1/items/{item['id']}")[0], 200, "nothing deleted")
            self.assertIn("deleteAlert", self.navigation("hall")["destination"])
            # Cancel is the viewer's to send: its own user's navigation.
            self.alert_button("hall", {"cancel": {}}).click()
            self.wait(lambda: self.alert("hall") is None, "the alert closes")
            # Chromium logs the 403 answer as a failed load: that one is expected.
            errors = [entry for entry in self.console_errors()
                      if not (entry["source"] == "network" and "/v1/clients/hall/commands" in entry["message"] and "status of 403" in entry["message"])]
            self.assertEqual(errors, [])
        finally:
            self.server.command("hall", {"cancel": {}})

    def test_a_viewer_sees_everything_and_no_actions(self):
        self.server.command("viewer-phone", {"selectTab": {"tab": "settings"}}, token=self.server.viewer)
        self.open_inspector(self.server.viewer)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#item-rows tr")), len(self.server.request("GET", "/v1/snapshot")[1]["items"]))
        self.assertFalse(self.driver.find_element(By.ID, "actions").is_displayed())
        note = self.driver.find_element(By.ID, "read-only")
        self.assertTrue(note.is_displayed())
        self.assertIn("viewer", note.text)
        self.assertIn("403", note.text)
        self.wait(lambda: self.card("viewer-phone") is not None, "the viewer's own device")
        # No actions: the only buttons copy a device's URL (a device with an alert open would show its buttons).
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "#devices button:not(.copy), #devices input, #devices select"), [])
        # Live all the same.
        item = self.server.create_item("Seen by the viewer")
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, f'#item-rows tr[data-id="{item["id"]}"]'), "the viewer sees the new item")
        self.assertEqual(self.console_errors(), [])

    # -- devices named like the page's own ids ---------------------------------------------

    def test_devices_named_like_the_pages_ids_take_none_of_them(self):
        # A clientID is any [A-Za-z0-9._-]{1,64}: "create", "list" and "count" are parts of the
        # page's own ids (create-name, device-list, device-count). "create" holds a draft, so its
        # card has a draft form beside the Create form.
        item = self.server.create_item("Clash lamp", 3)
        self.server.command("create", {"openEdit": {"itemID": item["id"]}})
        self.server.command("create", {"updateDraft": {"draft": {"name": "Draft of create", "color": None,
                                                                    "status": {"inStock": {"quantity": 77}}}}})
        self.server.command("list", {"selectTab": {"tab": "settings"}})
        self.server.command("count", {"selectTab": {"tab": "settings"}})
        try:
            self.open_inspector(self.server.editor)
            self.wait(lambda: self.card("create") is not None and self.card("create").find_elements(By.CSS_SELECTOR, "form.draft-form"),
                      "the create device's draft form")
            self.wait(lambda: self.card("list") is not None and self.card("count") is not None, "the list and count devices' cards")

            # The Create form creates what was typed in it, not the card's draft.
            name = self.driver.find_element(By.ID, "create-name")
            name.send_keys("Typed in the Create form")
            quantity = self.driver.find_element(By.ID, "create-quantity")
            quantity.clear()
            quantity.send_keys("42")
            self.driver.find_element(By.CSS_SELECTOR, "#create-form button[type=submit]").click()
            self.wait(lambda: self.driver.find_element(By.ID, "message").text == "Created Typed in the Create form.", "the page says it created it")
            matching = lambda text: self.server.request("GET", "/v1/snapshot?filter=" + urllib.parse.quote(f'name = "{text}"'))[1]["items"]
            created = matching("Typed in the Create form")
            self.assertEqual([entry["status"] for entry in created], [{"inStock": {"quantity": 42}}])
            self.assertEqual(matching("Draft of create"), [], "nothing created from the card's draft")
            self.assertEqual(self.driver.find_element(By.ID, "create-name").get_attribute("value"), "", "the Create form is emptied")
            self.assertEqual(self.card("create").find_element(By.CSS_SELECTOR, ".draft-name").get_attribute("value"), "Draft of create",
                             "the card's draft is untouched")

            # Each card's heading names its device, and its accessible name is that heading.
            for client in ("create", "list", "count"):
                card = self.card(client)
                heading = card.find_element(By.TAG_NAME, "h3")
                self.assertTrue(heading.text.startswith(client), heading.text)
                labelled = self.driver.execute_script(
                    "const target = document.getElementById(arguments[0].getAttribute('aria-labelledby'));"
                    "return target && arguments[0].contains(target) ? target.textContent : null;", card)
                self.assertIsNotNone(labelled, f"{client}'s card is labelled by an element of its own")
                self.assertTrue(labelled.startswith(client), labelled)
            # The Open form offers them, and the count counts the cards.
            choices = [option.get_attribute("value") for option in self.driver.find_elements(By.CSS_SELECTOR, "#device-list option")]
            self.assertLessEqual({"create", "list", "count"}, set(choices))
            cards = len(self.driver.find_elements(By.CSS_SELECTOR, "#devices article.device"))
            self.assertEqual(self.driver.find_element(By.ID, "device-count").text, f"({cards})")
            # No id twice on the page, and every label of a card names a field of that card.
            duplicates = self.driver.execute_script("""
                const seen = new Map();
                for (const node of document.querySelectorAll('[id]')) seen.set(node.id, (seen.get(node.id) || 0) + 1);
                return [...seen].filter(([, n]) => n > 1).map(([id]) => id);""")
            self.assertEqual(duplicates, [])
            strays = self.driver.execute_script("""
                return Array.from(document.querySelectorAll('#devices label[for]')).filter((label) => {
                  const field = document.getElementById(label.htmlFor);
                  return !field || label.closest('article') !== field.closest('article');
                }).map((label) => label.htmlFor);""")
            self.assertEqual(strays, [])
            self.assertEqual(self.console_errors(), [])
        finally:
            self.server.command("create", {"cancel": {}})

    # -- the Open form's item choices ------------------------------------------------------

    def test_the_item_choices_follow_creates_renames_and_deletes(self):
        self.open_inspector(self.server.editor)
        choices = lambda: self.driver.execute_script(
            "return Array.from(document.getElementById('open-item').options, (o) => [o.value, o.textContent]);")
        rows = lambda: self.driver.execute_script(
            "return Array.from(document.querySelectorAll('#item-rows tr'), (tr) => [tr.dataset.id, tr.cells[0].textContent]);")
        self.assertEqual(choices(), rows(), "one choice per row, in the table's order")
        Select(self.driver.find_element(By.ID, "open-item")).select_by_value(self.keyboard["id"])
        item = self.server.create_item("Chosen lamp", 1)
        self.wait(lambda: [item["id"], "Chosen lamp"] in choices(), "the new item is offered")
        self.assertEqual(choices()[-1], [item["id"], "Chosen lamp"], "last, as in the table")
        status, _, _ = self.server.request("PUT", f"/v1/items/{item['id']}", {"name": "Chosen lamp (brass)", "color": None,
                                                                          "status": {"inStock": {"quantity": 1}}})
        self.assertEqual(status, 200)
        self.wait(lambda: [item["id"], "Chosen lamp (brass)"] in choices(), "the offered name follows")
        self.assertNotIn([item["id"], "Chosen lamp"], choices())
        status, _, _ = self.server.request("DELETE", f"/v1/items/{item['id']}")
        self.assertEqual(status, 204)
        self.wait(lambda: item["id"] not in [value for value, _ in choices()], "the deleted item is no longer offered")
        self.assertEqual(choices(), rows())
        self.assertEqual(self.driver.find_element(By.ID, "open-item").get_attribute("value"), self.keyboard["id"], "the choice is kept")
        self.assertEqual(self.console_errors(), [])
