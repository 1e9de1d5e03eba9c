"""The AI operator at work (product-decisions.md "The AI operator at work"): each visitor message of a
chat that no person handles is answered in a worker task.

The path of one visitor message (`answer`, run by `tasks.answer_visitor_message`):

1. the visitor's `message.created` commits; the on-commit handler `message_created` enqueues the
   task (ids in); a task the broker refused, or whose worker died or stopped while it held the
   claim (step 5), is sent again by the beat job `redrive`;
2. a newer visitor message in the chat supersedes this one (its own task answers the newest, with
   this one in the history);
3. a machine may answer (`handoff.machine_may_answer`): else, when a person holds the chat, the
   task comes back when their `takeover_timeout_sec` runs out (`human_to_ai` if they stayed silent);
4. the widget's active external operators take the message when it has one
   (`routing.dispatch_to_external`), whatever the AI switch says;
5. with the switch on, an effective assistant, its active AI operator and a resolvable credential:
   a message with an escalation trigger of the assistant, or in which the visitor asks for a person,
   is claimed and handed to people at once, no provider asked (`handover_before_provider`); any other
   takes one of the widget's slots of the `ai` worker (`turns`) or sends itself again a little later,
   holding no thread; then the message is claimed (`ReplyClaim`, a unique insert: two workers, or a
   redelivered task, answer once), the visitor sees the AI typing, and the provider chain (backups
   included) is asked with the system prompt, persona, retrieved knowledge (`rag_enabled`),
   presence context (`presence_context_enabled`) and the visible history;
6. `pipeline.transform` (the classifier the detached test runs too) decides, then the platform
   safety floors (`pipeline.check_floors`, which the detached test runs too: a leaked secret, the
   system prompt repeated, a reply over the message limit);
   under the chat's lock,
   and only while the claim is still this worker's, the answer is posted as the AI operator's message
   (a private note in shadow mode) or the chat is handed to people (`handoff.hand_to_people`). A
   newer visitor message or a person's answer that arrived meanwhile drops the answer; a provider
   failure or timeout hands the chat to people instead of leaving the visitor unanswered.

One module per section: `limits` (the deadline, lease, history window and queue, read through it at
call time), `enqueueing` (step 1), `redrive` (the beat job), `reads` (history and the answering
operator), `claims` (the reply claim and the claims a stopping worker gives back), `turns` (each
widget's share of the `ai` worker) and `answering` (steps 2 to 6). Other apps import this package,
never a module of it. The limits are read (and set by a test) as `runtime.limits.QUEUE`; a test that
patches a function patches it in the module that looks it up (`answering.complete`,
`enqueueing.enqueue`).
"""

from .answering import alert_provider_failing as alert_provider_failing
from .answering import answer as answer
from .answering import grounded_prompt as grounded_prompt
from .answering import handover_before_provider as handover_before_provider
from .answering import runs_eagerly as runs_eagerly
from .claims import release_claims as release_claims
from .enqueueing import enqueue as enqueue
from .enqueueing import message_created as message_created
from .limits import AI_BUSY as AI_BUSY
from .limits import ALERT_KIND as ALERT_KIND
from .limits import ALERT_QUIET as ALERT_QUIET
from .limits import CLAIM_LEASE as CLAIM_LEASE
from .limits import HISTORY_CHARACTERS as HISTORY_CHARACTERS
from .limits import HISTORY_MESSAGES as HISTORY_MESSAGES
from .limits import LONGEST_WAIT as LONGEST_WAIT
from .limits import MAX_CLAIM_ATTEMPTS as MAX_CLAIM_ATTEMPTS
from .limits import MAX_PROVIDER_OPERATIONS as MAX_PROVIDER_OPERATIONS
from .limits import PROVIDER_DEADLINE_SECONDS as PROVIDER_DEADLINE_SECONDS
from .limits import QUEUE as QUEUE
from .limits import REPLY_ORIGIN as REPLY_ORIGIN
from .limits import SUMMARY_DEADLINE_SECONDS as SUMMARY_DEADLINE_SECONDS
from .limits import WORKER_LOST as WORKER_LOST
from .reads import active_operator as active_operator
from .reads import chat_history as chat_history
from .reads import newer_visitor_message_exists as newer_visitor_message_exists
from .reads import visible_history as visible_history
from .redrive import REDRIVE_AFTER as REDRIVE_AFTER
from .redrive import REDRIVE_LIMIT as REDRIVE_LIMIT
from .redrive import REDRIVE_WINDOW as REDRIVE_WINDOW
from .redrive import lost_messages as lost_messages
from .redrive import redrive as redrive
