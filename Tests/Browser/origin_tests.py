"""The API from a page of another origin (Tests/Browser/cors.html on the static site): fetch,
EventSource and WebSocket from an allowed origin, and nothing from another. A mixin of
InspectorTests (inspector_test.py), whose `site` serves the page."""

import json
import urllib.request


class OriginTests:
    # -- another origin ------------------------------------------------------------------

    def run_from(self, origin, script, *args):
        self.driver.get(f"{origin}/cors.html")
        return self.driver.execute_async_script(script, *args)

    PROBE = """
        const [base, token, itemID, done] = arguments;
        const result = {};
        const settle = (promise) => promise.then((v) => v, (e) => ({ failed: String(e) }));
        result.fetch = await settle(fetch(`${base}/v1/items/${itemID}`, { headers: { Authorization: `Bearer ${token}` } })
            .then((r) => ({ status: r.status, etag: r.headers.get('ETag') })));
        result.write = await settle(fetch(`${base}/v1/items`, { method: 'POST',
            headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() },
            body: JSON.stringify({ name: 'From another origin', color: null, status: { inStock: { quantity: 1 } } }) })
            .then((r) => ({ status: r.status, location: r.headers.get('Location') })));
        result.export = await settle(fetch(`${base}/v1/items/export`, { headers: { Authorization: `Bearer ${token}` } })
            .then(async (r) => ({ status: r.status, cursor: r.headers.get('Stockroom-Cursor'), csv: (await r.text()).slice(0, 5) })));
        result.eventSource = await new Promise((resolve) => {
            const source = new EventSource(`${base}/v1/changes/stream?since=now&access_token=${token}`);
            const timer = setTimeout(() => { source.close(); resolve({ timedOut: true }); }, 10000);
            // Once following, make a change for it to deliver.
            source.addEventListener('open', () => fetch(`${base}/v1/items`, { method: 'POST',
                headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
                body: JSON.stringify({ name: 'Followed', color: null, status: { inStock: { quantity: 1 } } }) }));
            source.addEventListener('change', (e) => { clearTimeout(timer); source.close(); resolve({ change: JSON.parse(e.data).entity }); });
            source.addEventListener('error', () => { if (source.readyState === EventSource.CLOSED) { clearTimeout(timer); resolve({ error: true }); } });
        });
        const socket = (query) => new Promise((resolve) => {
            const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/changes/ws?${query}`);
            // Once following, make a change for it to deliver.
            ws.onopen = () => fetch(`${base}/v1/items`, { method: 'POST',
                headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
                body: JSON.stringify({ name: 'Sent over WebSocket', color: null, status: { inStock: { quantity: 1 } } }) }).catch(() => {});
            ws.onmessage = (e) => { resolve({ message: JSON.parse(e.data).entity }); ws.close(); };
            ws.onclose = (e) => resolve({ code: e.code, reason: e.reason });
        });
        result.badToken = await socket('access_token=wrong');
        result.badCursor = await socket(`since=garbage&access_token=${token}`);
        result.good = await socket(`since=now&access_token=${token}`);
        done(result);
    """

    def test_an_allowed_origin_can_fetch_follow_eventsource_and_read_websocket_close_codes(self):
        result = self.run_from(f"http://127.0.0.1:{self.site.port}", self.PROBE, self.server.base, self.server.editor, self.keyboard["id"])
        self.assertEqual(result["fetch"]["status"], 200)
        self.assertRegex(result["fetch"]["etag"], r'^"\d+"$', "ETag is exposed")
        self.assertEqual(result["write"]["status"], 201, "the preflight for Authorization, Content-Type and Idempotency-Key passed")
        self.assertTrue(result["write"]["location"].startswith("/v1/items/"), "Location is exposed")
        self.assertEqual(result["export"]["status"], 200)
        self.assertTrue((result["export"]["cursor"] or "").startswith("c1."), f"Stockroom-Cursor is exposed: {result['export']}")
        self.assertEqual(result["export"]["csv"], "name,", result["export"])
        self.assertEqual(result["eventSource"], {"change": "item"})
        self.assertEqual(result["badToken"]["code"], 4401)
        self.assertEqual(json.loads(result["badToken"]["reason"])["error"]["code"], "unauthorized")
        self.assertEqual(result["badCursor"]["code"], 4400)
        self.assertEqual(json.loads(result["badCursor"]["reason"])["error"]["field"], "since")
        self.assertEqual(result["good"], {"message": "item"})

    REVALIDATE = """
        const [base, token, itemID, done] = arguments;
        const read = () => fetch(`${base}/v1/items/${itemID}`, { headers: { Authorization: `Bearer ${token}` } })
            .then(async (r) => ({ status: r.status, etag: r.headers.get('ETag'), item: await r.json() }));
        const first = await read();
        done({ first, second: await read() });
    """

    def not_modified_item_reads(self):
        with urllib.request.urlopen(self.server.base + "/metrics", timeout=5) as answer:
            text = answer.read().decode()
        for line in text.splitlines():
            if line.startswith('hb_requests{http_route="/v1/items/{id}",http_request_method="GET",http_response_status_code="304"}'):
                return int(float(line.split()[-1]))
        return 0

    def test_a_page_rereading_an_item_revalidates_it_and_gets_the_item_it_kept(self):
        before = self.not_modified_item_reads()
        result = self.run_from(f"http://127.0.0.1:{self.site.port}", self.REVALIDATE, self.server.base, self.server.viewer, self.keyboard["id"])
        self.assertEqual(result["first"]["status"], 200)
        self.assertEqual(result["second"]["status"], 200, "the browser answers the page from what it kept")
        self.assertEqual(result["second"]["item"], result["first"]["item"])
        self.assertEqual(result["second"]["etag"], result["first"]["etag"])
        self.assertEqual(self.not_modified_item_reads(), before + 1, "the browser asked with If-None-Match and the server answered 304")

    def test_a_disallowed_origin_cannot(self):
        result = self.run_from(f"http://localhost:{self.site.port}", self.PROBE, self.server.base, self.server.editor, self.keyboard["id"])
        self.assertIn("failed", result["fetch"])
        self.assertIn("failed", result["write"])
        self.assertEqual(result["eventSource"], {"error": True})
        self.assertEqual(result["good"]["code"], 4403, "the WebSocket refuses a page of another origin")
        self.assertEqual(json.loads(result["good"]["reason"])["error"]["code"], "forbidden")
