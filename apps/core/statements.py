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

import functools
import threading
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import Expression, Field, QuerySet, signals
from django.db.models.query import ModelIterable, get_related_populators
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


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple  # a Slot, or a constant the ORM put into the SQL's parameters
    names: tuple[str, ...]  # the values() names, in column order
    query: object  # the compiled Query (for the running connection's converters)
    columns: tuple  # the selected expressions, in column order


class Statement:
    """`build(*shape)` returns a `values()` queryset whose varying values are `Slot`s.

    `prepared`: on PostgreSQL each shape runs as a server-side prepared statement (`run_prepared`:
    parsed and planned once per connection, values bound on the server). Only for statements whose
    best plan does not depend on the values (a lookup by a unique key, a tenant's handful of rows);
    a list whose plan depends on the tenant's size stays unprepared, planned for its values."""

    def __init__(self, build: Callable[..., QuerySet], *, prepared: bool = False):
        self._build = build
        self._prepared = prepared
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
        if self._prepared and connection.vendor == "postgresql":
            rows = run_prepared(compiled.sql, self._bind(compiled, connection, values), using=using)
        else:
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


class ModelStatement(Statement):
    """`build(*shape)` returns a model queryset (`select_related` and `select_for_update` allowed)
    whose varying values are `Slot`s; each run returns its model instances, built as the ORM's own
    iterable builds them (`Model.from_db`, related rows cached on their foreign keys). For a lookup
    every write makes, such as a writer's `SELECT ... FOR UPDATE` of a chat with three related rows,
    building and compiling the query is most of its cost through the ORM.

    `prepared` as for `Statement`. A locking statement raises TransactionManagementError outside a
    transaction, as the ORM's does."""

    def rows(self, *args, **kwargs):
        raise TypeError("a ModelStatement returns model instances: instances()")

    tuples = rows

    def instances(self, shape: tuple[Hashable, ...] = (), *, using: str = DEFAULT_DB_ALIAS, **values) -> list:
        connection = connections[using]
        compiled = self._compiled.get((using, shape)) or self._compile(using, shape)
        if compiled.locks and connection.features.has_select_for_update and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = self._bind(compiled, connection, values)
        if self._prepared and connection.vendor == "postgresql":
            rows = run_prepared(compiled.sql, params, using=using)
        else:
            with connection.cursor() as cursor:
                cursor.execute(compiled.sql, params)
                rows = cursor.fetchall()
        compiler, converters = self._converters_for(connection, compiled)
        if converters:
            rows = compiler.apply_converters(rows, converters)
        found = []
        for row in rows:
            obj = compiled.model.from_db(using, compiled.init_list, row[compiled.model_columns])
            for populator in compiled.populators:
                populator.populate(row, obj)
            found.append(obj)
        return found

    def _compile(self, using: str, shape: tuple) -> _CompiledModels:
        queryset = self._build(*shape)
        query = queryset.query
        if query.values_select or query.annotation_select or queryset._iterable_class is not ModelIterable:
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
        )
        with self._lock:
            self._compiled[(using, shape)] = compiled
        return compiled


# psycopg's prepare_threshold for a connection run_prepared has used: no query reaches it by count.
_ONLY_WHEN_ASKED = 2**31 - 1


def run_prepared(sql: str, params: list, *, using: str = DEFAULT_DB_ALIAS) -> list[tuple]:
    """Run `sql` (PostgreSQL, `%s` placeholders) as a server-side prepared statement and return its
    rows (none for a statement without rows): parsed and planned once per connection, then only
    executed. For the few statements a process runs hundreds of times a second with new values (the
    webhook engine's lease and record, the rows of every message): the connections' client-side
    binding sends every run as new text, and planning it is a large part of each run.

    It runs through the connection's cursor wrappers (execute wrappers, query logging and
    capture), on the same connection and transaction as the ORM. Prepared statements need a
    connection that stays one session (a direct connection or psycopg's pool; a transaction-mode
    pooler older than PgBouncer 1.21 cannot keep them)."""
    connection = connections[using]
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:
        # Django opens its connections with preparing off (None), and psycopg then ignores even an
        # explicit prepare=True. Only this cursor asks; Django's own cursors bind on the client and
        # never prepare, so the threshold is set out of reach of any automatic preparing.
        connection.connection.prepare_threshold = _ONLY_WHEN_ASKED
    raw = _preparing_cursor_class()(connection.connection)
    cursor = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if _has_rows(raw) else []  # [] for a statement without rows


def _has_rows(cursor) -> bool:
    """`cursor.description is not None`, without the description: psycopg builds a Column object
    for every column each time `description` is read, and a message send's eleven prepared
    statements build over a hundred of them only to be compared to None."""
    result = cursor.pgresult
    return result is not None and (result.nfields > 0 or result.status in _row_statuses())


@functools.cache
def _row_statuses() -> frozenset:
    """The result statuses of a statement that returns rows, as psycopg's `description` reads them."""
    from psycopg.pq import ExecStatus

    return frozenset({ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE, ExecStatus.TUPLES_CHUNK})


@functools.cache
def _preparing_cursor_class():
    """psycopg is imported on first use: the embedded default (SQLite) never needs it."""
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        """Binds on the server and always prepares (Django turns psycopg's automatic preparing off)."""

        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

        def _convert_query(self, query, params=None):
            # A prepared run sends no text, and psycopg then leaves `_query` unset; Django's query
            # log (DEBUG, CaptureQueriesContext, the tests' query counts) reads the SQL from it.
            converted = super()._convert_query(query, params)
            self._query = converted
            return converted

    return PreparingCursor


def insert_new(objs: list, *, unique: str, using: str = DEFAULT_DB_ALIAS) -> list:
    """`bulk_create(objs, ignore_conflicts=True)` on PostgreSQL as one prepared statement: one array
    per column (`INSERT ... SELECT * FROM unnest(...)`), so its text is the same whatever the number
    of rows, bound on the server in binary. A row that conflicts with an existing one is skipped.
    Returns the objects inserted, in their order, with their primary keys set; they are matched to
    the returned keys by their `unique` field (unique, and set on every object before the insert).

    Each value is prepared as bulk_create prepares it (`pre_save`, then `get_db_prep_save`). For a
    table written hundreds of times a second: bulk_create binds on the client, and quoting its
    arrays element by element (a regular expression a value) was a quarter of webhook fan-out."""
    if not objs:
        return []
    model = type(objs[0])
    connection = connections[using]
    if connection.vendor != "postgresql":
        raise ValueError("insert_new needs PostgreSQL (unnest, ON CONFLICT ... RETURNING); use bulk_create elsewhere")
    sql, fields = _insert_new_sql(model, unique, using)
    columns = [[field.get_db_prep_save(field.pre_save(obj, True), connection) for obj in objs] for field in fields]
    by_key = {str(getattr(obj, unique)): obj for obj in objs}
    inserted = []
    for pk, key in run_prepared(sql, columns, using=using):
        obj = by_key[str(key)]
        obj.pk = pk
        obj._state.adding, obj._state.db = False, using
        inserted.append(obj)
    order = {id(obj): n for n, obj in enumerate(objs)}
    return sorted(inserted, key=lambda obj: order[id(obj)])


@functools.cache
def _insert_new_sql(model, unique: str, using: str) -> tuple[str, list[Field]]:
    connection = connections[using]
    meta = model._meta
    fields = [field for field in meta.concrete_fields if field is not meta.auto_field]
    q = connection.ops.quote_name
    arrays = ", ".join(f"%b::{field.db_type(connection)}[]" for field in fields)
    # identifiers from the model's own metadata, quoted; every value is a parameter
    sql = (
        f"INSERT INTO {q(meta.db_table)} ({', '.join(q(field.column) for field in fields)}) "  # noqa: S608
        f"SELECT * FROM unnest({arrays}) ON CONFLICT DO NOTHING "
        f"RETURNING {q(meta.pk.column)}, {q(meta.get_field(unique).column)}"
    )
    return sql, fields


def insert(obj, *, using: str = DEFAULT_DB_ALIAS) -> None:
    """`obj.save(force_insert=True)` of a new row, on PostgreSQL one prepared statement
    (`INSERT ... VALUES ... RETURNING` the primary key and any other database-returned column).

    For the rows every message writes (the message and its outbox event): the ORM compiles the
    insert anew each time and binds its values on the client, quoting each one into the text.
    Values are prepared as the ORM prepares them (`pre_save`, then `get_db_prep_save`) and related
    objects checked as `save()` checks them. Elsewhere, and for a model that would make the helper
    differ from `save()` (a receiver of its save signals, inherited tables, database defaults,
    generated columns), this is `save(force_insert=True)` itself."""
    connection = connections[using]
    model = type(obj)
    if connection.vendor != "postgresql" or not _plain_model(model):
        obj.save(force_insert=True, using=using)
        return
    obj._prepare_related_fields_for_save(operation_name="save")
    sql, fields, returning = _insert_sql(model, obj.pk is None, using)
    values = [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
    (row,) = run_prepared(sql, values, using=using)
    for field, value in zip(returning, row, strict=True):
        setattr(obj, field.attname, value)
    obj._state.adding, obj._state.db = False, using


def update(obj, update_fields: list[str], *, using: str = DEFAULT_DB_ALIAS) -> None:
    """`obj.save(update_fields=update_fields)` of a saved row, on PostgreSQL one prepared
    `UPDATE ... WHERE pk = ...` (the chat row a message moves on, the idempotency result). Like
    `save()`, an update that finds no row raises `DatabaseError`. Elsewhere, and for the models
    `insert` leaves to the ORM, this is `save(update_fields=...)` itself."""
    if not update_fields:
        return
    connection = connections[using]
    model = type(obj)
    if connection.vendor != "postgresql" or not _plain_model(model) or obj.pk is None:
        obj.save(update_fields=update_fields, using=using)
        return
    obj._prepare_related_fields_for_save(operation_name="save")
    sql, fields = _update_sql(model, tuple(sorted(set(update_fields))), using)
    values = [field.get_db_prep_save(field.pre_save(obj, False), connection) for field in fields]
    if not run_prepared(sql, [*values, model._meta.pk.get_db_prep_value(obj.pk, connection)], using=using):
        raise DatabaseError("Save with update_fields did not affect any rows.")
    obj._state.db = using


def _plain_model(model) -> bool:
    meta = model._meta
    return not (
        meta.parents
        or meta.proxy
        or signals.pre_save.has_listeners(model)
        or signals.post_save.has_listeners(model)
        or any(field.has_db_default() or getattr(field, "generated", False) for field in meta.concrete_fields)
    )


@functools.cache
def _insert_sql(model, auto_pk: bool, using: str) -> tuple[str, list[Field], list[Field]]:
    connection = connections[using]
    meta = model._meta
    fields = [field for field in meta.local_concrete_fields if not (auto_pk and field is meta.auto_field)]
    returning = list(meta.db_returning_fields) or [meta.pk]
    q = connection.ops.quote_name
    # identifiers from the model's own metadata, quoted; every value is a parameter
    sql = (
        f"INSERT INTO {q(meta.db_table)} ({', '.join(q(field.column) for field in fields)}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"RETURNING {', '.join(q(field.column) for field in returning)}"
    )
    return sql, fields, returning


@functools.cache
def _update_sql(model, names: tuple[str, ...], using: str) -> tuple[str, list[Field]]:
    connection = connections[using]
    meta = model._meta
    fields = [meta.get_field(name) for name in names]
    for field in fields:
        if not field.concrete or field.primary_key:
            raise ValueError(f"{model.__name__}.{field.name} is not a column update() can set")
    q = connection.ops.quote_name
    sql = (
        f"UPDATE {q(meta.db_table)} SET {', '.join(f'{q(field.column)} = %s' for field in fields)} "  # noqa: S608
        f"WHERE {q(meta.pk.column)} = %s RETURNING {q(meta.pk.column)}"
    )
    return sql, fields
