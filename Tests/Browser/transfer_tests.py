"""The Items panel's Export and Import: a mixin of TransferTests (inspector_test.py), against a
server of its own."""

import json
import os
import urllib.parse
import urllib.request

from selenium.webdriver.common.by import By


class TransferChecks:
    def report(self):
        return self.driver.find_element(By.ID, "import-report").text

    def test_export_then_import_a_file_with_its_dry_run_report_and_progress(self):
        lamp = self.server.create_item("Lamp", 2)
        self.open_inspector(self.server.editor)
        self.wait(lambda: self.row(lamp["id"]) is not None, "the lamp in the table")

        # Export: the page downloads the items as CSV, the link names the count and the cursor.
        self.driver.find_element(By.ID, "export-items").click()
        link = self.driver.find_element(By.ID, "export-link")
        self.wait(lambda: link.is_displayed(), "the export's link")
        # The file is a blob of the page (the page's CSP lets nothing fetch it back): the same
        # export read with curl's means, at the cursor the link names.
        self.assertTrue(link.get_attribute("href").startswith("blob:"))
        self.assertEqual(link.get_attribute("download"), "items.csv")
        url = self.server.base + "/v1/items/export"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.server.editor}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            exported = response.read().decode()
            self.assertIn(response.headers["Stockroom-Cursor"], link.text)
        self.assertTrue(exported.startswith("name,status,quantity,"), exported[:80])
        self.assertIn("\r\nLamp,inStock,2,", exported)
        # (The other test of this server may have made an item before.)
        count = len(self.server.request("GET", "/v1/items")[1]["items"])
        self.assertEqual(exported.count("\r\n") - 1, count)
        self.assertIn(f"{count} item{'' if count == 1 else 's'}, at cursor c1.", link.text)

        # Import: choosing a file runs its dry run; its report says what it would do.
        path = os.path.join(self.server.directory, "import.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(exported.replace("Lamp,inStock,2,", "Lamp,inStock,7,") + "Desk,inStock,1,,,,,,,,,\r\n Chair ,inStock,many,,,,,,,,,\r\n")
        self.driver.find_element(By.ID, "import-file").send_keys(path)
        self.wait(lambda: self.report().startswith("Checked:"), "the dry run's report")
        self.assertIn(f"1 to insert, 1 to update, {count - 1} unchanged, 1 rejected", self.report())
        self.assertIn(f"Line {count + 3}, quantity: quantity must be a whole number", self.report())
        self.assertEqual(self.server.request("GET", f"/v1/items/{lamp['id']}")[1]["status"], {"inStock": {"quantity": 2}},
                         "a dry run changes nothing")

        # Import the valid rows: the bar fills, the report says what was done, the table follows.
        self.driver.find_element(By.ID, "import-skip").click()
        self.driver.find_element(By.ID, "import-run").click()
        self.wait(lambda: self.report().startswith("Imported:"), "the import's report")
        self.assertIn(f"1 inserted, 1 updated, {count - 1} unchanged, 1 rejected", self.report())
        bar = self.driver.find_element(By.ID, "import-progress")
        self.assertEqual(bar.get_attribute("value"), bar.get_attribute("max"))
        self.wait(lambda: "7" in self.row(lamp["id"]).text, "the lamp's new quantity in the table")
        names = [row.text for row in self.driver.find_elements(By.CSS_SELECTOR, "#item-rows tr th")]
        self.assertIn("Desk", names)
        self.assertEqual(self.console_errors(), [], json.dumps(self.console_errors()))

    def test_a_refused_import_can_be_tried_again_and_the_same_file_chosen_again_is_checked_again(self):
        self.open_inspector(self.server.editor)
        path = os.path.join(self.server.directory, "refused.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("name,status,quantity\r\nRetried shelf,inStock,2\r\nFixed later,inStock,many\r\n")
        run = self.driver.find_element(By.ID, "import-run")
        self.driver.find_element(By.ID, "import-file").send_keys(path)
        self.wait(lambda: self.report().startswith("Checked:"), "the dry run's report")
        self.assertIn("1 to insert, 0 to update, 0 unchanged, 1 rejected", self.report())
        self.assertTrue(run.is_enabled())

        # Without "Import the valid rows": refused, nothing applied; Import may be tried again.
        run.click()
        self.wait(lambda: self.report().startswith("Nothing imported:"), "the refusal")
        self.wait(lambda: run.is_enabled(), "Import enabled again after the refusal")
        self.assertIn("Nothing imported: 1 row rejected.", self.report())
        self.assertIn("Line 3, quantity:", self.report())
        # The file box is emptied (so that the same file can be chosen again): the page names the file.
        self.assertEqual(self.driver.find_element(By.ID, "import-file").get_attribute("value"), "")
        self.assertEqual(self.driver.find_element(By.ID, "import-chosen").text, "refused.csv")
        self.assertEqual(self.server.request("GET", "/v1/snapshot?filter=" + urllib.parse.quote('name = "Retried shelf"'))[1]["items"], [])

        # Ticked: the valid row is imported, and Import is done with this file.
        self.driver.find_element(By.ID, "import-skip").click()
        self.assertTrue(run.is_enabled())
        run.click()
        self.wait(lambda: self.report().startswith("Imported:"), "the import's report")
        self.assertIn("1 inserted, 0 updated, 0 unchanged, 1 rejected", self.report())
        self.assertFalse(run.is_enabled())
        shelf = self.server.request("GET", "/v1/snapshot?filter=" + urllib.parse.quote('name = "Retried shelf"'))[1]["items"]
        self.assertEqual(len(shelf), 1)
        self.wait(lambda: self.row(shelf[0]["id"]) is not None, "the imported row in the table")

        # The file fixed and chosen again (same name): checked again, from its new contents.
        with open(path, "w", encoding="utf-8") as f:
            f.write("name,status,quantity\r\nFixed later,inStock,4\r\n")
        self.driver.find_element(By.ID, "import-file").send_keys(path)
        self.wait(lambda: self.report().startswith("Checked:") and "0 rejected" in self.report(), "the new dry run's report")
        self.assertIn("1 to insert, 0 to update, 0 unchanged, 0 rejected", self.report())
        self.assertTrue(run.is_enabled())
        run.click()
        self.wait(lambda: self.report().startswith("Imported:"), "the fixed file's import")
        self.assertIn("1 inserted, 0 updated, 0 unchanged, 0 rejected", self.report())
        self.assertEqual(len(self.server.request("GET", "/v1/snapshot?filter=" + urllib.parse.quote('name = "Fixed later"'))[1]["items"]), 1)
        self.assertEqual(self.console_errors(), [], json.dumps(self.console_errors()))

    def test_an_error_line_of_the_import_stream_shows_its_code_and_message(self):
        self.open_inspector(self.server.editor)
        path = os.path.join(self.server.directory, "not-ours.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("name,shoeSize\r\nBoot,44\r\n")
        self.driver.find_element(By.ID, "import-file").send_keys(path)
        self.wait(lambda: self.report().startswith("Import failed:"), "the error")
        # The answer's status is 200 (its first line went out before the error): not shown.
        self.assertRegex(self.report(), r"^Import failed: [a-zA-Z]+: .*shoeSize")
        self.assertNotIn("200", self.report())
        self.assertFalse(self.driver.find_element(By.ID, "import-run").is_enabled())
        self.assertEqual(self.console_errors(), [], json.dumps(self.console_errors()))

    def test_a_viewer_exports_but_has_no_import(self):
        self.server.create_item("Mug", 1)
        self.open_inspector(self.server.viewer)
        self.wait_live()
        self.assertTrue(self.driver.find_element(By.ID, "export-items").is_displayed())
        self.assertFalse(self.driver.find_element(By.ID, "import-form").is_displayed())
