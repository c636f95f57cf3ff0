"""The browser tests' fixtures: the paths and the wait, `stockroom serve` on a temporary database,
the static site of another origin, a device's feed held open, headless Chromium, and the helpers
the tests read the inspector page with (InspectorHelpers, a mixin of their test cases)."""

import functools
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("STOCKROOM_BIN", os.path.join(ROOT, ".build", "debug", "stockroom")))
OUTPUT = os.path.abspath(os.environ.get("BROWSER_TEST_OUTPUT", os.path.join(ROOT, ".build", "browser-test-output")))
WAIT = 20  # seconds a browser-side condition may take before the test fails instead of hanging


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`stockroom serve` on a temporary database, with an editor and a viewer token of one user.
    `retention_entries` keeps the change log that short (None: the default retention)."""

    def __init__(self, cors_origins, retention_entries=5):
        self.directory = tempfile.mkdtemp(prefix="stockroom-browser-")
        self.db = os.path.join(self.directory, "stockroom.sqlite")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = dict(
            os.environ,
            HTTP_PORT=str(self.port),
            DB_PATH=self.db,
            DB_SYNCHRONOUS="normal",
            LOG_LEVEL="warning",
            HTTP_CORS_ALLOWED_ORIGINS=",".join(cors_origins),
        )
        if retention_entries is not None:
            # Short retention, so that a page that misses a few changes while away gets 410.
            self.env.update(FEED_RETENTION_MAX_ENTRIES=str(retention_entries), FEED_RETENTION_INTERVAL_SECONDS="1")
        self.retention_entries = retention_entries
        self.editor = self.token("editor")
        self.viewer = self.token("viewer")
        self.process = None
        self.start()

    def token(self, role, user="erin"):
        out = subprocess.run([BINARY, "token", "create", "--user", user, "--role", role, "--db-path", self.db],
                             check=True, capture_output=True, text=True).stdout
        return out.strip().splitlines()[-1]

    def start(self):
        self.log = open(os.path.join(self.directory, "server.log"), "a")  # closed by stop()
        self.process = subprocess.Popen([BINARY, "serve"], env=self.env, cwd=self.directory, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("stockroom serve did not start; see " + self.log.name)
                time.sleep(0.1)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        self.log.close()

    def request(self, method, path, body=None, token=None, headers=None):
        """What curl would do: returns (status, json or None, headers)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token or self.editor}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None, response.headers
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, json.loads(text) if text else None, error.headers

    def create_item(self, name, quantity=1):
        status, item, _ = self.request("POST", "/v1/items", {"name": name, "color": None, "status": {"inStock": {"quantity": quantity}}})
        assert status == 201, (status, item)
        return item

    def wait_trimmed(self):
        """Waits until retention has run since the last write: the log holds no more than the
        entries it keeps, so that no trim can come while a page reads it."""
        deadline = time.monotonic() + 30
        while True:
            status, oldest, _ = self.request("GET", "/v1/changes?since=oldest&limit=1&topics=items,navigation,presence")
            assert status == 200, (status, oldest)
            status, snapshot, _ = self.request("GET", "/v1/snapshot")
            assert status == 200, (status, snapshot)
            head = int(snapshot["cursor"].rsplit(".", 1)[1])
            if not oldest["changes"] or head - oldest["changes"][0]["seq"] < self.retention_entries:
                return
            assert time.monotonic() < deadline, "retention did not trim the log"
            time.sleep(0.1)

    def command(self, client, command, token=None):
        status, body, _ = self.request("POST", f"/v1/clients/{client}/commands", {"command": command}, token=token)
        assert status == 200, (status, body)
        return body


class StaticSite:
    """Serves Tests/Browser on another port: http://127.0.0.1:P is an allowed origin, http://localhost:P is not."""

    def __init__(self):
        handler = functools.partial(QuietHandler, directory=os.path.dirname(os.path.abspath(__file__)))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class FeedStream:
    """A device's feed held open: `GET /v1/changes/stream?clientID=...&since=now` on a plain socket,
    read by a thread until close() shuts the socket (the server then sees the device go)."""

    def __init__(self, server, client, token=None):
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
        self.sock.sendall((f"GET /v1/changes/stream?clientID={client}&since=now HTTP/1.1\r\n"
                           f"Host: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {token or server.editor}\r\n"
                           "Accept: text/event-stream\r\n\r\n").encode())
        self.received = b""
        self.opened = threading.Event()
        self.sock.settimeout(None)
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()
        assert self.opened.wait(WAIT), "the stream's headers"
        assert self.received.startswith(b"HTTP/1.1 200"), self.received[:200]

    def read(self):
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                self.received += data
                if b"\r\n\r\n" in self.received:
                    self.opened.set()
        except OSError:
            pass
        self.opened.set()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(WAIT)


def chrome(width=1280, height=900):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_script_timeout(WAIT)
    return driver


class BrowserCase(unittest.TestCase):
    """A Chromium per test, and the class's server (and static site, if any) stopped after its tests."""

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if getattr(cls, "site", None):
            cls.site.stop()

    def setUp(self):
        self.driver = chrome()

    def tearDown(self):
        self.driver.quit()


class InspectorHelpers:
    """How the tests open the inspector and read it: a mixin of the test cases (it uses their
    `driver` and `server`)."""

    def wait(self, condition, message):
        # A card is drawn anew on each change of its device, so an element found a moment ago may be gone.
        return WebDriverWait(self.driver, WAIT, ignored_exceptions=[NoSuchElementException, StaleElementReferenceException]).until(
            lambda driver: condition(), message)

    def open_inspector(self, token):
        self.driver.get(self.server.base + "/inspector")
        self.driver.find_element(By.ID, "token").send_keys(token)
        self.driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
        self.wait_live()

    def wait_live(self):
        self.wait(lambda: self.driver.find_element(By.ID, "connection").get_attribute("data-state") == "live", "the page is live")

    def row(self, item_id):
        return self.driver.find_element(By.CSS_SELECTOR, f'#item-rows tr[data-id="{item_id}"]')

    def card(self, client):
        cards = self.driver.find_elements(By.CSS_SELECTOR, f'article.device[data-client="{client}"]')
        return cards[0] if cards else None

    def console_errors(self):
        # Chromium logs every 4xx answer as a failed load. A page whose cursor a trim overtook
        # (this server keeps 5 entries) finds out by a 410 of GET /v1/changes, as it should; the
        # Feed panel's walk back starts at since=oldest and meets none.
        return [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"
                and not (entry["source"] == "network" and "/v1/changes?since=" in entry["message"]
                         and "status of 410" in entry["message"])]

    def alert(self, client):
        """The alert shown on a device's card, or None."""
        card = self.card(client)
        boxes = card.find_elements(By.CSS_SELECTOR, "section.alert") if card else []
        return boxes[0] if boxes else None

    def alert_buttons(self, client):
        """(label, role, command) of each button of the device's alert, in order."""
        return [(b.text, b.get_attribute("data-role"), json.loads(b.get_attribute("data-command")))
                for b in self.alert(client).find_elements(By.CSS_SELECTOR, ".alert-buttons button")]

    def alert_button(self, client, command):
        return [b for b in self.alert(client).find_elements(By.CSS_SELECTOR, ".alert-buttons button")
                if json.loads(b.get_attribute("data-command")) == command][0]

    def style(self, element, name):
        return self.driver.execute_script("return getComputedStyle(arguments[0])[arguments[1]];", element, name)

    def navigation(self, client, token=None):
        status, navigation, _ = self.server.request("GET", f"/v1/clients/{client}/navigation", token=token)
        self.assertEqual(status, 200)
        return navigation

    def feed_seqs(self):
        """The Feed panel's sequence numbers, top (newest) first."""
        return self.driver.execute_script("return Array.from(document.querySelectorAll('#feed li'), (li) => Number(li.dataset.seq));")
