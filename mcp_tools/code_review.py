"""A prompt: the seed's `code_review`, asking the model to review a piece of code."""

from mcp_tools import PromptArgument, prompt

LANGUAGES = ("c", "cpp", "go", "java", "javascript", "python", "rust", "shell", "sql", "typescript")


def complete_language(name: str, value: str) -> list[str]:
    """Suggest languages that start with what was typed."""
    return [language for language in LANGUAGES if language.startswith(value.lower())]


@prompt(
    arguments=[
        PromptArgument("code", "The code to review.", required=True),
        PromptArgument("language", "The programming language, if not obvious."),
    ],
    complete=complete_language,
)
def code_review(code: str, language: str = "") -> list[dict]:
    """Review code for bugs, clarity and style, and suggest concrete fixes."""
    label = f" {language}" if language else ""
    return [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": (
                    f"Please review this{label} code. Point out bugs first, then unclear or fragile parts, "
                    f"then style, and suggest concrete fixes.\n\n```{language}\n{code}\n```"
                ),
            },
        }
    ]
