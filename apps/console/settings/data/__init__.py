"""The owner's data pages: contacts (search, edit, tags, export, erase), chat retention and the audit
log. Each page reads its input by the rules of the matching API route (the contact routes' rules
through apps.chats.services, the privacy routes' serializers) and writes through the same service."""
