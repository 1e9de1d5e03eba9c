"""Hypothesis strategies built from a field's description in GET /v1/widget/settings/schema ONLY.

`valid(member)` draws values the schema says PATCH accepts; `invalid(member)` draws values it says
PATCH refuses. `expected(member, sent)` is what GET must show afterwards on a widget whose settings
were empty. Nothing here reads the server's definition: if the schema and the validation disagree,
the property tests fail.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

UTF8 = st.characters(codec="utf-8")
_PCRE = re.compile(r"^/\\A\(\?:(?P<body>.*)\)\\z/u$", re.S)

_WRONG_TYPES = {
    "string": st.text(max_size=4),
    "integer": st.integers(min_value=-(10**6), max_value=10**6),
    "boolean": st.booleans(),
    "array": st.lists(st.integers(), max_size=2),
    "object": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    "null": st.none(),
}
# A JSON number with a fraction is a valid value of no field (no field accepts "number").
_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())


def python_pattern(pcre: str) -> str:
    """`/\\A(?:body)\\z/u` -> body, matched with re.fullmatch."""
    match = _PCRE.match(pcre)
    assert match, f"not a PCRE with delimiters in the documented form: {pcre!r}"
    return match.group("body").replace("\\/", "/")


def _fullmatch(member: dict, value: str) -> bool:
    return bool(member.get("pattern")) and re.fullmatch(python_pattern(member["pattern"]), value) is not None


def _string(member: dict) -> st.SearchStrategy:
    lo, hi = member.get("min_length") or 0, member.get("max_length") or 50
    if member.get("pattern"):
        pattern = python_pattern(member["pattern"])
        return st.from_regex(pattern, fullmatch=True, alphabet=UTF8).filter(lambda s: lo <= len(s) <= hi)
    return st.text(UTF8, min_size=lo, max_size=hi)


def valid_value(member: dict) -> st.SearchStrategy:
    """A non-null accepted value."""
    kind = member["strict_json_type"]
    if member.get("accepted_values") is not None:
        return st.sampled_from(member["accepted_values"])
    if member.get("enum") is not None:
        return st.sampled_from(member["enum"])
    if kind == "integer":
        lo, hi = member["minimum"], member["maximum"]
        return st.one_of(st.just(lo), st.just(hi), st.integers(min_value=lo, max_value=hi))
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        hi = member["max_length"]
        longest = _string(member).map(lambda v: (v * (hi // max(len(v), 1) + 1))[:hi])
        return st.one_of(_string(member), longest.filter(lambda v: _fullmatch(member, v)))
    if kind == "array":
        items = st.sampled_from(member["items"]["enum"])
        return st.lists(items, min_size=member["min_items"], max_size=member["max_items"], unique=True)
    if member.get("type") == "prechat_form":
        return _prechat_form(member)
    if kind == "object" and member.get("properties") is not None:
        return st.fixed_dictionaries({}, optional={k: _optional(v) for k, v in member["properties"].items()})
    if member["type"] == "language_texts":
        return st.dictionaries(st.sampled_from(member["keys"]["enum"]), valid_value(member["values"]), max_size=3)
    if kind == "object" and member.get("keys") is not None:
        texts = member["values"]["properties"]
        entry = st.fixed_dictionaries({}, optional={k: valid_value(v) for k, v in texts.items()}).filter(bool)
        return st.dictionaries(st.sampled_from(member["keys"]["accepted_values"]), entry, max_size=3)
    raise AssertionError(f"the schema describes a value this generator does not know: {member}")


def _labels(member: dict) -> st.SearchStrategy:
    return st.dictionaries(st.sampled_from(member["keys"]["enum"]), _string(member["values"]), min_size=1, max_size=3)


def _prechat_field(member: dict, key: str) -> st.SearchStrategy:
    """One field of a pre-chat form with this `key`: its type, labels, required and (select) options."""
    props = member["properties"]
    forced = member["contact_keys"].get(key)
    kind = st.just(forced) if forced else st.sampled_from(props["type"]["enum"])
    option = props["options"]["items"]["properties"]
    options = st.lists(_string(option["value"]), min_size=1, max_size=3, unique=True).flatmap(
        lambda values: st.tuples(*[_labels(option["label_i18n"]) for _ in values]).map(
            lambda labels: [{"value": v, "label_i18n": lab} for v, lab in zip(values, labels, strict=True)]
        )
    )
    base = st.fixed_dictionaries(
        {"key": st.just(key), "type": kind, "label_i18n": _labels(props["label_i18n"]), "required": st.booleans()}
    )
    return base.flatmap(lambda f: options.map(lambda o: {**f, "options": o}) if f["type"] == "select" else st.just(f))


def _prechat_form(member: dict) -> st.SearchStrategy:
    fields = member["properties"]["fields"]
    key = _string(fields["items"]["properties"]["key"])
    keys = st.lists(key, min_size=0, max_size=min(fields["max_items"], 4), unique=True)
    form = keys.flatmap(lambda ks: st.tuples(*[_prechat_field(fields["items"], k) for k in ks]).map(list))
    when = st.sampled_from(member["properties"]["when"]["enum"])
    return st.tuples(when, form).map(lambda wf: {"when": "never" if not wf[1] else wf[0], "fields": wf[1]})


def _bad_prechat_form(member: dict) -> st.SearchStrategy:
    fields = member["properties"]["fields"]
    item = fields["items"]["properties"]
    good = {"key": "a", "type": "text", "label_i18n": {"en": "A"}}
    too_many = [{**good, "key": f"k{n}"} for n in range(fields["max_items"] + 1)]
    return st.one_of(
        st.text(max_size=8)
        .filter(lambda w: w not in member["properties"]["when"]["enum"])
        .map(lambda w: {"when": w, "fields": []}),
        st.just({"fields": []}),
        st.just({"when": "always", "fields": too_many}),
        st.just({"when": "always", "fields": [good, good]}),
        st.just({"when": "always", "fields": [{**good, "type": "select"}]}),
        st.text(max_size=50)
        .filter(lambda k: not _fullmatch(item["key"], k))
        .map(lambda k: {"when": "always", "fields": [{**good, "key": k}]}),
        st.text(max_size=8)
        .filter(lambda t: t not in item["type"]["enum"])
        .map(lambda t: {"when": "always", "fields": [{**good, "type": t}]}),
        st.just({"when": "always", "fields": [{**good, "label_i18n": {}}]}),
    )


def _optional(member: dict) -> st.SearchStrategy:
    value = valid_value(member)
    return st.one_of(value, st.none()) if "null" in member["accepted_types"] else value


def valid(member: dict) -> st.SearchStrategy:
    return _optional(member)


def invalid(member: dict) -> st.SearchStrategy:
    """Values the schema says are refused, each drawn from one broken rule."""
    accepted = set(member["accepted_types"])
    kind = member["strict_json_type"]
    options = [
        s for t, s in _WRONG_TYPES.items() if t not in accepted and not (t == "integer" and "number" in accepted)
    ]
    options.append(_FLOATS)
    if member.get("accepted_values") is not None and kind in ("string", "integer"):
        allowed = member["accepted_values"]
        base = st.text(UTF8, max_size=12) if kind == "string" else st.integers(-1000, 1000)
        options.append(base.filter(lambda v: v not in allowed and not (isinstance(v, str) and _fullmatch(member, v))))
        refused = [v for v in member.get("enum") or [] if v not in allowed]
        if refused:
            options.append(st.sampled_from(refused))
    elif kind == "integer":
        options += [
            st.just(member["minimum"] - 1),
            st.just(member["maximum"] + 1),
            st.integers(max_value=member["minimum"] - 1),
            st.integers(min_value=member["maximum"] + 1),
            st.integers(member["minimum"], member["maximum"]).map(float),  # 20.0 is not the integer 20
            st.integers(member["minimum"], member["maximum"]).map(str),
        ]
    elif kind == "string":
        hi = member["max_length"]
        # one character too long, otherwise valid: a valid value repeated and cut at max_length + 1
        options.append(_string(member).map(lambda v: ((v or "a") * (hi + 1))[: hi + 1]))
        options.append(_string(member).map(lambda v: (v or "a") * (hi + 1)))
        if member.get("pattern"):
            options.append(st.text(UTF8, max_size=hi).filter(lambda v: not _fullmatch(member, v)))
        if member.get("min_length"):
            options.append(st.just(""))
    elif kind == "array":
        enum = member["items"]["enum"]
        options += [
            st.lists(st.text(max_size=5).filter(lambda v: v not in enum), min_size=1, max_size=3),
            st.sampled_from(enum).map(lambda v: [v, v]),
        ]
        if member["min_items"] > 0:
            options.append(st.just([]))
    elif member.get("type") == "prechat_form":
        options.append(_bad_prechat_form(member))
    elif kind == "object" and member.get("properties") is not None:
        devices = member["properties"]
        leaf_options = []
        for device, profile in devices.items():
            for leaf, leaf_member in profile["properties"].items():
                leaf_options.append(invalid_non_null(leaf_member).map(lambda v, d=device, k=leaf: {d: {k: v}}))
            leaf_options.append(st.just({device: {"not_a_field": 1}}))
            leaf_options.append(_WRONG_TYPES["array"].map(lambda v, d=device: {d: v}))
        leaf_options.append(st.text(max_size=5).filter(lambda k: k not in devices).map(lambda k: {k: {}}))
        options.append(st.one_of(leaf_options))
    elif member["type"] == "language_texts":
        language = st.sampled_from(member["keys"]["enum"])
        options += [
            st.text(max_size=4).filter(lambda k: k not in member["keys"]["enum"]).map(lambda k: {k: "Hi"}),
            st.tuples(language, invalid_non_null(member["values"])).map(lambda kv: {kv[0]: kv[1]}),
        ]
    elif kind == "object" and member.get("keys") is not None:
        keys = member["keys"]
        texts = member["values"]["properties"]
        enabled = keys["accepted_values"]
        locale = st.sampled_from(enabled)
        options += [
            st.text(max_size=4).filter(lambda k: k not in keys["enum"]).map(lambda k: {k: {"widget_name": "Hi"}}),
            locale.map(lambda k: {k: {}}),
            locale.map(lambda k: {k: {"not_translatable": "x"}}),
            locale.map(lambda k: {k: "text"}),
        ]
        disabled = [k for k in keys["enum"] if k not in enabled]
        if disabled:
            options.append(st.sampled_from(disabled).map(lambda k: {k: {"widget_name": "Hi"}}))
        for name, text in texts.items():
            options.append(st.tuples(locale, invalid_non_null(text)).map(lambda kv, n=name: {kv[0]: {n: kv[1]}}))
    return st.one_of(options)


def invalid_non_null(member: dict) -> st.SearchStrategy:
    return invalid({**member, "accepted_types": [*member["accepted_types"], "null"]}).filter(lambda v: v is not None)


def expected(member: dict, sent: Any) -> Any:
    """What GET shows after PATCH {name: sent} on a widget with no stored settings."""
    if sent is None:
        return member["effective_default"]
    for alias in member.get("aliases") or []:
        if isinstance(sent, bool) and sent is alias["value"]:
            return alias["means"]
    if (
        member["strict_json_type"] == "object"
        and member.get("properties") is not None
        and member["type"] != "prechat_form"
    ):
        pruned = {}
        for device, overrides in sent.items():
            if overrides is None:
                continue
            kept = {}
            for leaf, value in overrides.items():
                if value is None:
                    continue
                leaf_member = member["properties"][device]["properties"][leaf]
                kept[leaf] = expected({**leaf_member, "effective_default": None}, value)
            if kept:
                pruned[device] = kept
        return pruned
    return sent
