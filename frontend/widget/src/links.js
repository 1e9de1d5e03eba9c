// The links part (widget-links.js): linkify-it with the server's link guard configuration (ICANN
// top-level domains only, fuzzy IP links), written by `manage.py export_linkguard`, so the widget
// never links what the guard did not see as a link. Most of the widget's weight and needed only once
// a message shows: widget.js draws text plain until this part is here.
import LinkifyIt from "linkify-it";
import LINKGUARD from "./linkguard.json";

const linkify = new LinkifyIt({}, LINKGUARD.options).tlds([LINKGUARD.tldPattern], false);

window.ChatWidget._parts.links = (text) => linkify.match(text) || [];
