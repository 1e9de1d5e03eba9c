"""Compiled statements: a query's SQL built by the ORM once, then run many times with new values.

The ORM turns a queryset into SQL on every evaluation. For the small queries every request makes
that is most of their cost (the token lookup of every API request, a chat list page's query).

A `Statement` is written with the same ORM calls as the queryset it replaces, except that each value
that varies from run to run is a `Slot`. Its SQL is compiled the first time it runs on a database
(and once per *shape*, for statements whose filters vary: the shape is the part of the arguments
that changes the SQL, such as which filters are present or a page's limit). Each run then:

- binds every slot with its field's own preparation, `Field.get_db_prep_value`, the call a plain
  filter value gets from the ORM (so a datetime is adapted as the backend wants it);
- runs the SQL through the connection's cursor (the same wrappers, logging and instrumentation);
- applies the ORM's column converters of the running connection (SQLite's dates, booleans and
  UUIDs), so a row equals what `QuerySet.values()` gives.

Only `values()` querysets are compiled (rows as dicts, like `values()`); the callers build model
instances from rows where they need them (`Model.from_db`).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Expression, Field, Lookup, QuerySet
from django.db.models.query import get_related_populators
from django.db.transaction import TransactionManagementError


class Slot(Expression):
    """A value bound when the statement runs: `filter(prefix=Slot("prefix", field))`."""

    def __init__(self, name: str, output_field: Field):
        super().__init__(output_field=output_field)
        self.name = name

    def as_sql(self, compiler, connection):
        return "%s", [self]

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


class Ids(Field):
    """A list of ids bound as one slot (`Slot("page", Ids())`): an array on PostgreSQL, a JSON list
    elsewhere."""

    def get_db_prep_value(self, value, connection, prepared=False):
        ids = [int(v) for v in value]
        return ids if connection.vendor == "postgresql" else json.dumps(ids)


class AnyOf(Lookup):
    """`AnyOf(F("pk"), Slot("ids", Ids()))`: `lhs` is one of a list of ids bound as one parameter.
    The statement's text is the same whatever the number of ids, so it is compiled once and prepared
    once (an IN list has a placeholder per id: a text for each count, which the driver parses again
    on every run once it is longer than its cache takes)."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        # the compiled left and right sides only; the ids travel as a parameter
        return f"{lhs} IN (SELECT value FROM json_each({rhs}))", [*lhs_params, *rhs_params]  # noqa: S608

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs}::bigint[])", [*lhs_params, *rhs_params]


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple  # a Slot, or a constant the ORM put into the SQL's parameters
    names: tuple[str, ...]  # the values() names, in column order
    query: object  # the compiled Query (for the running connection's converters)
    columns: tuple  # the selected expressions, in column order


class Statement:
    """`build(*shape)` returns a `values()` queryset whose varying values are `Slot`s."""

    def __init__(self, build: Callable[..., QuerySet]):
        self._build = build
        self._compiled: dict[tuple, _Compiled] = {}
        self._converters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def rows(self, shape: tuple[Hashable, ...] = (), *, using: str = DEFAULT_DB_ALIAS, **values) -> list[dict]:
        compiled, rows = self._run(shape, using, values)
        names = compiled.names
        return [dict(zip(names, row, strict=True)) for row in rows]

    def tuples(self, shape: tuple[Hashable, ...] = (), *, using: str = DEFAULT_DB_ALIAS, **values) -> list[tuple]:
        """The rows as tuples in the values() order (`values_list()`): for callers that read
        thousands of rows into their own tuples."""
        return [tuple(row) for row in self._run(shape, using, values)[1]]

    def _run(self, shape: tuple, using: str, values: dict) -> tuple[_Compiled, list]:
        compiled = self._compiled.get((using, shape)) or self._compile(using, shape)
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, self._bind(compiled, connection, values))
            rows = cursor.fetchall()
        compiler, converters = self._converters_for(connection, compiled)
        if converters:
            rows = compiler.apply_converters(rows, converters)
        return compiled, rows

    def sql(self, shape: tuple[Hashable, ...] = (), *, using: str = DEFAULT_DB_ALIAS, **values) -> tuple[str, list]:
        """The SQL a run with these values executes, and its bound parameters."""
        compiled = self._compiled.get((using, shape)) or self._compile(using, shape)
        return compiled.sql, self._bind(compiled, connections[using], values)

    @staticmethod
    def _bind(compiled: _Compiled, connection, values: dict) -> list:
        return [
            p.output_field.get_db_prep_value(values[p.name], connection) if isinstance(p, Slot) else p
            for p in compiled.params
        ]

    def _compile(self, using: str, shape: tuple) -> _Compiled:
        queryset = self._build(*shape)
        query = queryset.query
        if not query.values_select and not query.annotation_select:
            raise TypeError("a Statement compiles values() querysets only")
        compiler = query.get_compiler(using)
        sql, params = compiler.as_sql()  # EmptyResultSet propagates: such a shape has no SQL
        # the SQL's column order: values()'s own order of fields and annotations when the query
        # records it (`selected`, as Django's ValuesIterable reads it), else fields then annotations
        if query.selected:
            names = tuple(query.selected)
        else:
            names = (*query.extra_select, *query.values_select, *query.annotation_select)
        compiled = _Compiled(
            sql=sql,
            params=tuple(params),
            names=tuple(names),
            query=query,
            columns=tuple(s[0] for s in compiler.select[: compiler.col_count]),
        )
        with self._lock:
            self._compiled[(using, shape)] = compiled
        return compiled

    def _converters_for(self, connection, compiled: _Compiled) -> tuple:
        """A compiler of the running connection (a connection belongs to one thread) and its
        converters for the statement's columns; `apply_converters` passes that connection on."""
        per_connection = self._converters.get(connection)
        if per_connection is None:
            with self._lock:  # the mapping is shared by the threads
                per_connection = self._converters.setdefault(connection, {})
        found = per_connection.get(id(compiled))
        if found is None:
            compiler = compiled.query.get_compiler(connection=connection)
            found = per_connection[id(compiled)] = (compiler, compiler.get_converters(compiled.columns))
        return found


@dataclass(frozen=True)
class _CompiledModels:
    sql: str
    params: tuple
    query: object
    columns: tuple  # every selected expression, in column order
    locks: bool  # SELECT ... FOR UPDATE: runs only inside a transaction
    model: type
    init_list: tuple[str, ...]  # the model's own attnames, in column order
    model_columns: slice
    populators: tuple  # the ORM's RelatedPopulators (select_related), stateless once built
    annotations: tuple[tuple[str, int], ...]  # (attribute, column) of each annotate() value


class ModelStatement(Statement):
    """`build(*shape)` returns a model queryset (`select_related`, `select_for_update` and `annotate`
    allowed) whose varying values are `Slot`s; each run returns its model instances, built as the
    ORM's own iterable builds them (`Model.from_db`, related rows cached on their foreign keys, each
    annotation set as an attribute). For a lookup every write makes, such as a writer's `SELECT ...
    FOR UPDATE` of a chat with three related rows, building and compiling the query is most of its
    cost through the ORM.

    A locking statement raises TransactionManagementError outside a transaction, as the ORM's
    does."""

    def rows(self, *args, **kwargs):
        raise TypeError("a ModelStatement returns model instances: instances()")

    tuples = rows

    def instances(self, shape: tuple[Hashable, ...] = (), *, using: str = DEFAULT_DB_ALIAS, **values) -> list:
        connection = connections[using]
        compiled = self._compiled.get((using, shape)) or self._compile(using, shape)
        if compiled.locks and connection.features.has_select_for_update and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, self._bind(compiled, connection, values))
            rows = cursor.fetchall()
        compiler, converters = self._converters_for(connection, compiled)
        if converters:
            rows = compiler.apply_converters(rows, converters)
        found = []
        for row in rows:
            obj = compiled.model.from_db(using, compiled.init_list, row[compiled.model_columns])
            for populator in compiled.populators:
                populator.populate(row, obj)
            for name, position in compiled.annotations:
                setattr(obj, name, row[position])
            found.append(obj)
        return found

    def _compile(self, using: str, shape: tuple) -> _CompiledModels:
        queryset = self._build(*shape)
        query = queryset.query
        if query.values_select or (query.annotation_select and not query.default_cols):  # values(), values_list()
            raise TypeError("a ModelStatement compiles querysets of model instances only")
        compiler = query.get_compiler(using)
        sql, params = compiler.as_sql()  # FOR UPDATE outside a transaction: the ORM's own error
        select, klass_info = compiler.select, compiler.klass_info
        fields = klass_info["select_fields"]
        model_columns = slice(fields[0], fields[-1] + 1)
        compiled = _CompiledModels(
            sql=sql,
            params=tuple(params),
            query=query,
            columns=tuple(s[0] for s in select[: compiler.col_count]),
            locks=bool(query.select_for_update),
            model=klass_info["model"],
            init_list=tuple(column[0].target.attname for column in select[model_columns]),
            model_columns=model_columns,
            populators=tuple(get_related_populators(klass_info, select, using)),
            annotations=tuple(compiler.annotation_col_map.items()),
        )
        with self._lock:
            self._compiled[(using, shape)] = compiled
        return compiled
