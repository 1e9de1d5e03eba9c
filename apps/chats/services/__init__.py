"""Writes on conversations. Every state change of a chat goes through here: the REST API, the
visitor channel, the operator console, compat routes and the lifecycle job call the same functions.

Locking: functions that change a chat lock its row (`lock_chat`) inside their transaction, so two
writers (a close and an incoming message, two closes) serialise and each emits its events once.
Each change calls `apps.core.events.emit` once and does nothing else: the statistics facts
(apps.stats.facts, in the transaction), the websocket pushes (apps.chats.realtime, after commit)
and the webhooks (the outbox) are handlers of those events.

One module per section: `locking` (the spam and rating errors, the chat row lock), `contacts`,
`identity` (which contact a visitor session speaks for), `merge` (two contacts become one),
`rooms` (a contact's room on a channel),
`attribution` (who answered, the wait for a person), `state` (status, close, transfer, accept),
`messages` (messages, ratings, typing, receipts, the offline form), `labels` (the widget's labels
and each chat's) and `lifecycle` (the idle sweep). Other apps import this package, never a module
of it; a test that patches a name patches it in the module that looks it up.
"""

from .attribution import Answer as Answer
from .attribution import assigned_by as assigned_by
from .attribution import await_human as await_human
from .attribution import emit_accepted as emit_accepted
from .attribution import record_answer as record_answer
from .attribution import set_routing_owner as set_routing_owner
from .contacts import ATTRIBUTES_MAX_BYTES as ATTRIBUTES_MAX_BYTES
from .contacts import ATTRIBUTES_MAX_KEYS as ATTRIBUTES_MAX_KEYS
from .contacts import add_tags as add_tags
from .contacts import attributes_size as attributes_size
from .contacts import check_attributes as check_attributes
from .contacts import check_contact_changes as check_contact_changes
from .contacts import check_tag_names as check_tag_names
from .contacts import create_contact as create_contact
from .contacts import remove_tag as remove_tag
from .contacts import set_attributes as set_attributes
from .contacts import update_contact as update_contact
from .identity import Identified as Identified
from .identity import end_session as end_session
from .identity import get_verified_contact as get_verified_contact
from .identity import identify_session as identify_session
from .labels import MAX_LABELS_PER_CHAT as MAX_LABELS_PER_CHAT
from .labels import LabelTaken as LabelTaken
from .labels import TooManyLabels as TooManyLabels
from .labels import UnknownLabel as UnknownLabel
from .labels import add_chat_labels as add_chat_labels
from .labels import check_chat_label_names as check_chat_label_names
from .labels import create_label as create_label
from .labels import delete_label as delete_label
from .labels import label_key as label_key
from .labels import remove_chat_labels as remove_chat_labels
from .labels import set_chat_labels as set_chat_labels
from .labels import update_label as update_label
from .lifecycle import IDLE_EXPIRY as IDLE_EXPIRY
from .lifecycle import sweep_idle_chats as sweep_idle_chats
from .locking import AGENT_MESSAGE_RELATED as AGENT_MESSAGE_RELATED
from .locking import AlreadyRated as AlreadyRated
from .locking import ChatIsSpam as ChatIsSpam
from .locking import ensure_not_spam as ensure_not_spam
from .locking import lock_chat as lock_chat
from .merge import MergeIdentityConflict as MergeIdentityConflict
from .merge import MergeIntoSelf as MergeIntoSelf
from .merge import merge_contacts as merge_contacts
from .messages import TYPING_INTERVAL as TYPING_INTERVAL
from .messages import MessageInput as MessageInput
from .messages import Opening as Opening
from .messages import mark_seen as mark_seen
from .messages import note_typing as note_typing
from .messages import post_agent_message as post_agent_message
from .messages import post_client_message as post_client_message
from .messages import post_unattributed_message as post_unattributed_message
from .messages import rate_chat as rate_chat
from .messages import request_rating as request_rating
from .messages import submit_offline_message as submit_offline_message
from .rooms import WIDGET_CHANNEL as WIDGET_CHANNEL
from .rooms import find_room as find_room
from .rooms import get_or_create_room as get_or_create_room
from .state import accept_chat as accept_chat
from .state import close_chat as close_chat
from .state import set_chat_department as set_chat_department
from .state import set_chat_state as set_chat_state
from .state import transfer_chat as transfer_chat
