"""The webhooks app's public services, one module per job:

- subscriptions.py: create, update, rotate the secret, delete;
- event_deliveries.py: the outbox handler writing one Delivery row per event and matching endpoint;
- redelivery.py: redelivery and the delivery log;
- endpoints.py: delivery targets of higher apps (an external operator's URL): enqueue, hold,
  release, drop, rotate with overlap, redeliver;
- delivery/: the delivery engine, a module per job (lease, send, record, run, sweep, ...);
- crypto.py and signing.py: secrets at rest under the rotatable key set and the two signatures,
  also used by the other senders of signed posts (custom channels).

Callers import from here; the names below are the app's public surface.
"""

from .catalogue import event_names as event_names
from .catalogue import not_live as not_live
from .delivery import ATTEMPT_DEADLINE as ATTEMPT_DEADLINE
from .delivery import LEASE as LEASE
from .delivery import MAX_ATTEMPTS as MAX_ATTEMPTS
from .delivery import RESPONSE_CAP as RESPONSE_CAP
from .delivery import TIMEOUT as TIMEOUT
from .delivery import EndpointKind as EndpointKind
from .delivery import Request as Request
from .delivery import Undeliverable as Undeliverable
from .delivery import Verdict as Verdict
from .delivery import attempt_delivery as attempt_delivery
from .delivery import close_session as close_session
from .delivery import deliver_due as deliver_due
from .delivery import has_due as has_due
from .delivery import retry_wait as retry_wait
from .delivery import signed_request as signed_request
from .delivery import trigger as trigger
from .endpoints import abandon_pending as abandon_pending
from .endpoints import create_endpoint as create_endpoint
from .endpoints import enqueue_call as enqueue_call
from .endpoints import pending_count as pending_count
from .endpoints import redeliver_endpoint_call as redeliver_endpoint_call
from .endpoints import replace_endpoint_secret as replace_endpoint_secret
from .endpoints import rotate_endpoint_secrets as rotate_endpoint_secrets
from .endpoints import set_endpoint_mode as set_endpoint_mode
from .endpoints import set_endpoint_owner as set_endpoint_owner
from .endpoints import set_endpoint_url as set_endpoint_url
from .event_deliveries import fan_out_events as fan_out_events
from .redelivery import OUTCOMES as OUTCOMES
from .redelivery import NotRedeliverable as NotRedeliverable
from .redelivery import attempt_outcome as attempt_outcome
from .redelivery import is_redeliverable as is_redeliverable
from .redelivery import log_row as log_row
from .redelivery import log_rows as log_rows
from .redelivery import redeliver as redeliver
from .signing import service_signature as service_signature
from .signing import standard_signature as standard_signature
from .subscriptions import DuplicateSubscription as DuplicateSubscription
from .subscriptions import check_destination as check_destination
from .subscriptions import create_subscription as create_subscription
from .subscriptions import delete_subscription as delete_subscription
from .subscriptions import rotate_secret as rotate_secret
from .subscriptions import update_subscription as update_subscription
from .subscriptions import validate_events as validate_events
