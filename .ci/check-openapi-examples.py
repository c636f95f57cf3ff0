#!/usr/bin/env python3
"""Fails when an example in the OpenAPI document does not fit its own schema.

Every JSON request and response body of every operation (responses given by `$ref` included)
that has an `example` or `examples` is checked against its `schema` (JSON Schema 2020-12, the
document's own components resolved). Schemathesis checks the server's answers against the
schemas; this checks that what a reader copies from the document is an answer the server gives.
Prints each misfit as `METHOD PATH STATUS EXAMPLE: message at path` and exits 1 if there is one.
Usage: python .ci/check-openapi-examples.py   (needs PyYAML and jsonschema, which .ci/run installs
in its virtual environment and runs it with)
"""
import json
import os
import sys

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENT = os.path.join(ROOT, "Sources/StockroomServer/Resources/openapi.yaml")

with open(DOCUMENT, encoding="utf-8") as file:
    document = yaml.safe_load(file)
registry = Registry().with_resource("document", Resource.from_contents(document, default_specification=DRAFT202012))


def resolved(node):
    """A response, request body or example given by `$ref` to a component other than a schema."""
    while isinstance(node, dict) and node.get("$ref", "").startswith("#/components/") \
            and not node["$ref"].startswith("#/components/schemas/"):
        target = document
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def misfits(schema, value):
    """The validator's messages for `value` against `schema`, whose `#/components` refs name the document's."""
    schema = json.loads(json.dumps(schema).replace('"#/components/', '"document#/components/'))
    return [f"{error.message[:300]} at {list(error.absolute_path)}"
            for error in Draft202012Validator(schema, registry=registry).iter_errors(value)]


failures = 0
checked = 0
for path, operations in document["paths"].items():
    for method, operation in operations.items():
        if not isinstance(operation, dict) or "responses" not in operation:
            continue
        bodies = [("request", resolved(operation["requestBody"]))] if "requestBody" in operation else []
        bodies += [(status, resolved(response)) for status, response in operation["responses"].items()]
        for status, body in bodies:
            for media_type, media in (body.get("content") or {}).items():
                if "json" not in media_type or "schema" not in media:
                    continue
                examples = [("example", media["example"])] if "example" in media else []
                for name, example in (media.get("examples") or {}).items():
                    example = resolved(example)
                    if "value" in example:
                        examples.append((name, example["value"]))
                for name, value in examples:
                    checked += 1
                    for message in misfits(media["schema"], value):
                        failures += 1
                        print(f"{method.upper()} {path} {status} {name}: {message}")
if failures:
    sys.exit(1)
print(f"check-openapi-examples: {checked} examples fit their schemas")
