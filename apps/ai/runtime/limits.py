"""The runtime's limits and names: the provider deadline, the claim lease, the history window, the
alert quiet time and the reply tasks' queue. Every module reads them through this one at call time
(`limits.QUEUE`), so a test or a benchmark that sets one sets it for all."""

from __future__ import annotations

from datetime import timedelta

REPLY_ORIGIN = "ai_reply"
PROVIDER_DEADLINE_SECONDS = 45.0
MAX_PROVIDER_OPERATIONS = 10
# A `working` claim older than this belongs to a worker that died: the provider deadline bounds a
# live one, so another worker may take it over (the beat job `redrive` sends its task again).
CLAIM_LEASE = timedelta(seconds=PROVIDER_DEADLINE_SECONDS + 30)
# A message whose claim was taken over this many times killed every worker that tried it: the next
# try hands the chat to people instead of asking the provider again.
MAX_CLAIM_ATTEMPTS = 3
WORKER_LOST = "worker_lost"
# A message whose task waited this long for one of its widget's slots (`turns`: the widget's other
# messages held them all the while) is handed to people with this reason instead of asking the
# provider: an answer that late is not an answer any more (the re-drive window).
LONGEST_WAIT = timedelta(minutes=15)
AI_BUSY = "ai_busy"
HISTORY_MESSAGES = 20
HISTORY_CHARACTERS = 12000
ALERT_KIND = "provider_failing"
ALERT_QUIET = timedelta(hours=1)
# A hand-over summary waits at most this long on the provider: a note for people, worth less than an
# answer, that holds one of the widget's slots (`turns`) while it waits.
SUMMARY_DEADLINE_SECONDS = 15.0

# The queue of the AI reply tasks: the Procfile's `ai` worker (a thread pool: the tasks mostly wait on
# the provider, up to its deadline) consumes it, so a slow provider never holds the main worker's
# slots (webhook deliveries, the outbox fan-out). Tests with a real worker use a queue of their own.
QUEUE: str | None = "ai"
