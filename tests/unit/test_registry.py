"""The registry: decorators mark, `Registry` checks names and schemas, discovery finds modules."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.toolkit.specs import Tool, spec_of
from mcp_tools import (
    PromptArgument,
    Registry,
    RegistryError,
    prompt,
    resource,
    resource_template,
    tool,
)

OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}
PLUGIN = "tests.unit.plugin_greeting"


def make_tool(name: str, schema: dict | None = None):
    """Decorate a fresh function as a tool called name."""

    def fn(**arguments) -> str:
        """Do nothing with whatever the schema allows, politely."""
        return "ok"

    return tool(name, input_schema=schema or OBJECT)(fn)


# decorators
def test_tool_decorator_marks_without_registering_or_wrapping():
    def hello() -> str:
        """Say hello.

        More detail that tools/list does not need.
        """
        return "hi"

    marked = tool(input_schema=OBJECT)(hello)
    assert marked is hello and marked() == "hi"
    registry = Registry()
    assert "hello" not in registry.tools
    registry.add_function(marked)
    found = registry.tools["hello"]
    assert isinstance(found, Tool)
    assert found.description == "Say hello."
    assert found.wants_context is False


def test_explicit_name_description_title_and_annotations_are_kept():
    registry = Registry()
    registry.add_function(
        tool("greet.v2", input_schema=OBJECT, description="Greets.", title="Greeter", annotations={"x": 1})(
            lambda: "hi"
        )
    )
    spec = registry.tools["greet.v2"]
    assert (spec.description, spec.title, spec.annotations) == ("Greets.", "Greeter", {"x": 1})


def test_a_ctx_parameter_asks_for_the_request_context():
    def with_ctx(text: str, ctx) -> str:
        """Use the context."""
        return text

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    registry = Registry()
    registry.add_function(tool(input_schema=schema)(with_ctx))
    assert registry.tools["with_ctx"].wants_context is True


def test_bare_tool_and_prompt_decorators_mark_the_function_from_its_hints():
    @tool
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    @prompt
    def review(code: str) -> str:
        """Review the code."""
        return code

    registry = Registry()
    registry.add_function(shout)
    registry.add_function(review)
    assert shout("a") == "A" and review("x") == "x"  # marked, not wrapped
    assert registry.tools["shout"].input_schema["required"] == ["text"]
    assert [(arg.name, arg.required) for arg in registry.prompts["review"].arguments] == [("code", True)]


@pytest.mark.parametrize("decorator", [resource, resource_template])
def test_bare_resource_decorators_are_rejected(decorator):
    with pytest.raises(RegistryError, match="not bare"):

        @decorator
        def oops() -> str:
            """Forgot the URI."""
            return ""


# names
@pytest.mark.parametrize("name", ["has space", "slash/name", "x" * 129, "ünïcode", "semi;colon", "tab\t"])
def test_malformed_tool_names_are_rejected_at_decoration(name):
    with pytest.raises(RegistryError, match="must match"):
        make_tool(name)


@pytest.mark.parametrize("name", ["a", "get_time", "files.read-v2", "A.B_C-D", "x" * 128])
def test_well_formed_tool_names_are_accepted(name):
    registry = Registry()
    registry.add_function(make_tool(name))
    assert name in registry.tools


def test_malformed_prompt_names_are_rejected():
    with pytest.raises(RegistryError):
        prompt("bad name", arguments=[PromptArgument("x")])(lambda x: [])


def test_a_tool_without_input_schema_and_without_hints_is_rejected_saying_to_add_either():
    with pytest.raises(RegistryError, match=r"parameter 'x' has no type hint; add one .* or pass input_schema"):
        tool("schemaless")(lambda x: 1)


def test_duplicate_tool_names_are_rejected():
    registry = Registry()
    registry.add_function(make_tool("same"))
    with pytest.raises(RegistryError, match="duplicate tool 'same'"):
        registry.add_function(make_tool("same"))
    assert len(registry.tools) == 1


def test_an_unmarked_function_cannot_be_added():
    with pytest.raises(RegistryError, match="no @tool"):
        Registry().add_function(lambda: None)


# schemas
@pytest.mark.parametrize(
    "schema, reason",
    [
        ({"type": "object", "properties": {"a": {"type": "integr"}}}, "invalid JSON Schema"),
        ({"type": "object", "required": "a"}, "invalid JSON Schema"),
        ({"type": "object", "properties": {"a": {"minimum": "zero"}}}, "invalid JSON Schema"),
        ({"type": "array", "items": {}}, "type must be 'object'"),
        ({"properties": {}}, "type must be 'object'"),
        (["not", "a", "dict"], "must be a dict"),
    ],
)
def test_invalid_input_schemas_are_rejected_at_decoration(schema, reason):
    with pytest.raises(RegistryError, match=reason):
        make_tool("bad_schema", schema)


@pytest.mark.parametrize("declare", [
    lambda: tool("bad name!", input_schema=OBJECT),
    lambda: tool("bad_input", input_schema={"type": "array"}),
    lambda: tool("bad_output", input_schema=OBJECT, output_schema={"type": "object", "properties": {"r": {"type": 5}}}),
    lambda: resource("test://r", name="bad name!"),
], ids=["tool name", "input schema", "output schema", "resource name"])
def test_a_bad_name_or_schema_names_the_file_line_and_function(declare):
    def declared_here() -> str:
        """Stand for a tool file's function."""
        return "x"

    line = declared_here.__code__.co_firstlineno
    with pytest.raises(RegistryError, match=rf"test_registry\.py:{line}, function .*declared_here"):
        declare()(declared_here)


def test_invalid_output_schema_is_rejected_at_decoration():
    with pytest.raises(RegistryError, match="output_schema"):
        tool("answer", input_schema=OBJECT, output_schema={"type": "object", "properties": {"r": {"type": 5}}})(
            lambda: 1
        )


def test_the_compiled_validator_enforces_the_schema():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    registry = Registry()
    registry.add_function(make_tool("counted", schema))
    validator = registry.tools["counted"].input_validator
    assert validator.is_valid({"n": 1})
    assert not validator.is_valid({"n": "1"})
    assert not validator.is_valid({})


# discovery
def test_discovery_finds_the_seed_tools():
    registry = Registry.discover()
    assert {"add", "echo", "get_time"} <= set(registry.tools)
    assert registry.tools["add"].fn(2, 3) == 5
    assert registry.tools["echo"].fn("x") == "x"


def test_discovery_gives_each_call_its_own_registry():
    first, second = Registry.discover(), Registry.discover()
    first.remove("tool", "echo")
    assert "echo" in second.tools


def test_discovery_loads_plugin_modules():
    registry = Registry.discover(plugins=[PLUGIN])
    assert registry.tools["greet"].fn("Ada") == "Hello, Ada!"
    # echo is imported by the plugin but defined in mcp_tools: registered once, from there.
    assert registry.tools["echo"].fn.__module__ == "mcp_tools.echo"


def test_mcp_plugins_setting_names_the_plugin_modules():
    settings = Settings.from_environ({"MCP_PLUGINS": f" {PLUGIN} , "})
    assert settings.plugins == (PLUGIN,)
    assert "greet" in Registry.discover(plugins=settings.plugins).tools


def test_a_plugin_that_reuses_a_tool_name_is_rejected():
    with pytest.raises(RegistryError, match="duplicate tool 'echo'"):
        Registry.discover(plugins=["tests.unit.plugin_duplicate"])


def test_a_missing_plugin_module_fails_loudly():
    with pytest.raises(ModuleNotFoundError):
        Registry.discover(plugins=["tests.unit.no_such_plugin"])


def test_add_module_counts_only_functions_defined_there():
    import tests.unit.plugin_greeting as plugin

    registry = Registry()
    assert registry.add_module(plugin) == 1
    assert list(registry.tools) == ["greet"]


# change notifications
def test_listeners_hear_about_added_and_removed_tools():
    heard: list[str] = []
    registry = Registry()
    registry.on_change(heard.append)
    registry.add_function(make_tool("temp"))
    assert registry.remove("tool", "temp") is True
    assert registry.remove("tool", "temp") is False
    assert heard == ["tool", "tool"]


def test_removing_an_unknown_kind_names_the_kinds_there_are():
    registry = Registry()
    registry.add_function(make_tool("temp"))
    with pytest.raises(RegistryError, match="Unknown kind 'tools'; use one of 'tool', 'resource'"):
        registry.remove("tools", "temp")
    assert "temp" in registry.tools


def test_a_duplicate_names_both_places_it_is_declared():
    with pytest.raises(RegistryError) as caught:
        Registry.discover(plugins=["tests.unit.plugin_duplicate"])
    message = str(caught.value)
    assert "mcp_tools/echo.py:" in message and "function echo;" in message
    assert "tests/unit/plugin_duplicate.py:" in message and "function another_echo;" in message


@pytest.mark.parametrize("mark", [
    lambda name: tool(name),
    lambda name: resource(f"test://{name}"),
    lambda name: resource_template(f"test://{name}/{{x}}"),
    lambda name: prompt(name),
], ids=["tool", "resource", "resource template", "prompt"])
@pytest.mark.parametrize("register", ["add", "declare"])
def test_a_duplicate_of_any_kind_names_both_functions_in_add_and_declare(mark, register):
    def first(x: str = "") -> str:
        return x

    def second(x: str = "") -> str:
        return x

    registry = Registry()
    getattr(registry, register)(spec_of(mark("same")(first)))
    with pytest.raises(RegistryError, match=r"^duplicate .*'(same|test://same.*)': declared at "
                                            r"tests/unit/test_registry.py:\d+, function .*first; again at "
                                            r"tests/unit/test_registry.py:\d+, function .*second; give one"):
        getattr(registry, register)(spec_of(mark("same")(second)))
