"""Multi round-trip requests (MCP 2026-07-28): asking the client by answering input_required, then the retry.

On the stateless wire tools/call, prompts/get and resources/read run their work through `run_rounds`. Each ask
(ctx.elicit, ctx.sample, ctx.list_roots, ctx.ask_all) looks for its answer among those already given: sealed in
the verified requestState, then this round's inputResponses. An ask without one stops the work (InputRequired),
and the handler answers input_required with the open questions and a new requestState that seals every answer
used so far and the tool's round_state. The retry runs the work again from the top, so the Nth ask gets the
Nth answer. A 2025-era session never comes here: its asks are server-to-client requests, as before.

A state stays valid for its whole lifetime, so replaying the last round reruns what follows the last ask. A tool
whose effect must not repeat calls ctx.consume_answers() before it (`consume_round`): the request's id, which every
state of its rounds carries, is then recorded in the store, and any of those states sent again is refused (-32602,
reason "used"), an earlier round's included. Answers sent without a requestState answer ordinary asks (a client
may answer up front), but cannot pass consume_answers: its questions go out again, with a state to consume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from flask_mcp_gevent.conditions import CapacityError, StoreUnavailable
from flask_mcp_gevent.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_UNAVAILABLE,
    STORE_UNAVAILABLE_MESSAGE,
    RpcError,
)
from flask_mcp_gevent.stateless.request_state import RequestStateTooLarge
from flask_mcp_gevent.stateless.results import INPUT_REQUIRED_METHODS, input_required
from flask_mcp_gevent.toolkit.context import InputRequest, ToolError

__all__ = ["CAPABILITY_OF", "InputRequired", "MissingClientCapability", "RoundRefusal", "Rounds", "StartTask",
           "StateAlreadyUsed", "answer_problem", "ask_stateless", "consume_round", "required_capabilities",
           "run_rounds"]

ELICIT_ACTIONS = ("accept", "decline", "cancel")


class RoundsContext(Protocol):
    """What the rounds read and set on a request's context (RequestContext is the one that runs them)."""

    params: dict[str, Any]
    method: str | None
    session: Any
    services: Any
    round_state: Any
    rounds: Rounds | None
    store_unavailable: bool

    @property
    def principal(self) -> str | None:
        """Who the request speaks for."""

    @property
    def stateless(self) -> bool:
        """True on the 2026-07-28 wire."""


# The capability each question needs, as -32021's data.requiredCapabilities names it.
CAPABILITY_OF = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


class InputRequired(BaseException):  # noqa: N818 - control flow, like GeneratorExit: not an error
    """Stop a handler's work until the client answers these questions.

    A BaseException, so that a tool's own `except Exception:` cannot swallow it.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        """Keep the open questions: key -> {method, params}."""
        super().__init__(", ".join(requests))
        self.requests = requests


class StartTask(BaseException):  # noqa: N818 - control flow, like InputRequired
    """ctx.start_task() in a tool that asks before it becomes a task: stop here, the task reruns it from the top."""

    def __init__(self, answers: dict[str, Any], state: Any) -> None:
        """Keep the answers the run used and the tool's round state, for the task's run."""
        super().__init__("start task")
        self.answers = answers
        self.state = state


class RoundRefusal(RpcError):
    """A protocol error raised by an ask on the stateless wire; tool runners pass it on instead of a tool result."""


class StateAlreadyUsed(RoundRefusal):
    """-32602: a requestState whose last round already ran past ctx.consume_answers() (a replay)."""

    def __init__(self) -> None:
        """Say so with data.reason "used", as the other requestState refusals name theirs."""
        super().__init__(INVALID_PARAMS, "Invalid requestState: it was already used; start the request again "
                         "without requestState", {"reason": "used"})


class MissingClientCapability(RoundRefusal):
    """-32021: the request did not declare a capability the server needs to answer it."""

    def __init__(self, required: dict[str, Any]) -> None:
        """Name every missing capability in data.requiredCapabilities."""
        names = ", ".join(sorted(required))
        super().__init__(MISSING_REQUIRED_CLIENT_CAPABILITY,
                         f"Server requires the {names} capability for this request; declare it in _meta "
                         "io.modelcontextprotocol/clientCapabilities", {"requiredCapabilities": required})


def required_capabilities(capabilities: dict[str, Any], requests: list[InputRequest]) -> dict[str, Any]:
    """The capabilities these questions need that the client did not declare ({} when none)."""
    missing: dict[str, Any] = {}
    for request in requests:
        name = CAPABILITY_OF[request.method]
        declared = capabilities.get(name)
        if name == "elicitation":
            mode = request.params.get("mode", "form")
            # {} declares form mode only; a client that lists modes declares exactly those.
            modes = {"form"} if declared == {} else set(declared) if isinstance(declared, dict) else set()
            if mode not in modes:
                missing["elicitation"] = {**missing.get("elicitation", {}), mode: {}}
        elif not isinstance(declared, dict):
            missing[name] = {}
    return missing


def answer_problem(method: str, answer: Any) -> str | None:
    """What is wrong with an answer to a question of method, None when it has the right shape."""
    if not isinstance(answer, dict):
        return "must be an object"
    if method == "elicitation/create":
        if answer.get("action") not in ELICIT_ACTIONS:
            return "must be an ElicitResult whose action is accept, decline or cancel"
        if "content" in answer and not isinstance(answer["content"], dict):
            return "content must be an object"
    elif method == "sampling/createMessage" and not isinstance(answer.get("content"), (dict, list)):
        return "must be a CreateMessageResult with content"
    elif method == "roots/list" and not isinstance(answer.get("roots"), list):
        return "must be a ListRootsResult with a roots array"
    return None


@dataclass
class Rounds:
    """One run's answers: those known (sealed first, then this round's) and those the work has used."""

    known: dict[str, Any] = field(default_factory=dict)
    used: dict[str, Any] = field(default_factory=dict)
    asked: int = 0
    # Every question this run asked, by key: what consume_round asks again when the request carried no state.
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The id of the request the verified requestState belongs to (None: it carried none); whether this run used it.
    rounds_id: bytes | None = None
    consumed: bool = False

    def answers(self, requests: list[InputRequest]) -> list[Any]:
        """The answers to these questions, in order; InputRequired naming those still open."""
        keyed = []
        for request in requests:
            self.asked += 1
            keyed.append((request.key or f"ask-{self.asked}", request))
        if len({key for key, _ in keyed}) != len(keyed):
            raise ValueError("ask_all needs a different key for each question")
        for key, request in keyed:
            if key in self.known:
                problem = answer_problem(request.method, self.known[key])
                if problem is not None:
                    raise RoundRefusal(INVALID_PARAMS, f"Invalid params: inputResponses['{key}'] {problem}",
                                   {"inputResponse": key})
        # Answers given in a round that still has open questions are sealed too: the retry need not repeat them.
        self.used.update({key: self.known[key] for key, _ in keyed if key in self.known})
        self.questions.update({key: {"method": request.method, "params": request.params} for key, request in keyed})
        open_questions = {key: self.questions[key] for key, _ in keyed if key not in self.known}
        if open_questions and self.consumed:
            # The state this round would mint could be consumed again: the work after consume_answers would repeat.
            raise RuntimeError("a tool must ask before ctx.consume_answers(), never after it")
        if open_questions:
            raise InputRequired(open_questions)
        return [self.known[key] for key, _ in keyed]


def input_responses(params: dict[str, Any]) -> dict[str, Any]:
    """This round's inputResponses ({} when absent); -32602 unless an object of objects."""
    if "inputResponses" not in params:
        return {}
    responses = params["inputResponses"]
    if not isinstance(responses, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'inputResponses' must be an object of answers by key")
    for key, answer in responses.items():
        if not isinstance(answer, dict):
            raise RpcError(INVALID_PARAMS, f"Invalid params: inputResponses['{key}'] must be an object",
                           {"inputResponse": key})
    return responses


def begin(ctx: RoundsContext) -> Rounds:
    """Open this round: verify the echoed requestState, take this round's answers and the tool's state.

    A state of a request already consumed is refused here, so no later round of it is ever minted.
    """
    params = ctx.params
    responses = input_responses(params)
    if params.get("requestState") is None:
        return Rounds(known=responses)
    state = ctx.services.request_state().verify(params["requestState"], ctx.principal, ctx.method or "", params)
    if ctx.services.is_used(state.rounds_id):
        raise StateAlreadyUsed()
    ctx.round_state = state.tool_state
    # An answer already sealed stands: the work may have acted on it.
    return Rounds(known={**responses, **state.answers}, rounds_id=state.rounds_id)


def run_rounds(ctx: RoundsContext, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a 2026-07-28 handler's work; turn an open question into an input_required result."""
    ctx.rounds = begin(ctx)
    try:
        return work()
    except InputRequired as asked:
        return input_required(asked.requests, next_state(ctx, ctx.rounds))
    finally:
        ctx.rounds = None


def next_state(ctx: RoundsContext, rounds: Rounds) -> str:
    """Mint the state of the next round; an error naming the culprit when it would pass MCP_REQUEST_STATE_MAX_BYTES.

    The answers sealed so far come from the client (-32602: send smaller ones); the round state from the tool.
    """
    codec = ctx.services.request_state()

    def mint(answers: dict[str, Any]) -> str:
        return codec.mint(ctx.principal, ctx.method or "", ctx.params, ctx.round_state, answers, rounds.rounds_id)

    try:
        token = mint(rounds.used)
    except RequestStateTooLarge as too_large:
        try:
            mint({})
        except RequestStateTooLarge:
            raise RpcError(INTERNAL_ERROR, f"The tool's ctx.round_state is too large to carry: {too_large} "
                           "(MCP_REQUEST_STATE_MAX_BYTES)") from None
        raise RpcError(INVALID_PARAMS, f"Invalid params: the answers given so far, sealed in the next requestState, "
                       f"would take it over the {codec.max_bytes}-byte limit (MCP_REQUEST_STATE_MAX_BYTES); send "
                       "smaller inputResponses", {"reason": "too_large"}) from None
    # A concurrent round of the same request may have consumed it while this one ran: its record lasts a state's
    # lifetime from then, so a state minted after it would outlive it. Looked at after minting, so a consume that
    # lands later still outlives this state.
    if rounds.rounds_id is not None and ctx.services.is_used(rounds.rounds_id):
        raise StateAlreadyUsed()
    return token


def ask_stateless(ctx: RoundsContext, requests: list[InputRequest]) -> list[Any]:
    """Answer these questions from this round's known answers, or stop the run to ask the client."""
    if ctx.rounds is None or ctx.method not in INPUT_REQUIRED_METHODS:
        raise ToolError("Asking the client is possible only within tools/call, prompts/get and resources/read")
    missing = required_capabilities(ctx.session.client_capabilities or {}, requests)
    if missing:
        raise MissingClientCapability(missing)
    return ctx.rounds.answers(requests)


def consume_round(ctx: RoundsContext) -> None:
    """Make this run's answers single-use: record its request's id as used, or ask again for a state to record.

    Without a state (answers sent up front) the run's questions go out again in an input_required whose state the
    retry consumes; with nothing asked and no state there is nothing to replay. A second call in a run is a no-op.
    The record lasts a state's lifetime: every state of the request was minted before now, and none after (begin
    refuses a consumed request's state, and next_state a round that ran while another consumed it).
    """
    rounds = ctx.rounds
    if rounds is None or rounds.consumed:
        return
    if rounds.rounds_id is None:
        if rounds.questions:
            rounds.used.clear()  # seal none of the unsealed answers: the retry gives them again, with the state
            raise InputRequired(dict(rounds.questions))
        return
    try:
        first = ctx.services.use_once(rounds.rounds_id, ctx.services.settings.request_state_ttl_s)
    except StoreUnavailable:
        ctx.store_unavailable = True
        raise RoundRefusal(SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE) from None
    except CapacityError as full:
        raise RoundRefusal(SERVER_UNAVAILABLE, f"Server busy: {full}; retry later") from None
    if not first:
        raise StateAlreadyUsed()
    rounds.consumed = True
