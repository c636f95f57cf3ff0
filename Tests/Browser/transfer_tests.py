"""The Items panel's Export and Import: a mixin of TransferTests (inspector_test.py), against a
server of its own."""

import json
import os
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

    def test_a_viewer_exports_but_has_no_import(self):
        self.server.create_item("Mug", 1)
        self.open_inspector(self.server.viewer)
        self.wait_live()
        self.assertTrue(self.driver.find_element(By.ID, "export-items").is_displayed())
        self.assertFalse(self.driver.find_element(By.ID, "import-form").is_displayed())
