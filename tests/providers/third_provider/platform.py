"""The third provider's platform, in memory: tasks with places, the workers who took a place, what
they handed in, and every payment. It stands in for the platform's servers."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from decimal import Decimal


@dataclass
class Place:
    """One worker's place in a task (their assignment at the platform)."""

    id: str
    task_id: str
    worker_id: str
    status: str = "active"  # active (working), submitted (handed in), approved, rejected


@dataclass
class Platform:
    balance: Decimal = Decimal("100.00")
    tasks: dict[str, dict] = field(default_factory=dict)  # id -> {"round", "places", "reward", "open"}
    places: dict[str, Place] = field(default_factory=dict)
    paid: list[tuple[str, Decimal, str]] = field(default_factory=list)  # (worker, amount, why)
    blocked: set[str] = field(default_factory=set)
    _ids: itertools.count = field(default_factory=itertools.count)

    def create_task(self, *, round_id: int, places: int, reward: Decimal) -> str:
        task_id = f"T{next(self._ids)}"
        self.tasks[task_id] = {"round": round_id, "places": places, "reward": reward, "open": True}
        return task_id

    def take_place(self, *, task_id: str, worker_id: str) -> Place:
        """A worker takes a place in the task on the platform (before following the link to our page)."""
        task = self.tasks[task_id]
        taken = sum(1 for place in self.places.values() if place.task_id == task_id)
        if not task["open"] or taken >= task["places"] or worker_id in self.blocked:
            raise LookupError(f"no place left in {task_id} for {worker_id}")
        place = Place(id=f"P{next(self._ids)}", task_id=task_id, worker_id=worker_id)
        self.places[place.id] = place
        return place

    def hand_in(self, place_id: str) -> None:
        self.places[place_id].status = "submitted"

    def place(self, *, place_id: str, task_id: str, worker_id: str) -> Place | None:
        """The place only when it is this worker's, in this task."""
        place = self.places.get(place_id)
        if place is None or place.task_id != task_id or place.worker_id != worker_id:
            return None
        return place

    def decide(self, place_id: str, status: str) -> None:
        place = self.places[place_id]
        if place.status == status:
            return
        place.status = status
        if status == "approved":
            self.pay(place.worker_id, self.tasks[place.task_id]["reward"], "reward")

    def pay(self, worker_id: str, amount: Decimal, why: str) -> None:
        self.balance -= amount
        self.paid.append((worker_id, amount, why))


# The one platform this process talks to (a test replaces it with a fresh one).
PLATFORM = Platform()
