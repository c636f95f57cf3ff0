"""badinput.py's bad inputs, one method per group (each takes `short`): bodies, JSON, headers, URLs
and protocol defects, each answer checked against the contract's status and code. A mixin of
badinput.Suite, whose `exchange`, `expect` and `healthy` they use."""

import json
import uuid

from common import Client, draft
from badinput_wire import CLOSE_WITHIN, MIB, Raw, request_bytes


class InputCases:
    # ------------------------------------------------------------------------------------- bodies

    def bodies(self, short):
        too_large = [(413, "payloadTooLarge")]
        padded = json.dumps(draft("Padded")).encode()
        body = padded[:-1] + b" " * (MIB + 1 - len(padded)) + b"}"
        self.expect("a body of 1 MiB + 1 byte", self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)), too_large)
        body = padded[:-1] + b" " * (MIB - len(padded)) + b"}"
        self.expect("a body of exactly 1 MiB", self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)),
                    [(201, None)])
        chunk = b" " * 65536
        chunked = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(32)) + b"0\r\n\r\n"
        self.expect("a chunked body of 2 MiB", self.exchange(request_bytes(
            "POST", "/v1/items", {"Transfer-Encoding": "chunked"}, body=chunked, token=self.editor)), too_large)
        # A huge declared length that never comes: refused from the header, or closed on the idle timeout.
        raw = Raw(self.server.port)
        raw.send(request_bytes("POST", "/v1/items", {"Content-Length": str(100 << 30)}, token=self.editor)
                 .replace(b"\r\n\r\n", b"\r\nContent-Type: application/json\r\n\r\n"))
        raw.sock.settimeout(CLOSE_WITHIN)
        self.expect("Content-Length of 100 GiB, no body", raw.answer(), too_large)
        raw.close()
        # A body much larger than the limit, streamed as fast as it goes.
        size = 32 * MIB if not short else 8 * MIB
        raw = Raw(self.server.port)
        raw.send(request_bytes("PUT", f"/v1/items/{uuid.uuid4()}", {"Content-Length": str(size), "Content-Type": "application/json"},
                               token=self.editor))
        block = b"[" * 65536
        for _ in range(size // len(block)):
            if not raw.send(block):
                break
        self.expect(f"a {size // MIB} MiB body", raw.answer(), too_large)
        raw.close()

    # --------------------------------------------------------------------------------------- JSON

    def json_inputs(self, short):
        depths = [10, 100, 1000, 10_000, 100_000] + ([] if short else [500_000])
        for depth in depths:
            for key in (None, "deep-" + str(depth)):
                headers = {"Idempotency-Key": key + str(uuid.uuid4())} if key else {}
                bare = b"[" * depth + b"]" * depth
                self.expect(f"JSON nested {depth} deep (bare array, key {bool(key)})", self.exchange(
                    request_bytes("POST", "/v1/items", headers, body=bare, token=self.editor)), [(400, "invalidJSON")])
                objects = b'{"a":' * depth + b"1" + b"}" * depth
                command = b'{"command":{"selectTab":{"tab":"settings","extra":' + objects + b"}}}"
                self.expect(f"JSON nested {depth} deep under an unknown key of a command (key {bool(key)})", self.exchange(
                    request_bytes("POST", "/v1/clients/deep/commands", headers, body=command, token=self.editor)),
                    [(200, None), (400, "invalidJSON")] if len(command) <= MIB else [(413, "payloadTooLarge")])
                item = b'{"name":"Deep","color":null,"status":{"inStock":{"quantity":1}},"extra":' + bare + b"}"
                self.expect(f"JSON nested {depth} deep under an unknown key of an item (key {bool(key)})", self.exchange(
                    request_bytes("POST", "/v1/items", headers, body=item, token=self.editor)),
                    [(201, None), (400, "invalidJSON")])
        invalid_json = [(400, "invalidJSON")]
        name_cases = [
            ("invalid UTF-8 in a name", b'"\xff\xfe"', invalid_json),
            ("overlong UTF-8 in a name", b'"\xc0\xaf"', invalid_json),
            ("a UTF-8-encoded surrogate in a name", b'"\xed\xa0\x80"', invalid_json),
            ("a truncated UTF-8 sequence in a name", b'"ab\xe2\x82"', invalid_json),
            ("a raw control character in a name", b'"a\x01b"', invalid_json),
            ("a raw NUL in a name", b'"a\x00b"', invalid_json),
            ("an escaped NUL in a name", b'"a\\u0000b"', [(422, "validationFailed")]),
            ("a number as the name", b"12", invalid_json),
            ("a 900 KiB name", b'"' + b"x" * (900 * 1024) + b'"', [(422, "validationFailed")]),
        ]
        for label, name, allowed in name_cases:
            body = b'{"name":' + name + b',"color":null,"status":{"inStock":{"quantity":1}}}'
            self.expect(label, self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)), allowed)
        for quantity in (b"1e400", b"-0", b"1.5", b"99999999999999999999999", b"-1", b"1000000001", b"NaN", b"0x10", b'"1"',
                         b"1" * 100_000):
            body = b'{"name":"Q","color":null,"status":{"inStock":{"quantity":' + quantity + b"}}}"
            self.expect(f"quantity {quantity[:20].decode()}", self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)),
                        [(201, None), (400, "invalidJSON"), (422, "validationFailed")])
        for label, body in [
            ("a BOM before the JSON", b"\xef\xbb\xbf" + json.dumps(draft("Bom")).encode()),
            ("trailing garbage", json.dumps(draft("Tail")).encode() + b"}}"),
            ("a comment", b'{"name":"C"/* x */,"color":null,"status":{"inStock":{"quantity":1}}}'),
            ("a 100,000-element array under an unknown key", b'{"name":"A","color":null,"status":{"inStock":{"quantity":1}},"x":['
             + b",".join([b"1"] * 100_000) + b"]}"),
            ("50,000 unknown keys", b'{"name":"A","color":null,"status":{"inStock":{"quantity":1}},'
             + b",".join(b'"k%d":1' % i for i in range(50_000)) + b"}"),
        ]:
            self.expect(label, self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)),
                        [(201, None), (400, "invalidJSON")])
        # A name given twice: which value was meant is not known, so nothing is written.
        for label, body in [
            ("duplicate keys", b'{"name":"A","name":"B","color":null,"status":{"inStock":{"quantity":1}}}'),
            ("duplicate keys, one escaped", b'{"name":"A","n\\u0061me":"B","color":null,"status":{"inStock":{"quantity":1}}}'),
        ]:
            self.expect(label, self.exchange(request_bytes("POST", "/v1/items", body=body, token=self.editor)), invalid_json)
        for body in (b"", b"null", b"[]", b'"text"', b"123", b"{", b"\x00" * 100):
            raw = request_bytes("POST", "/v1/items", {"Content-Length": str(len(body))}, body=body, token=self.editor)
            if not body:
                raw = raw.replace(b"\r\nContent-Length", b"\r\nContent-Type: application/json\r\nContent-Length")
            self.expect(f"body {body[:10]!r}", self.exchange(raw), invalid_json)
        self.expect("an unknown command", self.exchange(request_bytes(
            "POST", "/v1/clients/x/commands", body=b'{"command":{"selfDestruct":{}}}', token=self.editor)), invalid_json)

    # ------------------------------------------------------------------------------------ headers

    def headers(self, short):
        # The HTTP decoder's limits: 80 KiB of request line and headers, 1,000 headers.
        header_refused = [(431, "requestHeaderFieldsTooLarge")]
        sizes = [64 * 1024, MIB] + ([] if short else [16 * MIB])
        for size in sizes:
            self.expect(f"one {size // 1024} KiB header", self.exchange(
                request_bytes("GET", "/health", {"X-Big": "a" * size})), header_refused if size > 80 * 1024 else [(200, None)])
        count = 20_000 if not short else 5_000
        many = request_bytes("GET", "/health").replace(b"\r\n\r\n", b"".join(b"\r\nX-H%d: v" % i for i in range(count)) + b"\r\n\r\n")
        self.expect(f"{count} headers", self.exchange(many), header_refused)
        self.expect("a 1 MiB bearer token", self.exchange(request_bytes("GET", "/v1/items", {"Authorization": "Bearer " + "a" * MIB})),
                    header_refused)
        self.expect("invalid UTF-8 in Idempotency-Key", self.exchange(request_bytes(
            "POST", "/v1/items", {"Idempotency-Key": b"k\xff\xfe"}, body=json.dumps(draft("Key")).encode(), token=self.editor)),
            [(400, "invalidParameter")])
        self.expect("an Idempotency-Key of 256 characters", self.exchange(request_bytes(
            "POST", "/v1/items", {"Idempotency-Key": "k" * 256}, body=json.dumps(draft("Key")).encode(), token=self.editor)),
            [(400, "invalidParameter")])
        item = Client(self.server.port, self.editor).request("POST", "/v1/items", draft("Target")).json()
        for value in (b'"1\xff"', b"\xff", b'"' + b"9" * 10_000 + b'"', b'"1", ' * 10_000 + b'"1"'):
            self.expect(f"If-Match {value[:12]!r}", self.exchange(request_bytes(
                "PUT", f"/v1/items/{item['id']}", {"If-Match": value}, body=json.dumps(draft("Target")).encode(), token=self.editor)),
                [(400, "invalidParameter"), (412, "preconditionFailed"), (200, None), (431, None)])
        self.expect("a NUL in a header", self.exchange(request_bytes("GET", "/health", {"X-Nul": b"a\x00b"})), [(400, None)])
        self.expect("a header without a colon", self.exchange(
            b"GET /health HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"), [(400, None)])
        self.expect("Content-Length beside chunked", self.exchange(request_bytes(
            "POST", "/v1/items", {"Content-Length": "5", "Transfer-Encoding": "chunked"}, body=b"0\r\n\r\n", token=self.editor)),
            [(400, None)])
        self.expect("two different Content-Lengths", self.exchange(
            b"POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"), [(400, None)])
        self.expect("a Content-Type that is not JSON", self.exchange(request_bytes(
            "POST", "/v1/items", {"Content-Type": "text/plain\xff"}, body=b"{}", token=self.editor).replace(
            b"Content-Type: application/json\r\n", b"")), [(415, "unsupportedMediaType"), (400, None)])

    # --------------------------------------------------------------------------------------- URLs

    def urls(self, short):
        for size in [64 * 1024] + ([] if short else [MIB]):
            self.expect(f"a {size // 1024} KiB path", self.exchange(request_bytes("GET", "/v1/items/" + "a" * size, token=self.editor)),
                        [(404, "notFound")] if size < 80 * 1024 else [(431, "requestHeaderFieldsTooLarge")])
        for label, path, allowed in [
            ("invalid UTF-8 in a clientID", "/v1/clients/%ff%fe/navigation", [(400, "invalidParameter")]),
            ("a NUL in a clientID", "/v1/clients/a%00b/navigation", [(400, "invalidParameter")]),
            ("a slash in a clientID", "/v1/clients/a%2Fb/navigation", [(400, "invalidParameter"), (404, "notFound")]),
            ("invalid UTF-8 in an item id", "/v1/items/%ff", [(404, "notFound")]),
            ("invalid UTF-8 in since", "/v1/changes?since=%ff%fe", [(400, "invalidParameter")]),
            ("a NUL in q (no name holds one)", "/v1/items?q=a%00b", [(200, None)]),
            ("invalid UTF-8 in q", "/v1/items?q=%ff%fe", [(200, None), (400, "invalidParameter")]),
            ("a huge limit", "/v1/items?limit=99999999999999999999999", [(400, "invalidParameter")]),
            ("a negative limit", "/v1/items?limit=-1", [(422, "validationFailed")]),
            ("wait out of range", "/v1/changes?since=now&wait=99999999999", [(400, "invalidParameter"), (422, "validationFailed")]),
            ("a bad percent escape", "/v1/items?q=%zz", [(200, None), (400, None)]),
            ("10,000 query parameters", "/v1/items?" + "&".join(f"p{i}=1" for i in range(10_000)), [(200, None), (400, None)]),
            ("a cursor of 100 KiB", "/v1/items?after=" + "A" * 100_000, [(431, "requestHeaderFieldsTooLarge")]),
        ]:
            answer = self.expect(label, self.exchange(request_bytes("GET", path, token=self.editor)), allowed)
            if "NUL in q" in label and answer.status == 200:
                self.violations.check(json.loads(answer.body)["items"] == [], f"{label}: matched {answer.body[:200]!r}")
        self.expect("a raw byte 0xff in the path", self.exchange(b"GET /v1/items/\xff HTTP/1.1\r\nHost: x\r\n\r\n"),
                    [(400, None), (404, "notFound")])

    # ----------------------------------------------------------------------------------- protocol

    def protocol(self, short):
        count = 500
        raw = Raw(self.server.port)
        raw.send(b"".join(request_bytes("GET", "/health") for _ in range(count)))
        answers = [raw.answer() for _ in range(count)]
        raw.close()
        self.cases += 1
        self.violations.check(all(a.status == 200 for a in answers),
                              f"{count} pipelined requests: {[a for a in answers if a.status != 200][:3]}")
        self.expect("HTTP/1.0 without Host", self.exchange(b"GET /health HTTP/1.0\r\n\r\n"), [(200, None), (400, None)])
        self.expect("HTTP/1.1 without Host", self.exchange(b"GET /health HTTP/1.1\r\n\r\n"), [(400, "invalidRequest")])
        self.expect("two Host headers", self.exchange(b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
                    [(400, "invalidRequest")])
        self.expect("a Host with a path", self.exchange(b"GET /health HTTP/1.1\r\nHost: a/b\r\n\r\n"), [(400, "invalidRequest")])
        self.expect("an invalid chunk size", self.exchange(request_bytes(
            "POST", "/v1/items", {"Transfer-Encoding": "chunked"}, body=b"zz\r\nabc\r\n0\r\n\r\n", token=self.editor)),
            [(400, None)])
        self.expect("a chunk size beyond 64 bits", self.exchange(request_bytes(
            "POST", "/v1/items", {"Transfer-Encoding": "chunked"}, body=b"fffffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
            token=self.editor)), [(400, None), (413, "payloadTooLarge")])
        self.expect("an unknown method", self.exchange(b"BREW /v1/items HTTP/1.1\r\nHost: x\r\n\r\n"),
                    [(400, None), (405, "methodNotAllowed"), (501, None)])
        self.expect("HTTP/2 preface", self.exchange(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), [(400, None), (None, None), (505, None)])
