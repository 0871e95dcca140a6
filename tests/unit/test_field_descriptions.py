"""Field descriptions of TypedDicts and dataclasses, from Annotated or the class docstring (Annotated wins).

Checked where the classes are nested in parameters and in return types, with annotations evaluated at once and as
strings (`from __future__ import annotations`).
"""

from __future__ import annotations

import pytest

from flask_mcp_gevent import tool
from flask_mcp_gevent.toolkit.specs import spec_of
from tests.unit import described_models_eager, described_models_lazy

ADDRESS_DESCRIPTIONS = {"street": "The street and number.", "city": "The city.",
                        "note": "Anything the courier should know."}
ORDER_DESCRIPTIONS = {"item": "What is ordered.", "address": "Where it goes. Continued on a second line.",
                      "quantity": "How many."}


def descriptions(schema: dict) -> dict[str, str]:
    """Each property's description."""
    return {name: value.get("description") for name, value in schema["properties"].items()}


@pytest.fixture(params=[described_models_eager, described_models_lazy], ids=["eager", "lazy"])
def models(request):
    return request.param


def test_nested_parameters_have_their_fields_described(models):
    schema = spec_of(tool(models.place)).input_schema
    order = schema["properties"]["order"]
    assert descriptions(order) == ORDER_DESCRIPTIONS
    assert descriptions(order["properties"]["address"]) == ADDRESS_DESCRIPTIONS
    assert descriptions(schema["properties"]["addresses"]["items"]) == ADDRESS_DESCRIPTIONS
    assert order["properties"]["address"]["required"] == ["street", "city"]


def test_return_types_have_their_fields_described(models):
    assert descriptions(spec_of(tool(models.place)).output_schema) == ORDER_DESCRIPTIONS
    result = spec_of(tool(models.deliveries)).output_schema["properties"]["result"]
    assert descriptions(result["items"]) == ADDRESS_DESCRIPTIONS
