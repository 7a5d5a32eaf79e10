"""Writes of crowd work, one module per concern; views, the API, admin actions and commands call these,
and none of them writes crowd-work rows itself. Callers import from the module that owns the write:

- ``workers``: the local worker record, languages, qualifications, work history seen.
- ``rounds``: creating a round, adding items, the round's lifecycle.
- ``engine``: the assignment engine (next task, under concurrency), showing a task.
- ``submissions``: handing a task in or back; a completed item's aggregation and completion hooks.
- ``confirmation``: what a worker's provider says about an assignment.
- ``review``: approving and rejecting a submission.

Below them, ``annotation.errors`` (the refusals) and ``annotation.eligibility`` (who may work, how many
judgments an item needs), which the selectors read too.
"""
