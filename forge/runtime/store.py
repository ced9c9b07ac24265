"""The statements of a round, in SQL: the runtime's hot path.

A run takes one round per step, and the ORM spends ~0.3 ms building each
statement, most of a round's cost. So the round's statements are built once
per shape here and cached. The models stay the schema: columns and value
adapters come from their fields, and the statements are plain SQL that
SQLite and PostgreSQL both run.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterable, Iterator

from django.db import connection, models
from django.db.models.constants import OnConflict
import psycopg
from psycopg import pq

from forge.runs.models import Run, RunInput, StepResult

CHUNK = 500  # rows per INSERT, well under SQLite's limit of bound variables
Statement = tuple[str, list]


@functools.lru_cache(maxsize=None)
def _adapters(model: type[models.Model]) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """attname -> (quoted column, adapter) of every concrete field but the primary key."""
    ops, found = connection.ops, {}
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        if isinstance(field, models.DateTimeField):
            adapt = ops.adapt_datetimefield_value
        elif isinstance(field, models.JSONField):
            adapt = functools.partial(_json, field.null, ops.adapt_json_value)
        else:
            adapt = _same
        found[field.attname] = (ops.quote_name(field.column), adapt)
    return found


def _same(value):
    return value


def _json(nullable: bool, adapt: Callable[[Any, Any], Any], value):
    if value is None and nullable:
        return None  # SQL NULL, as the ORM stores None in a nullable JSONField
    return adapt(value, None)


def _table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@functools.lru_cache(maxsize=512)
def _update_sql(model: type[models.Model], columns: tuple[str, ...], computed: tuple[tuple[str, str], ...],
                where: tuple[str, ...]) -> str:
    adapters = _adapters(model)
    sets = ", ".join([f"{adapters[name][0]} = %s" for name in columns]
                     + [f"{adapters[name][0]} = {sql}" for name, sql in computed])
    conditions = " AND ".join(f"{adapters[name][0] if name in adapters else name} = %s" for name in where)
    return f"UPDATE {_table(model)} SET {sets} WHERE {conditions}"


def updating(model: type[models.Model], values: dict[str, Any], *, computed: dict[str, Statement] | None = None,
             **where: Any) -> Statement:
    """UPDATE model SET values (and columns `computed` by SQL expressions) WHERE each `where` attname equals
    its value."""
    adapters = _adapters(model)
    columns = tuple(values)
    params = [adapters[name][1](values[name]) for name in columns]
    expressions = tuple((name, sql) for name, (sql, _) in (computed or {}).items())
    for _, expression_params in (computed or {}).values():
        params += expression_params
    params += [adapters[name][1](value) if name in adapters else value for name, value in where.items()]
    return _update_sql(model, columns, expressions, tuple(where)), params


def update(model: type[models.Model], values: dict[str, Any], **where: Any) -> None:
    execute([updating(model, values, **where)])


@functools.lru_cache(maxsize=512)
def _insert_sql(model: type[models.Model], rows: int, ignore_conflicts: bool) -> str:
    adapters = _adapters(model)
    ops = connection.ops
    on_conflict = OnConflict.IGNORE if ignore_conflicts else None
    one = "(" + ", ".join(["%s"] * len(adapters)) + ")"
    suffix = ops.on_conflict_suffix_sql(list(model._meta.concrete_fields), on_conflict, None, None)
    return (f"{ops.insert_statement(on_conflict=on_conflict)} {_table(model)} "
            f"({', '.join(column for column, _ in adapters.values())}) VALUES {', '.join([one] * rows)} {suffix}")


def inserting(objects: Iterable[models.Model], *, ignore_conflicts: bool = False) -> list[Statement]:
    """INSERT new rows of one model (their primary keys are not read back)."""
    objects = list(objects)
    if not objects:
        return []
    model = type(objects[0])
    adapters = _adapters(model)
    statements = []
    for start in range(0, len(objects), CHUNK):
        chunk = objects[start:start + CHUNK]
        params = [adapt(getattr(obj, name)) for obj in chunk for name, (_, adapt) in adapters.items()]
        statements.append((_insert_sql(model, len(chunk), ignore_conflicts), params))
    return statements


def insert(objects: Iterable[models.Model], *, ignore_conflicts: bool = False) -> None:
    execute(inserting(objects, ignore_conflicts=ignore_conflicts))


def _cursor():
    """A cursor for these statements. On PostgreSQL it is psycopg's own, which binds parameters on the server
    with its compiled dumpers (Django's quotes each one in Python, for ~10 statements a round); its errors
    become Django's in `pipeline()`, or in `_reading()`."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


@contextlib.contextmanager
def _reading() -> Iterator[Any]:
    """A cursor for a read outside a pipeline."""
    with connection.wrap_database_errors, _cursor() as cursor:
        yield cursor


def execute(statements: list[Statement]) -> None:
    """Run statements whose results are not read (on PostgreSQL in one round trip)."""
    if not statements:
        return
    with pipeline(), _cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)


@contextlib.contextmanager
def pipeline() -> Iterator[None]:
    """On PostgreSQL, the statements executed inside go to the server together, in one round trip when a
    result is read or the block ends (psycopg's pipeline mode; inside another pipeline, that one's). Only
    for statements whose row counts the caller does not read: those are known only once the pipeline syncs,
    and so is a failure, which then arrives as Django's error."""
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    if connection.connection.pgconn.pipeline_status != pq.PipelineStatus.OFF:
        yield  # the outer pipeline sends these too, and turns their errors into Django's
        return
    with connection.wrap_database_errors:
        if not psycopg.Pipeline.is_supported():  # a libpq older than 14: a round trip per statement
            yield
            return
        with connection.connection.pipeline():
            yield


def open_round(run_id: int, *, arrived: Iterable[models.Model] = (), due_by=None,
               limit: int = 0) -> tuple[Run, list[tuple[int, str, dict]] | None]:
    """Lock the run's row until the transaction ends, insert the `arrived` inputs, and (given `due_by`) read
    the due inputs: on PostgreSQL all in one round trip, the transaction's BEGIN included."""
    with pipeline(), _cursor() as locking, _cursor() as reading:
        locking.execute(_lock_sql(), [run_id])
        for sql, params in inserting(arrived, ignore_conflicts=True):
            reading.execute(sql, params)
        if due_by is not None:
            reading.execute(*_due_inputs_sql(run_id, due_by, limit))
        row = locking.fetchone()
        if row is None:
            raise Run.DoesNotExist(f"run {run_id} does not exist")
        inputs = None if due_by is None else _inputs_of(reading.fetchall())
    names, fields = _row_fields(Run)
    return Run.from_db(connection.alias, names, [_from_db(Run, f, v) for f, v in zip(fields, row)]), inputs


def lock_run(run_id: int) -> Run:
    """The run's row, locked until the transaction ends (on SQLite the transaction holds the write lock)."""
    return open_round(run_id)[0]


@functools.lru_cache(maxsize=None)
def _row_fields(model: type[models.Model]) -> tuple[list[str], list[str]]:
    """The attnames and names of the model's concrete fields, in the order `_lock_sql` selects them."""
    fields = model._meta.concrete_fields
    return [f.attname for f in fields], [f.name for f in fields]


@functools.lru_cache(maxsize=None)
def _lock_sql() -> str:
    columns = ", ".join(connection.ops.quote_name(f.column) for f in Run._meta.concrete_fields)
    sql = f"SELECT {columns} FROM {_table(Run)} WHERE id = %s"
    return sql + " FOR UPDATE" if connection.features.has_select_for_update else sql


def _due_inputs_sql(run_id: int, due_by, limit: int) -> Statement:
    key, due_at, processed_at = (_adapters(RunInput)[name][0] for name in ("key", "due_at", "processed_at"))
    return (f"SELECT id, {key}, event FROM {_table(RunInput)} WHERE run_id = %s AND {processed_at} IS NULL "
            f"AND {due_at} <= %s ORDER BY {due_at}, id LIMIT %s",
            [run_id, connection.ops.adapt_datetimefield_value(due_by), limit])


def _inputs_of(rows) -> list[tuple[int, str, dict]]:
    return [(pk, key, _from_db(RunInput, "event", event)) for pk, key, event in rows]


def due_inputs(run_id: int, now, limit: int) -> list[tuple[int, str, dict]]:
    """(id, key, event) of the run's unprocessed inputs due by `now`, oldest first."""
    with _reading() as cursor:
        cursor.execute(*_due_inputs_sql(run_id, now, limit))
        return _inputs_of(cursor.fetchall())


def retiring_inputs(run_id: int, ids: list[int], keys: list[str], now) -> list[Statement]:
    """Mark inputs processed: those fed (by id) and those no longer wanted (by key)."""
    if not ids and not keys:
        return []
    key, processed_at = (_adapters(RunInput)[name][0] for name in ("key", "processed_at"))
    conditions, params = [], [connection.ops.adapt_datetimefield_value(now)]
    if ids:
        conditions.append(f"id IN ({', '.join(['%s'] * len(ids))})")
        params += ids
    if keys:
        conditions.append(f"(run_id = %s AND {key} IN ({', '.join(['%s'] * len(keys))}) AND {processed_at} IS NULL)")
        params += [run_id, *keys]
    return [(f"UPDATE {_table(RunInput)} SET {processed_at} = %s WHERE {' OR '.join(conditions)}", params)]


def next_due_sql(run_id: int) -> Statement:
    """A subquery: when the run's earliest unprocessed input falls due (NULL when none is left)."""
    due_at, processed_at = (_adapters(RunInput)[name][0] for name in ("due_at", "processed_at"))
    return (f"(SELECT MIN({due_at}) FROM {_table(RunInput)} WHERE run_id = %s AND {processed_at} IS NULL)",
            [run_id])


def step_row(run_id: int, step: str, *names: str) -> dict[str, Any] | None:
    """The id and the named fields of one step's row, converted as the ORM would, or None."""
    adapters = _adapters(StepResult)
    columns = ", ".join(["id"] + [adapters[name][0] for name in names])
    with _reading() as cursor:
        cursor.execute(f"SELECT {columns} FROM {_table(StepResult)} WHERE run_id = %s AND {adapters['step'][0]} = %s",
                       [run_id, step])
        row = cursor.fetchone()
    if row is None:
        return None
    return {"id": row[0], **{name: _from_db(StepResult, name, value) for name, value in zip(names, row[1:])}}


def _from_db(model: type[models.Model], name: str, value):
    """A value read from the database, converted as the ORM converts that field's values."""
    column, converters = _converters(model, name)
    for convert in converters:
        value = convert(value, column, connection)
    return value


@functools.lru_cache(maxsize=None)
def _converters(model: type[models.Model], name: str):
    column = model._meta.get_field(name).get_col(model._meta.db_table)
    return column, tuple(connection.ops.get_db_converters(column) + column.get_db_converters(connection))


def input_exists(run_id: int, key: str) -> bool:
    with _reading() as cursor:
        cursor.execute(f"SELECT 1 FROM {_table(RunInput)} WHERE run_id = %s AND {_adapters(RunInput)['key'][0]} = %s",
                       [run_id, key])
        return cursor.fetchone() is not None
