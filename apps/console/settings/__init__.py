"""The owner's settings pages, under /console/settings/: a page per area (widget, people, replies, AI,
channels, developers, data), each a form over the same service as the area's API route.

One set of rules and messages: a page validates its input with the API route's own serializer and
writes through the same service (`forms.submit`), so the page refuses exactly what the API refuses,
with the API's message. Only an agent with role `owner` of the console's widget reaches them
(`access.owner_required`); every write is audited with that agent as the actor.
"""
