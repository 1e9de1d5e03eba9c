"""apps.agents.services and selectors, called directly."""

from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.core import mail
from django.utils import timezone

from apps.agents import events_log, selectors, services
from apps.agents.models import Agent, AgentEvent, Invitation
from apps.agents.tests.factories import (
    AgentFactory,
    AIAgentFactory,
    DepartmentFactory,
    HumanAgentFactory,
    InvitationFactory,
)
from apps.core.errors import Conflict, RateLimited
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db


# --- the event log -------------------------------------------------------------------------------------


def test_record_by_slug_stores_the_raw_code(widget):
    agent = AgentFactory(widget=widget)
    event = services.record_agent_event(
        widget=widget, agent=agent, type="chat_transferred_out", extra={"chat_id": 5, "to_agent_id": 9}
    )
    assert event.type_code == events_log.code_of("chat_transferred_out")
    assert events_log.message_of(event.type_code, event.extra) == "Передал чат №5 другому оператору"


def test_record_by_raw_code_and_by_agent_id(widget):
    agent = AgentFactory(widget=widget)
    event = services.record_agent_event(widget=widget, agent=agent.pk, type_code=4242)
    assert event.agent_id == agent.pk and events_log.slug_of(event.type_code) == "unknown"


@pytest.mark.parametrize("kwargs", [{}, {"type": "suspended", "type_code": 12}])
def test_record_needs_exactly_one_of_type_and_type_code(widget, kwargs):
    with pytest.raises(ValueError):
        services.record_agent_event(widget=widget, agent=AgentFactory(widget=widget), **kwargs)


def test_record_refuses_an_unknown_slug(widget):
    with pytest.raises(KeyError):
        services.record_agent_event(widget=widget, agent=AgentFactory(widget=widget), type="fired")


def test_record_refuses_an_agent_of_another_widget(widget, other_widget):
    with pytest.raises(AssertionError):
        services.record_agent_event(widget=widget, agent=AgentFactory(widget=other_widget), type="suspended")


def test_vocabulary_is_unique_and_every_message_is_russian():
    assert len({k.code for k in events_log.KINDS}) == len({k.slug for k in events_log.KINDS}) == len(events_log.KINDS)
    assert events_log.UNKNOWN not in events_log.BY_SLUG
    for kind in events_log.KINDS:
        assert any("а" <= ch <= "я" for ch in kind.message.lower()), kind


def test_a_message_missing_its_facts_still_renders():
    assert events_log.message_of(events_log.code_of("chat_accepted")) == "Принял чат №—"


# --- console status ---------------------------------------------------------------------------------------


def test_relaxation_and_back_are_logged_and_purge_the_cache(widget, purges):
    agent = AgentFactory(widget=widget)
    services.set_agent_status(widget=widget, agent=agent, status="relaxation")
    services.set_agent_status(widget=widget, agent=agent, status="active")
    slugs = [events_log.slug_of(e.type_code) for e in AgentEvent.objects.filter(agent=agent).order_by("id")]
    assert slugs == ["status_relaxation", "status_active"]
    assert purges.count(widget.pk) == 2


def test_the_status_an_agent_already_has_writes_nothing_and_spends_nothing(widget, purges):
    agent = AgentFactory(widget=widget, status=Agent.Status.ACTIVE)
    for _ in range(services.STATUS_CHANGE_BUDGET.limit + 1):
        services.set_agent_status(widget=widget, agent=agent, status="active")
    assert not AgentEvent.objects.filter(agent=agent).exists()
    assert purges == []
    services.set_agent_status(widget=widget, agent=agent, status="relaxation")  # the budget is whole
    assert AgentEvent.objects.filter(agent=agent).count() == 1


def spend_status_budget(widget, agent) -> None:
    for n in range(services.STATUS_CHANGE_BUDGET.limit):
        services.set_agent_status(widget=widget, agent=agent, status="relaxation" if n % 2 == 0 else "active")


def test_a_status_change_past_the_budget_is_refused_and_writes_nothing(widget, purges):
    agent = AgentFactory(widget=widget, status=Agent.Status.ACTIVE)
    spend_status_budget(widget, agent)
    status, events, purged = Agent.objects.get(pk=agent.pk).status, AgentEvent.objects.count(), len(purges)
    flipped = Agent.Status.ACTIVE if status == Agent.Status.RELAXATION else Agent.Status.RELAXATION
    with pytest.raises(RateLimited) as refused:
        services.set_agent_status(widget=widget, agent=agent, status=flipped)
    assert refused.value.code == "rate_limited" and "retry in" in refused.value.detail
    assert Agent.objects.get(pk=agent.pk).status == status
    assert AgentEvent.objects.count() == events and len(purges) == purged


def test_the_status_budget_is_each_agents_own(widget):
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.ACTIVE)
    spend_status_budget(widget, agent)
    colleague = HumanAgentFactory(widget=widget, status=Agent.Status.ACTIVE)
    same_user_elsewhere = HumanAgentFactory(widget=WidgetFactory(), user=agent.user, status=Agent.Status.ACTIVE)
    for other in (colleague, same_user_elsewhere):
        services.set_agent_status(widget=other.widget, agent=other, status="relaxation")
        assert Agent.objects.get(pk=other.pk).status == Agent.Status.RELAXATION


@pytest.mark.skipif(bool(settings.REDIS_URL), reason="Redis budgets read the Redis server's clock")
def test_the_status_budget_frees_up_after_a_minute(widget):
    agent = AgentFactory(widget=widget, status=Agent.Status.ACTIVE)
    spend_status_budget(widget, agent)
    with time_machine.travel(timezone.now() + timedelta(seconds=61), tick=False):
        services.set_agent_status(widget=widget, agent=agent, status="relaxation")
    assert Agent.objects.get(pk=agent.pk).status == Agent.Status.RELAXATION


def test_console_status_cannot_unban(widget):
    agent = AgentFactory(widget=widget, status=Agent.Status.BANNED)
    with pytest.raises(Conflict):
        services.set_agent_status(widget=widget, agent=agent, status="active")
    with pytest.raises(ValueError):
        services.set_agent_status(widget=widget, agent=agent, status="banned")


@pytest.mark.parametrize("type", [Agent.Type.AI, Agent.Type.WEBHOOK])
def test_only_a_human_operator_takes_a_break(widget, type):
    agent = AgentFactory(widget=widget, type=type, status=Agent.Status.ACTIVE)
    with pytest.raises(Conflict):
        services.set_agent_status(widget=widget, agent=agent, status="relaxation")
    assert Agent.objects.get(pk=agent.pk).status == Agent.Status.ACTIVE
    assert not AgentEvent.objects.filter(agent=agent).exists()


def test_the_cache_is_purged_again_after_commit(widget, purges, django_capture_on_commit_callbacks):
    agent = AgentFactory(widget=widget)
    with django_capture_on_commit_callbacks(execute=True):
        services.suspend_agent(widget=widget, agent=agent)
    assert purges == [widget.pk, widget.pk]


# --- seats ---------------------------------------------------------------------------------------------


def test_seats_used_counts_non_banned_humans_of_every_widget_of_the_account(widget):
    sibling = WidgetFactory(account=widget.account)
    HumanAgentFactory(widget=widget)
    HumanAgentFactory(widget=sibling, status=Agent.Status.RELAXATION)
    HumanAgentFactory(widget=sibling, status=Agent.Status.BANNED)
    AIAgentFactory(widget=widget)
    AgentFactory(widget=widget, type=Agent.Type.WEBHOOK)
    HumanAgentFactory(widget=WidgetFactory())
    assert selectors.seats_used(widget.account) == 2
    assert selectors.free_seats(widget.account) == widget.account.seats - 2


def test_outstanding_invitations_skip_expired_accepted_and_revoked(widget):
    InvitationFactory(widget=widget)
    InvitationFactory(widget=WidgetFactory(account=widget.account))
    InvitationFactory(widget=widget, expires_at=timezone.now() - timedelta(seconds=1))
    InvitationFactory(widget=widget, accepted_at=timezone.now())
    InvitationFactory(widget=widget, revoked_at=timezone.now())
    assert selectors.outstanding_invitations(widget.account) == 2


def test_restore_counts_seats_under_the_lock(widget):
    widget.account.seats = 1
    widget.account.save()
    agent = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    services.restore_agent(widget=widget, agent=agent)
    other = HumanAgentFactory(widget=widget, status=Agent.Status.BANNED)
    with pytest.raises(services.SeatLimitReached):
        services.restore_agent(widget=widget, agent=other)


# --- invitations ---------------------------------------------------------------------------------------


def test_invite_agent_builds_the_link_from_the_token(widget):
    tokens = []

    def link_for(token):
        tokens.append(token)
        return f"https://example.test/invite/{token}"

    invitation = services.invite_agent(widget=widget, email="x@example.com", link_for=link_for)
    assert invitation.token_hash == services.hash_token(tokens[0])
    assert f"https://example.test/invite/{tokens[0]}" in mail.outbox[0].body


def test_accept_with_an_unknown_token_is_unusable(db):
    with pytest.raises(services.InvitationUnusable) as exc:
        services.accept_invitation(token="nope", name="x", password="y")
    assert exc.value.state == "missing"


def test_accept_twice_is_unusable_the_second_time(widget):
    invitation = InvitationFactory(widget=widget, token="t" * 43)
    services.accept_invitation(token="t" * 43, name="A", password="long-enough-pass-1")
    with pytest.raises(services.InvitationUnusable) as exc:
        services.accept_invitation(token="t" * 43, name="B", password="long-enough-pass-1")
    assert exc.value.state == "accepted"
    invitation.refresh_from_db()
    assert Agent.objects.filter(widget=widget).count() == 1 and invitation.agent.name == "A"


def test_revoke_leaves_finished_invitations_alone(widget):
    accepted = InvitationFactory(widget=widget, accepted_at=timezone.now())
    expired = InvitationFactory(widget=widget, expires_at=timezone.now() - timedelta(seconds=1))
    for invitation in (accepted, expired):
        services.revoke_invitation(widget=widget, invitation=invitation)
    assert not Invitation.objects.filter(revoked_at__isnull=False).exists()


# --- departments ----------------------------------------------------------------------------------------


def test_a_department_without_a_schedule_is_open_every_day(widget):
    department = services.create_department(widget=widget, name="x")
    assert department.schedule == {day: "full" for day in services.DAYS}


def test_department_services_refuse_agents_of_another_widget(widget, other_widget):
    with pytest.raises(AssertionError):
        services.create_department(widget=widget, name="x", agents=[AgentFactory(widget=other_widget)])
    department = DepartmentFactory(widget=widget)
    with pytest.raises(AssertionError):
        services.set_department_agents(widget=widget, department=department, agents=[AgentFactory(widget=other_widget)])


# --- the console password ----------------------------------------------------------------------------


def test_set_console_password_sets_the_agents_user_password(widget):
    agent = HumanAgentFactory(widget=widget)
    services.set_console_password(widget=widget, agent=agent, password="Quiet-River-2024")
    agent.user.refresh_from_db()
    assert agent.user.check_password("Quiet-River-2024")


def test_set_console_password_refuses_an_agent_without_a_user_and_changes_nothing(widget):
    bot = AIAgentFactory(widget=widget)
    with pytest.raises(ValueError):
        services.set_console_password(widget=widget, agent=bot, password="Quiet-River-2024")
    assert Agent.objects.get(pk=bot.pk).user_id is None
