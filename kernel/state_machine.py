"""One idiom for every status field: a declared table of transitions that refuses what it does not draw.

A model's module declares its machine beside the model (``ROUND_STATUS = StateMachine(...)``), with
the statuses a row may be created in, each event's source statuses and target, and the modules
allowed to write the field. ``djangokit.transitions`` writes a transition to the database as a
conditional UPDATE. This module has no Django import: any layer may use it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import ServiceError


class TransitionRefused(ServiceError):
    """The status does not allow this change."""

    status_code = 409


@dataclass(frozen=True)
class Transition:
    event: str
    sources: frozenset[str]
    target: str | None  # None: the status stays; the event changes other fields of a row in ``sources``
    meaning: str = ""


class StateMachine:
    """The transition table of one status field.

    ``name`` says what the field belongs to in refusals ("round", "bonus payment"); ``refused`` is the
    refusal's text, formatted with ``name``, ``event``, ``action`` (the event in words), ``current``,
    ``sources`` and ``subject`` (the row's id, when known). ``error`` is the refusal's class.
    ``writers`` are the dotted modules allowed to write the field (a test holds every other module to it).
    """

    def __init__(
        self,
        *,
        name: str,
        statuses: Iterable[str],
        initial: Iterable[str],
        transitions: Iterable[Transition],
        writers: Iterable[str],
        field: str = "status",
        error: type[TransitionRefused] = TransitionRefused,
        refused: str = "cannot {action} a {name} that is {current}",
    ) -> None:
        self.name, self.field, self.error, self.refused = name, field, error, refused
        self.statuses = tuple(str(status) for status in statuses)
        self.initial = frozenset(str(status) for status in initial)
        self.writers = tuple(writers)
        self.transitions: dict[str, Transition] = {}
        for transition in transitions:
            if transition.event in self.transitions:
                raise ValueError(f"{name}: event {transition.event!r} is declared twice")
            unknown = {*transition.sources, *([transition.target] if transition.target is not None else [])}
            unknown -= set(self.statuses)
            if unknown or not transition.sources:
                raise ValueError(f"{name}: event {transition.event!r} names unknown statuses {sorted(unknown)} "
                                 "or none to start from")
            self.transitions[transition.event] = transition
        if not self.initial <= set(self.statuses):
            raise ValueError(f"{name}: initial statuses {sorted(self.initial - set(self.statuses))} are unknown")
        if not self.writers:
            raise ValueError(f"{name}: a machine names the modules that write its field")

    def __repr__(self) -> str:
        return f"<StateMachine {self.name}.{self.field}>"

    def transition(self, event: str) -> Transition:
        """The declared transition of ``event``; an unknown event is refused."""
        try:
            return self.transitions[event]
        except KeyError:
            raise self._error(f"unknown {self.name} {self.field} event {event!r}; known: {', '.join(self.transitions)}",
                              event=event, current=None) from None

    def check(self, current: str, event: str, *, subject: object = None) -> Transition:
        """The transition of ``event`` if a row whose field is ``current`` may make it; refused otherwise."""
        transition = self.transition(event)
        if current not in transition.sources:
            raise self.refusal(current, event, subject=subject)
        return transition

    def target(self, current: str, event: str, *, subject: object = None) -> str:
        """The status a row in ``current`` has after ``event`` (refused when not allowed)."""
        transition = self.check(current, event, subject=subject)
        return current if transition.target is None else transition.target

    def allowed_events(self, current: str) -> list[str]:
        """The events a row in ``current`` may make, in declared order."""
        return [event for event, transition in self.transitions.items() if current in transition.sources]

    def check_initial(self, status: str) -> str:
        """``status`` if a new row may start in it; refused otherwise."""
        if status not in self.initial:
            raise self._error(f"a {self.name} cannot start as {status!r}", event="create", current=status)
        return status

    def refusal(self, current: str | None, event: str, *, subject: object = None) -> TransitionRefused:
        """The error for a row in ``current`` (None: the row is gone) that may not make ``event``."""
        transition = self.transitions.get(event)
        sources = ", ".join(sorted(transition.sources)) if transition else ""
        text = self.refused.format(name=self.name, event=event, action=event.replace("_", " "),
                                   current=current if current is not None else "gone", sources=sources,
                                   subject=subject if subject is not None else "")
        return self._error(text, event=event, current=current)

    def _error(self, text: str, *, event: str, current: str | None) -> TransitionRefused:
        error = self.error(text)
        error.machine, error.event, error.current = self, event, current
        return error

    def table(self) -> list[tuple[str, list[str], str | None]]:
        """(event, sorted sources, target) per transition, in declared order: the diagram the docs draw."""
        return [(event, sorted(transition.sources), transition.target) for event, transition in self.transitions.items()]
