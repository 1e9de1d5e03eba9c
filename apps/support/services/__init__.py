"""Writes of the support surface: claims (leases), replies, ticket changes, and the audit.

Every write locks the chat row (`chats.services.lock_chat`) inside its transaction, so a claim, a
release and a reply of one chat serialise: of two racing claims one wins, and a reply re-reads the
lease and the last message under the lock (no double send, no reply past a newer message).

One module per job: `claims`, `replies`, `audit`, `tickets` (the support API's ticket changes) and
`signed` (the signed application endpoints). Callers import from this package; a test that patches a
name patches it in the module that looks it up.
"""

from .audit import AUDIT_RETENTION as AUDIT_RETENTION
from .audit import purge_audit as purge_audit
from .audit import recheck_action as recheck_action
from .audit import text_digest as text_digest
from .claims import CLAIM_TTL_DEFAULT as CLAIM_TTL_DEFAULT
from .claims import CLAIM_TTL_MAX as CLAIM_TTL_MAX
from .claims import CLAIM_TTL_MIN as CLAIM_TTL_MIN
from .claims import claim_chat as claim_chat
from .claims import release_chat as release_chat
from .replies import ReplyInput as ReplyInput
from .replies import ReplyResult as ReplyResult
from .replies import prepare_text as prepare_text
from .replies import send_reply as send_reply
from .signed import APP_CHANNEL as APP_CHANNEL
from .signed import GRANT_MAX as GRANT_MAX
from .signed import IDENTITY_MAX as IDENTITY_MAX
from .signed import INTAKE_PER_ACCOUNT as INTAKE_PER_ACCOUNT
from .signed import INTAKE_PER_WIDGET as INTAKE_PER_WIDGET
from .signed import STATUS_MAX_TICKETS as STATUS_MAX_TICKETS
from .signed import ChatBoundToOtherAccount as ChatBoundToOtherAccount
from .signed import TargetNotSupportedYet as TargetNotSupportedYet
from .signed import file_ticket as file_ticket
from .signed import link_account as link_account
from .signed import remembered as remembered
from .signed import revoke_account as revoke_account
from .signed import ticket_status as ticket_status
from .tickets import TICKET_REOPEN_WINDOW as TICKET_REOPEN_WINDOW
from .tickets import AccountHasOpenTicket as AccountHasOpenTicket
from .tickets import ReopenWindowPassed as ReopenWindowPassed
from .tickets import TicketClosed as TicketClosed
from .tickets import TicketOpen as TicketOpen
from .tickets import check_close as check_close
from .tickets import check_reopen as check_reopen
from .tickets import close_ticket as close_ticket
from .tickets import reopen_ticket as reopen_ticket
