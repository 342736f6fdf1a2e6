#!/usr/bin/env python3
"""json_check.py SCHEMA_DIR NAME FILE: validates the JSON answer in FILE against
SCHEMA_DIR/NAME.json (draft 2020-12, its $refs to the other schemas of SCHEMA_DIR resolved
there, never fetched) and checks that no key of ours is camelCase: every key but those of the
values a command passes on as it got them (a server's "server_info", a tool's "result").
Exits 0 when both hold, 1 with the reasons on stderr, 2 when python3-jsonschema is missing."""
import json
import pathlib
import re
import sys

try:
    import jsonschema
except ImportError:
    sys.stderr.write("python3-jsonschema is missing: run scripts/install-deps\n")
    sys.exit(2)

PASSED_ON = {"server_info", "result"}
CAMEL = re.compile(r"[a-z0-9][A-Z]")


def camel_keys(value, path="$"):
    """The paths of the camelCase keys in value, outside the values passed on."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if CAMEL.search(k):
                found.append(f"{path}.{k}")
            if k not in PASSED_ON:
                found += camel_keys(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += camel_keys(v, f"{path}[{i}]")
    return found


def validator(schema_dir, name):
    schemas = {}
    for f in pathlib.Path(schema_dir).glob("*.json"):
        s = json.loads(f.read_text())
        schemas[s["$id"]] = s
    schema = json.loads((pathlib.Path(schema_dir) / f"{name}.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    try:  # jsonschema >= 4.18: a registry of our schemas, nothing retrieved
        from referencing import Registry, Resource

        registry = Registry().with_resources(
            (i, Resource.from_contents(s)) for i, s in schemas.items()
        )
        return cls(schema, registry=registry)
    except ImportError:  # older: a resolver whose store holds them
        resolver = jsonschema.RefResolver.from_schema(schema, store=schemas)
        return cls(schema, resolver=resolver)


def main():
    schema_dir, name, path = sys.argv[1:4]
    text = pathlib.Path(path).read_text()
    try:
        doc = json.loads(text)
    except ValueError as e:
        sys.stderr.write(f"{name}: not JSON ({e}): {text[:400]!r}\n")
        return 1
    errors = sorted(validator(schema_dir, name).iter_errors(doc), key=lambda e: e.path)
    for e in errors:
        # under oneOf, the reason of the branch that came closest
        e = jsonschema.exceptions.best_match([e]) if not e.context else \
            jsonschema.exceptions.best_match(e.context)
        where = "$" + "".join(f"[{p!r}]" for p in e.absolute_path)
        sys.stderr.write(f"{name}: {where}: {e.message[:300]}\n")
    camel = camel_keys(doc)
    for p in camel:
        sys.stderr.write(f"{name}: camelCase key {p}\n")
    return 1 if errors or camel else 0


sys.exit(main())
