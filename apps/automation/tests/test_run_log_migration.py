"""The migration to one log row per evaluated event: the current version of a widget's rules gets its
members, and each rule's newest 100 runs of the old log read as they did, newest first."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.automation import selectors
from apps.automation.models import AutomationEvaluation, AutomationRule, RuleSetMember

BEFORE = [("automation", "0001_rules")]
AFTER = [("automation", "0002_run_log_per_event")]


@pytest.mark.django_db(transaction=True)
def test_the_old_runs_become_evaluations_and_the_current_version_its_members(widget):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Rule, Run, RuleSet = (old.get_model("automation", name) for name in ("AutomationRule", "AutomationRun", "RuleSet"))
    ruleset = RuleSet.objects.create(widget_id=widget.pk)
    busy = Rule.objects.create(widget_id=widget.pk, name="busy", event="chat.created", actions=[])
    paused = Rule.objects.create(widget_id=widget.pk, name="paused", event="chat.closed", actions=[], enabled=False)
    idle = Rule.objects.create(widget_id=widget.pk, name="idle", event="message.created", actions=[])
    Run.objects.bulk_create(
        Run(
            widget_id=widget.pk,
            rule_id=busy.pk,
            chat_id=i,
            outcome="matched" if i % 2 else "not_matched",
            detail="1 action(s) ran." if i % 2 else "",
        )
        for i in range(105)
    )
    Run.objects.create(widget_id=widget.pk, rule_id=paused.pk, chat_id=7, outcome="failed", detail="refused")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)

    def runs(pk):
        return [
            (r.chat_id, r.outcome, r.detail)
            for r in selectors.list_runs(widget=widget, rule=AutomationRule.objects.get(pk=pk))
        ]

    busy_runs = runs(busy.pk)
    assert len(busy_runs) == 100 and busy_runs[0] == (104, "not_matched", "") and busy_runs[-1][0] == 5
    assert busy_runs[1] == (103, "matched", "1 action(s) ran.")
    assert runs(paused.pk) == [(7, "failed", "refused")] and runs(idle.pk) == []
    current = set(RuleSetMember.objects.filter(version=ruleset.version).values_list("rule_id", flat=True))
    assert current == {busy.pk, idle.pk}
    assert AutomationEvaluation.objects.count() == 101
