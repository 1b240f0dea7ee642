"""A task's status moves by its table (``tasks.TRANSITIONS``, stepped by ``machines.step``):
a terminal status never changes, and ``updated_at`` moves with the status only."""

from __future__ import annotations

import pytest

from mcp_sansio.server.tasks import TRANSITIONS, TaskRecord, TaskState, TaskTrigger

_REACH = {TaskState.WORKING: [], TaskState.INPUT_REQUIRED: [TaskTrigger.ASK],
          TaskState.COMPLETED: [TaskTrigger.COMPLETE], TaskState.FAILED: [TaskTrigger.FAIL],
          TaskState.CANCELLED: [TaskTrigger.CANCEL]}


@pytest.mark.parametrize("trigger", list(TaskTrigger))
@pytest.mark.parametrize("state", list(TaskState))
def test_the_task_table_decides_every_move(state: TaskState, trigger: TaskTrigger) -> None:
    task = TaskRecord("t", 1, 0.0, 60.0)
    for move in _REACH[state]:
        task.move(move, 1.0)
    assert task.state is state
    task.move(trigger, 2.0)
    expected = TRANSITIONS.get((state, trigger), state)
    assert task.state is expected
    assert task.updated_at == (2.0 if expected is not state else 1.0 if _REACH[state] else 0.0)


def test_a_terminal_task_has_no_move_out() -> None:
    terminal = {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELLED}
    assert not [key for key in TRANSITIONS if key[0] in terminal]
