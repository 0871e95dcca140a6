"""Registration checks a function against its declaration: no async, and parameters that fit the arguments."""

from __future__ import annotations

import pytest

from mcp_tools import PromptArgument, Registry, RegistryError, prompt, resource, resource_template, tool

HERE = "tests/unit/test_registry_signatures.py"


def schema(*required: str, optional: tuple[str, ...] = ()) -> dict:
    """An object schema with string properties: the required ones, then the optional ones."""
    names = (*required, *optional)
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": name} for name in names},
        "required": list(required),
        "additionalProperties": False,
    }


def registered(fn) -> Registry:
    """A registry holding fn, which a decorator has marked."""
    registry = Registry()
    registry.add_function(fn)
    return registry


# async
def test_an_async_tool_is_rejected_naming_its_file_and_function():
    async def fetch(url: str) -> str:
        """Fetch a page."""
        return url

    with pytest.raises(RegistryError, match="not async def") as caught:
        tool(input_schema=schema("url"))(fetch)
    assert "tool 'fetch'" in str(caught.value)
    assert f"{HERE}:" in str(caught.value)
    assert "function test_an_async_tool_is_rejected_naming_its_file_and_function.<locals>.fetch" in str(caught.value)


def test_an_async_generator_tool_is_rejected():
    async def stream() -> object:
        """Stream something."""
        yield "x"

    with pytest.raises(RegistryError, match="not async def"):
        tool(input_schema=schema())(stream)


def test_async_resources_templates_and_prompts_are_rejected():
    async def read() -> str:
        """Read."""
        return ""

    async def read_row(row: str) -> str:
        """Read a row."""
        return row

    async def render() -> str:
        """Render."""
        return ""

    for decorate, fn in ((resource("test://a"), read), (resource_template("test://rows/{row}"), read_row),
                         (prompt(), render)):
        with pytest.raises(RegistryError, match="not async def"):
            decorate(fn)


# tool schema against signature
def test_a_property_without_a_parameter_is_rejected():
    def multiply(a: float, b: float) -> float:
        """Multiply."""
        return a * b

    with pytest.raises(RegistryError) as caught:
        tool(input_schema=schema("a", "b", optional=("x",)))(multiply)
    message = str(caught.value)
    assert "tool 'multiply'" in message and f"{HERE}:" in message and "multiply" in message
    assert "property 'x' has no parameter of that name" in message


def test_a_required_property_without_a_parameter_is_rejected():
    def greet() -> str:
        """Greet."""
        return "hi"

    with pytest.raises(RegistryError, match="property 'name' has no parameter of that name"):
        tool(input_schema={"type": "object", "required": ["name"]})(greet)


def test_a_parameter_without_a_default_must_be_a_required_property():
    def multiply(a: float, b: float) -> float:
        """Multiply."""
        return a * b

    with pytest.raises(RegistryError, match="parameter 'b' has no default, so it must be a required property"):
        tool(input_schema=schema("a", optional=("b",)))(multiply)


def test_a_parameter_the_schema_does_not_name_is_rejected():
    def multiply(a: float, b: float) -> float:
        """Multiply."""
        return a * b

    with pytest.raises(RegistryError, match="parameter 'b' has no default"):
        tool(input_schema=schema("a"))(multiply)


def test_every_problem_is_named_in_one_message():
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(RegistryError) as caught:
        tool(input_schema=schema("x", "y"))(add)
    message = str(caught.value)
    for problem in ("property 'x'", "property 'y'", "parameter 'a'", "parameter 'b'"):
        assert problem in message


def test_a_positional_only_parameter_is_rejected():
    def shout(text: str, /) -> str:
        """Shout."""
        return text.upper()

    with pytest.raises(RegistryError, match="parameter 'text' is positional-only"):
        tool(input_schema=schema("text"))(shout)


@pytest.mark.parametrize(
    "declared",
    [schema("text"), schema("text", optional=("times",)), schema("text", "times")],
    ids=["default-left-out", "optional-property-with-default", "required-property-with-default"],
)
def test_required_properties_and_parameters_with_defaults_are_accepted(declared):
    def repeat(text: str, times: int = 1) -> str:
        """Repeat."""
        return text * times

    assert "repeat" in registered(tool(input_schema=declared)(repeat)).tools


def test_ctx_is_not_a_property_wherever_it_stands():
    def first(ctx, text: str) -> str:
        """ctx first."""
        return text

    def middle(text: str, ctx, times: int = 1) -> str:
        """ctx between."""
        return text

    def keyword(text: str, *, ctx) -> str:
        """ctx keyword-only."""
        return text

    for fn in (first, middle, keyword):
        assert registered(tool(input_schema=schema("text"))(fn)).tools[fn.__name__].wants_context


def test_a_property_named_ctx_without_kwargs_is_rejected():
    def clash(ctx) -> str:
        """A property would collide with the request context."""
        return ""

    with pytest.raises(RegistryError, match="property 'ctx' has no parameter"):
        tool(input_schema=schema("ctx"))(clash)


def test_kwargs_takes_every_property_but_named_parameters_still_need_required():
    def anything(**arguments) -> str:
        """Take any argument."""
        return ""

    def labelled(label: str, **rest) -> str:
        """Take a label and anything else."""
        return label

    assert "anything" in registered(tool(input_schema=schema("a", optional=("b",)))(anything)).tools
    assert "labelled" in registered(tool(input_schema=schema("label", optional=("x",)))(labelled)).tools
    with pytest.raises(RegistryError, match="parameter 'label' has no default"):
        tool(input_schema=schema(optional=("label",)))(labelled)


def test_a_tool_without_arguments_takes_an_empty_schema():
    def now() -> str:
        """Tell the time."""
        return ""

    assert "now" in registered(tool(input_schema=schema())(now)).tools


# resources and templates
def test_a_fixed_resource_reader_takes_no_arguments_but_may_take_ctx():
    def summary(ctx) -> str:
        """Summarise."""
        return ""

    def row(row: str) -> str:
        """Needs a variable the fixed URI does not have."""
        return row

    assert "test://summary" in registered(resource("test://summary")(summary)).resources
    with pytest.raises(RegistryError, match="resource 'test://row'.*parameter 'row' has no default"):
        resource("test://row")(row)


def test_a_template_reader_takes_exactly_the_uri_variables():
    def cell(table: str, row: str, ctx) -> str:
        """Read a cell."""
        return row

    def wrong(table: str, column: str) -> str:
        """Names a variable the template does not have."""
        return column

    def too_few(table: str) -> str:
        """Forgets the row."""
        return table

    template = "test://{table}/rows/{+row}"
    assert template in registered(resource_template(template)(cell)).templates
    with pytest.raises(RegistryError) as caught:
        resource_template(template)(wrong)
    message = str(caught.value)
    assert "URI variable 'row' has no parameter" in message and "parameter 'column' has no default" in message
    with pytest.raises(RegistryError, match="URI variable 'row' has no parameter"):
        resource_template(template)(too_few)


@pytest.mark.parametrize("template, unread", [
    ("search://{?q}", "{?q}"),
    ("test://{/path}", "{/path}"),
    ("test://{a,b}", "{a,b}"),
    ("test://{a", "{a"),
    ("test://x}/{q}", "}/"),
])
def test_a_template_expression_other_than_var_or_plus_var_is_refused(template, unread):
    # Left as literal text, it would make a template that matches no URI, with a message about the parameters.
    def read(q: str = "", path: str = "", a: str = "", b: str = "") -> str:
        """Read anything."""
        return q

    with pytest.raises(RegistryError) as caught:
        resource_template(template)(read)
    assert f"{unread!r} is not a URI variable; write {{name}}" in str(caught.value)
    assert f"{HERE}:" in str(caught.value)


# prompts
def test_prompt_arguments_and_parameters_must_match():
    def review(code: str, language: str = "") -> str:
        """Review code."""
        return code

    good = prompt(arguments=[PromptArgument("code", required=True), PromptArgument("language")])(review)
    assert "review" in registered(good).prompts
    with pytest.raises(RegistryError, match="prompt 'review'.*parameter 'code' has no default, so it must be a "
                                            "required argument"):
        prompt(arguments=[PromptArgument("code"), PromptArgument("language")])(review)
    with pytest.raises(RegistryError, match="argument 'style' has no parameter"):
        prompt(arguments=[PromptArgument("code", required=True), PromptArgument("style")])(review)


# what ships
def test_every_shipped_tool_resource_and_prompt_still_registers():
    registry = Registry.discover()
    assert {"add", "count_down", "echo", "get_time"} <= set(registry.tools)
    assert "config://server" in registry.resources
    assert "file://{+path}" in registry.templates
    assert "code_review" in registry.prompts
