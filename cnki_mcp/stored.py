"""Reading back what the store holds with this release's models. A release adds fields to stored
records without a schema step (the JSON in `papers.data`, `operations.record`, `searches.summary`,
…), so a person who goes back to an earlier release finds records carrying keys its models do not
know. Most models forbid unknown keys (they are the parsers' contracts and the tools' published
output schemas): a paper whose author had one more field failed search_library, get_metadata and
export_citations (INVALID_ARGUMENT blaming the caller's arguments, or INTERNAL), an operation
record failed operation_status and diagnostics. `load` validates as usual and, only when that
fails, again without the keys the model (and every model nested in it) does not declare. Pure."""

from __future__ import annotations

import json
import logging
import types
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


def load(model: type[M], data: str | bytes | dict[str, Any]) -> M:
    """`model` validated from stored JSON text or its decoded dict; keys no model declares are
    dropped when the record does not validate as it is (the original error is raised when it
    still does not: a value this release cannot read is not hidden)."""
    try:
        if isinstance(data, dict):
            return model.model_validate(data)
        return model.model_validate_json(data)
    except ValidationError as exc:
        try:
            decoded = data if isinstance(data, dict) else json.loads(data)
        except ValueError:  # not JSON at all: pydantic's own error says so
            raise exc from None
        try:
            return model.model_validate(known_keys(model, decoded))
        except ValidationError:
            raise exc from None


def load_cached(model: type[M], data: str | bytes | dict[str, Any]) -> M | None:
    """`load` for a cache row (a page read from CNKI and kept to spare a request): None when this
    release cannot read it (not JSON, not an object, a value of another type), so the row is a
    miss and CNKI is asked again, whose answer replaces it. Never for the library's own records,
    where such a value is an error to show, not a page to read again."""
    try:
        return load(model, data)
    except ValidationError as exc:  # also what text that is not JSON at all gives
        # only the model's own refusal: a TypeError or another error is a bug to show, not a row to
        # read again on every call (each a CNKI request)
        log.warning("stored %s not read by this release, asked again: %s", model.__name__, exc.errors()[:1])
        return None


def known_keys(model: type[BaseModel], data: Any) -> Any:
    """`data` with only the keys `model` declares (by name or alias), recursively through the
    fields whose type is a model, a list, tuple, dict or union of models."""
    if not isinstance(data, dict):
        return data
    fields = model.model_fields
    names = {alias: name for name, f in fields.items() for alias in (name, f.alias) if alias}
    return {key: _fit(fields[names[key]].annotation, value) for key, value in data.items() if key in names}


def _fit(annotation: Any, value: Any) -> Any:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _fit(get_args(annotation)[0], value)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return known_keys(annotation, value)
    args = get_args(annotation)
    if origin in (list, tuple, set, frozenset) and isinstance(value, list) and args:
        return [_fit(args[0], v) for v in value]
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return {k: _fit(args[1], v) for k, v in value.items()}
    if origin in (Union, types.UnionType) and isinstance(value, dict):
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if len(models) == 1:  # `Model | None`: the one model a dict can be
            return known_keys(models[0], value)
    return value
