"""The delivery engine. The Delivery rows written by fan-out and redelivery are the source of truth:
`deliver_due` sends every row whose `next_attempt_at` has passed, leasing it first (the lease moves
`next_attempt_at` forward), so a lost Celery message or a killed worker delays a delivery by at most
the lease, never loses it; the beat sweeper triggers `deliver_due` while due rows exist. Up to
`concurrency` attempts are in flight at once on the guarded client's outbound thread (`submit_bytes`:
one pooled session per process, libcurl), so a slow endpoint holds one place, not the batch; one
endpoint holds at most three quarters of the places. The calling thread leases and loads; a finished
attempt's place is refilled (signed and started) on the outbound thread as its answer comes, and the
calling thread writes the finished attempts meanwhile.

A row goes to a subscription or to an `Endpoint` of a higher app (an external operator's URL): the
same lease, attempts, retries and log; the endpoint's `mode` holds or drops its rows, and its owner
hears (the `endpoint_settled` port) when one of its rows reached a final state.

Fan-out hands its new rows to `send_new` once its transaction commits: the fan-out's process leases
them by their delivery ids (reading the subscription as it is now) and attempts them at once, with
no trigger, task, lease-by-due-date or load in between; more than NEW_AT_ONCE rows, or rows it could
not lease, are left to `deliver_due`. A process that dies
after the commit leaves its rows due (never leased) or leased (back after LEASE): the sweeper sends
them either way.

An endpoint's owner may give its endpoints a kind of their own (`kinds`, the `endpoint_kind` port):
other headers, attempts, waits and limits, and a hook for the rows that failed for good. The compat
Bot API's CLIENT_MESSAGEs and the channels' operator messages (custom channels, messengers) are sent
that way.

The package has a module per job: `lease` (due rows taken, with their targets), `load` (what is read
of a row, which rows are sent: endpoint modes), `kinds` (endpoint kinds), `send` (one attempt signed
and sent, its outcome),
`secret_cache`, `record` (outcomes written, retries), `run` (`deliver_due`: the attempts in flight),
`first_attempts` (`send_new`), `settle` (endpoint owners' callbacks) and `sweep` (`trigger`, `has_due`).
Inside the package a name that tests replace (`sweep.trigger`, `record._record`, `send._start`,
`send.TIMEOUT`, `fanout.NEW_AT_ONCE`, ...) is read through the module that defines it: replaced
there, it reaches every caller; replaced on this package, it reaches none.
"""

# The engine's surface, which apps.webhooks.services and the app's other modules call (the
# underscored names: steps the engine's tests call one by one), and its modules.
from . import first_attempts as first_attempts
from . import kinds as kinds
from . import lease as lease
from . import load as load
from . import record as record
from . import run as run
from . import secret_cache as secret_cache
from . import send as send
from . import settle as settle
from . import sweep as sweep
from .first_attempts import send_new as send_new
from .kinds import EndpointKind as EndpointKind
from .kinds import Request as Request
from .kinds import Undeliverable as Undeliverable
from .kinds import Verdict as Verdict
from .lease import LEASE as LEASE
from .load import skip_endpoint_rows as skip_endpoint_rows
from .record import MAX_ATTEMPTS as MAX_ATTEMPTS
from .record import retry_wait as retry_wait
from .run import attempt_delivery as attempt_delivery
from .run import deliver_due as deliver_due
from .send import ATTEMPT_DEADLINE as ATTEMPT_DEADLINE
from .send import RESPONSE_CAP as RESPONSE_CAP
from .send import RESPONSE_EXCERPT_BYTES as RESPONSE_EXCERPT_BYTES
from .send import TIMEOUT as TIMEOUT
from .send import Outcome as Outcome
from .send import close_session as close_session
from .send import response_excerpt as response_excerpt
from .send import signed_request as signed_request
from .sweep import DELIVER_TASK as DELIVER_TASK
from .sweep import has_due as has_due
from .sweep import trigger as trigger
