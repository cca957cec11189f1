"""Walk GitHub's OpenAPI description next to a Ballet model and list every
documented value of a field Ballet reads that the model refuses.

For each field the model declares (recursively through nested models and
arrays of them) the walker asks the schema what GitHub may send there:
- absence, when the property is not `required`;
- null, when it is `nullable`;
- every `enum` member;
- every alternative of a `oneOf`/`anyOf`.
Each such value is put into an otherwise valid document (built from the
schema itself) and validated with the model. A lenient model (webhooks) must
also read the value back rather than drop it to None: a value dropped
silently is a value Ballet cannot act on.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

ABSENT = object()


@dataclass
class Spec:
    doc: dict[str, Any]

    def resolve(self, node: Any) -> Any:
        seen = 0
        while isinstance(node, dict) and "$ref" in node:
            ref: str = node["$ref"]
            assert ref.startswith("#/"), ref
            target: Any = self.doc
            for part in ref[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
            seen += 1
            assert seen < 50, f"a $ref loop at {ref}"
        return node

    def response(self, method: str, path: str, status: str) -> dict[str, Any]:
        op = self.doc["paths"][path][method]
        content = op["responses"][status]["content"]
        return self.resolve(content["application/json"]["schema"])  # type: ignore[no-any-return]

    def webhook(self, name: str) -> dict[str, Any]:
        body = self.doc["x-webhooks"][name]["post"]["requestBody"]
        return self.resolve(body["content"]["application/json"]["schema"])  # type: ignore[no-any-return]

    def flat(self, schema: Any) -> dict[str, Any]:
        """The schema with its `allOf` merged (properties, required, nullable)."""
        schema = self.resolve(schema)
        if "allOf" not in schema:
            return schema  # type: ignore[no-any-return]
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        props: dict[str, Any] = dict(merged.get("properties", {}))
        required: list[str] = list(merged.get("required", []))
        for part in schema["allOf"]:
            part = self.flat(part)
            props.update(part.get("properties", {}))
            required += part.get("required", [])
            for key in ("type", "enum", "nullable", "items"):
                if key in part and key not in merged:
                    merged[key] = part[key]
        merged["properties"] = props
        merged["required"] = required
        return merged

    def alternatives(self, schema: Any) -> list[dict[str, Any]]:
        schema = self.flat(schema)
        alts = schema.get("oneOf") or schema.get("anyOf")
        if not alts:
            return [schema]
        out: list[dict[str, Any]] = []
        for alt in alts:
            out.extend(self.alternatives(alt))
        return out


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (through Optional, tuple, list, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(nested_models(arg))
    return found


def is_sequence(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return True
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return any(is_sequence(a) for a in typing.get_args(annotation))
    return False


def is_nullable(spec: Spec, schema: Any) -> bool:
    return any(
        alt.get("nullable") is True or alt.get("type") == "null" or None in alt.get("enum", [])
        for alt in spec.alternatives(schema)
    )


def sample(spec: Spec, schema: Any, model: type[BaseModel] | None, depth: int = 0) -> Any:
    """One valid value of `schema` (a model's fields filled, the rest minimal)."""
    alts = spec.alternatives(schema)
    if model is not None:
        # The alternative the model is of: an object (or an array of them), not a bare string.
        alts = [
            a for a in alts if a.get("type") in ("object", "array") or "properties" in a
        ] or alts
    schema = alts[0]
    enum = [e for e in schema.get("enum", []) if e is not None]
    if enum:
        return enum[0]
    kind = schema.get("type")
    if kind == "array":
        item = sample(spec, schema.get("items", {}), model, depth + 1)
        return [item]
    if kind == "object" or "properties" in schema:
        return document(spec, schema, model, depth + 1) if model is not None else {}
    return {"integer": 1, "number": 2.0, "boolean": True}.get(kind or "", "x")


def document(spec: Spec, schema: Any, model: type[BaseModel], depth: int = 0) -> dict[str, Any]:
    schema = spec.flat(spec.alternatives(schema)[0])
    props = schema.get("properties", {})
    doc: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in props and depth < 8:
            inner = nested_models(info.annotation)
            doc[key] = sample(spec, props[key], inner[0] if inner else None, depth)
    return doc


@dataclass
class Walk:
    spec: Spec
    lenient: bool = False  # webhook models: a documented value must not read as None
    # Fields the edge adds to every document before validating (Envelope's `event`).
    fixed: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    checked: int = 0

    def model(self, model: type[BaseModel], schema: Any, where: str) -> None:
        for alt in self.spec.alternatives(schema):
            flat = self.spec.flat(alt)
            if flat.get("type") == "array":
                self.model(model, flat.get("items", {}), f"{where}[]")
                continue
            if "properties" not in flat:
                continue  # a oneOf alternative of another kind (a string label, say)
            self._object(model, flat, where)

    def _object(self, model: type[BaseModel], schema: dict[str, Any], where: str) -> None:
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        base = {
            **document(self.spec, schema, model),
            **(self.fixed if where.count(".") == 0 else {}),
        }
        for name, info in model.model_fields.items():
            key = info.alias or name
            path = f"{where}.{key}"
            if key in self.fixed and where.count(".") == 0:
                continue
            if key not in props:
                # Not in this shape (a list item, one alternative of a oneOf): absent.
                self._try(model, base, key, ABSENT, path)
                continue
            prop = props[key]
            values: list[Any] = []
            if key not in required:
                values.append(ABSENT)
            if is_nullable(self.spec, prop):
                values.append(None)
            inner = nested_models(info.annotation)
            model_of = inner[0] if inner else None
            for alt in self.spec.alternatives(prop):
                values.extend(e for e in alt.get("enum", []) if e is not None)
                if alt.get("type") == "array":
                    values.extend([v] for v in self._item_values(alt.get("items", {}), model_of))
                elif not inner or alt.get("type") not in ("object", None):
                    values.append(sample(self.spec, alt, model_of))
            for value in values:
                self._try(model, base, key, value, path)
            for sub in inner:
                self.model(sub, prop, path)

    def _item_values(self, items: Any, model: type[BaseModel] | None) -> list[Any]:
        """What one item of an array may be: each alternative, null, each enum member."""
        out: list[Any] = [None] if is_nullable(self.spec, items) else []
        for alt in self.spec.alternatives(items):
            out.extend(e for e in alt.get("enum", []) if e is not None)
            out.append(sample(self.spec, alt, model))
        return out

    def _try(
        self, model: type[BaseModel], base: dict[str, Any], key: str, value: Any, path: str
    ) -> None:
        doc = dict(base)
        if value is ABSENT:
            doc.pop(key, None)
        else:
            doc[key] = value
        self.checked += 1
        shown = "absent" if value is ABSENT else repr(value)
        try:
            parsed = model.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            self.problems.append(f"{path} = {shown}: refused ({first['msg']})")
            return
        if self.lenient and value is not ABSENT and value is not None:
            read = getattr(parsed, _attr(model, key))
            if read is None:
                self.problems.append(f"{path} = {shown}: read as None (dropped)")


def _attr(model: type[BaseModel], key: str) -> str:
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return name
    return key
