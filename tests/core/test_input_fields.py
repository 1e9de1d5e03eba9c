"""InputSerializer's fields: each instance binds fields of its own, an empty input skips only the
serializers that say it is valid, and a JSON body's scalars keep their JSON type."""

import copy
import threading
import uuid

import pytest
from django.core.validators import MaxValueValidator
from django.urls import get_resolver
from rest_framework import serializers

from apps.core.api.serializers import (
    InputSerializer,
    StrictBooleanField,
    StrictFloatField,
    StrictIntegerField,
    StrictStringMixin,
    StrictUUIDField,
    validate_input,
)
from apps.core.errors import flatten_errors


class Inner(InputSerializer):
    n = serializers.IntegerField()


class Sample(InputSerializer):
    name = serializers.CharField(max_length=5)
    size = serializers.IntegerField(validators=[MaxValueValidator(9)], required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)
    inner = Inner(required=False)


def test_each_instance_binds_fields_of_its_own():
    one, two = Sample(data={}), Sample(data={})
    for name in ("name", "size", "tags", "inner"):
        assert one.fields[name] is not two.fields[name]
        assert one.fields[name].parent is one and two.fields[name].parent is two
    # the validator list is the instance's own: adding to it leaves the class and others alone
    one.fields["size"].validators.append(MaxValueValidator(1))
    assert len(two.fields["size"].validators) == len(Sample(data={}).fields["size"].validators) == 1
    # a field holding fields is deep-copied: its child belongs to it
    assert one.fields["tags"].child.parent is one.fields["tags"]
    assert one.fields["inner"].fields["n"].parent is one.fields["inner"]


def test_validation_is_unchanged_and_instances_do_not_leak_into_each_other():
    assert validate_input(Sample, {"name": "abc", "size": 3, "tags": ["x"], "inner": {"n": 1}}) == {
        "name": "abc",
        "size": 3,
        "tags": ["x"],
        "inner": {"n": 1},
    }
    bad = Sample(data={"name": "toolong", "size": 10, "inner": {"n": "x"}})
    assert not bad.is_valid()
    assert set(bad.errors) == {"name", "size", "inner"}
    good = Sample(data={"name": "ok"})
    assert good.is_valid() and good.validated_data == {"name": "ok"}


def test_threads_validating_at_once_each_see_their_own_values():
    failures = []

    def run(n):
        for _ in range(200):
            s = Sample(data={"name": f"t{n}", "size": n})
            if not s.is_valid() or s.validated_data != {"name": f"t{n}", "size": n}:
                failures.append(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def _input_serializers(cls=InputSerializer):
    for sub in cls.__subclasses__():
        yield sub
        yield from _input_serializers(sub)


def test_a_serializer_said_valid_when_empty_validates_nothing_to_nothing():
    """`empty_is_valid` lets validate_input skip the serializer for an empty input: every class
    that says so must give exactly that, {}, when it does run on {}."""
    get_resolver().url_patterns  # imports every view, and with them every input serializer
    flagged = [cls for cls in set(_input_serializers()) if cls.__dict__.get("empty_is_valid")]
    assert flagged, "no serializer says it is valid when empty"
    for cls in flagged:
        serializer = cls(data={}, context={})
        assert serializer.is_valid(), (cls.__name__, serializer.errors)
        assert dict(serializer.validated_data) == {}, cls.__name__


def test_an_empty_input_skips_only_a_serializer_that_says_so():
    built = []

    class Flagged(InputSerializer):
        empty_is_valid = True
        size = serializers.IntegerField(required=False)

        def __init__(self, *args, **kwargs):
            built.append(kwargs.get("partial"))
            super().__init__(*args, **kwargs)

    class Required(InputSerializer):
        name = serializers.CharField()

    # as views call it (ContractMixin.validated passes partial=False): no serializer is built
    assert validate_input(Flagged, {}) == {} and validate_input(Flagged, {}, partial=False) == {}
    assert built == []
    assert validate_input(Flagged, {"size": "3"}) == {"size": 3}
    assert validate_input(Flagged, {}, partial=True) == {}  # a partial input is validated as before
    assert built == [False, True]
    with pytest.raises(serializers.ValidationError) as refused:  # the 422 problem, as before
        validate_input(Required, {})
    assert set(refused.value.detail) == {"name"}


@pytest.mark.parametrize(
    ("field", "refused", "accepted"),
    [
        (StrictFloatField(), [True, False, "1.5", float("nan"), float("inf")], [(0, 0.0), (1.5, 1.5)]),
        (StrictIntegerField(), [True, "3", 3.0], [(3, 3)]),
        (StrictBooleanField(), [1, 0, "true", "yes"], [(True, True), (False, False)]),
        (
            StrictUUIDField(),
            [1, 2**64],
            [("0b7e7f1c-6a8b-4a3c-9d1e-2f3a4b5c6d7e", uuid.UUID("0b7e7f1c-6a8b-4a3c-9d1e-2f3a4b5c6d7e"))],
        ),
    ],
)
def test_a_strict_field_takes_only_its_own_json_type(field, refused, accepted):
    for value in refused:
        with pytest.raises(serializers.ValidationError):
            field.run_validation(value)
    for value, internal in accepted:
        assert field.run_validation(value) == internal


# DRF's plain fields turn another JSON type into theirs: `false` into the number 0, 12 into the
# text "12", 1 into a UUID, "yes" into true. A JSON body's member is refused instead (422), as its
# schema says. Query strings are text by nature; their serializers (`...Query`) parse it.
_LAX = {
    serializers.CharField: StrictStringMixin,
    serializers.UUIDField: StrictStringMixin,
    serializers.IntegerField: StrictIntegerField,
    serializers.FloatField: StrictFloatField,
    serializers.BooleanField: StrictBooleanField,
}


def _lax_fields(fields, path):
    for name, field in fields.items():
        if field.read_only:
            continue
        where = f"{path}.{name}"
        for plain, strict in _LAX.items():
            if isinstance(field, plain) and not isinstance(field, strict):
                yield where, type(field).__name__
        if isinstance(field, serializers.ListSerializer):
            yield from _lax_fields(field.child.fields, f"{where}[]")
        elif isinstance(field, serializers.Serializer):
            yield from _lax_fields(field.fields, where)
        elif isinstance(field, serializers.ListField):
            yield from _lax_fields({"[]": field.child}, where)


def test_every_json_body_member_keeps_its_json_type():
    get_resolver().url_patterns  # imports every view, and with them every input serializer
    bodies = [
        cls
        for cls in set(_input_serializers())
        if not cls.__name__.endswith("Query")
        and cls.__module__.startswith(("apps.", "tests.testapp."))
        and ".tests." not in cls.__module__
    ]
    assert len(bodies) > 50
    # the declared fields as `get_fields` copies them, without building a serializer (some need a
    # context to be built)
    lax = sorted(
        found for cls in bodies for found in _lax_fields(copy.deepcopy(cls._declared_fields), cls.__qualname__)
    )
    assert lax == []


class Free(InputSerializer):
    name = serializers.CharField(required=False)
    free = serializers.DictField(required=False)


@pytest.mark.parametrize(
    ("data", "errors"),
    [
        ({"free": {"k": "a\x00"}}, {"free.k": ["Null characters are not allowed."]}),
        ({"free": {"k": ["ok", {"x": "\ud83d"}]}}, {"free.k.1.x": ["Surrogate characters are not allowed: U+D83D."]}),
        ({"free": {"\x00": 1}}, {"free": ["Null characters are not allowed."]}),
        ({"name": "a\x00"}, {"name": ["Null characters are not allowed."]}),
    ],
)
def test_text_no_store_holds_is_refused_wherever_it_is(data, errors):
    # a free-form member holds what no string field would take: NUL, a lone surrogate
    with pytest.raises(serializers.ValidationError) as refused:
        validate_input(Free, data)
    assert flatten_errors(refused.value.detail) == errors


def test_text_every_store_holds_passes_through():
    data = {"name": "Анна 😀", "free": {"k": ["ok", {"x": "tab\tand newline\n"}]}}
    assert validate_input(Free, data) == data
