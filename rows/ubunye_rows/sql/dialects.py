"""The SQL each database needs to write rows-v1 text: one class per dialect, the same contract.

Every method takes SQL expressions as text and returns one. The expressions stay within what
both engines share where they can (``split_part``, ``ltrim``, ``concat_ws``, ``chr``); where they
differ (hashing, lambdas, arrays, time zones, years before 1 AD) each dialect says it its own
way. Snowflake or BigQuery would be one more subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

#: Writes the SQL text of a value given the SQL expression of the value.
Writer = Callable[[str], str]

#: The smallest positive normal number of each float width: below it Java's two-digit rule can
#: move the digits (``4.9E-324``), so only there is the nearest two-digit decimal worked out.
MIN_NORMAL = {64: "2.2250738585072014E-308", 32: "1.17549435E-38"}
#: The powers of ten that bring a subnormal of each width near 1 in two exact-enough steps.
SUBNORMAL_SCALE = {64: 300, 32: 30}
#: Control characters Jackson writes in short form; every other one below 0x20 is ``\u00XX``.
SHORT_ESCAPES = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}


def literal(text: str) -> str:
    """``text`` as a standard SQL string literal (quotes doubled, backslashes as they are)."""
    return "'" + text.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


#: How an in-database hash that met an infinite date or time says so: this, the value's SQL
#: expression, ``": "`` and the value (``ubunye_rows.sql.infinite_value_error`` reads it back).
INFINITE_VALUE_OF = "rows-v1 has no text for the infinite value of "


class Dialect(ABC):
    """The text-writing SQL both engines share; subclasses fill in what differs."""

    name: ClassVar[str] = ""
    #: The most arguments one ``concat_ws`` call may take (PostgreSQL stops at 100).
    max_arguments: ClassVar[int] = 90
    #: The lowest character code a text value can hold (PostgreSQL text cannot hold NUL).
    lowest_character: ClassVar[int] = 0
    #: Whether the engine's text of a float32 is its shortest round-trip text as a float32.
    writes_float32: ClassVar[bool] = True
    #: What keeps a subquery's columns computed once (PostgreSQL would substitute them into
    #: each use otherwise: the line built and hashed once per lane).
    fence: ClassVar[str] = ""

    def text(self, expression: str) -> str:
        """``expression`` cast to the engine's text type."""
        return f"CAST({expression} AS VARCHAR)"

    def streamed(self, expression: str, arrow_type: object) -> str:
        """A column as it is streamed to the kernel: as the engine exports it."""
        return expression

    def integer_text(self, expression: str) -> str:
        """An integer's decimal text."""
        return self.text(expression)

    def bool_text(self, expression: str) -> str:
        """``true`` or ``false``."""
        return f"CASE WHEN {expression} THEN 'true' WHEN NOT {expression} THEN 'false' END"

    def joined(self, parts: Sequence[str], separator: str = ",") -> str:
        """The non-null ``parts`` joined by ``separator`` ('' when every part is null)."""
        if len(parts) <= self.max_arguments:
            return f"concat_ws({literal(separator)}, {', '.join(parts)})"
        size = self.max_arguments
        groups = [parts[i : i + size] for i in range(0, len(parts), size)]
        # An inner group of nulls only gives '', which must not add a separator of its own.
        inner = [f"NULLIF({self.joined(group, separator)}, '')" for group in groups]
        return self.joined(inner, separator)

    def has_special_characters(self, expression: str) -> str:
        """True where a text holds a quote, a backslash or a control character."""
        low = f"\\x{self.lowest_character:02x}"
        return f"regexp_matches({expression}, '[{low}-\\x1f\"\\\\]')"

    def string_text(self, expression: str) -> str:
        """A text value as a JSON string, escaped exactly as Jackson escapes it."""
        escaped = f"replace(replace({expression}, '\\', '\\\\'), '\"', '\\\"')"
        for code in range(self.lowest_character, 0x20):
            written = SHORT_ESCAPES.get(code, f"\\u{code:04X}")
            escaped = f"replace({escaped}, chr({code}), {literal(written)})"
        special = self.has_special_characters(expression)
        return f"'\"' || CASE WHEN {special} THEN {escaped} ELSE {expression} END || '\"'"

    def plain_float_text(self, x: str, digits: str, power: str) -> str:
        """A float with 1e-3 <= |x| < 1e7 as Java writes it: positional, '.0' after a whole."""
        return self.text(x)

    def float_text(self, expression: str, bits: int) -> str:
        """A float64 (``bits`` 64) or float32 (32) as Java's ``toString`` writes it."""
        digits, power = self._parsed(self.text(f"abs({expression})"))
        return self._float_layout(expression, bits, digits, power)

    def _float_layout(self, x: str, bits: int, digits: str, power: str) -> str:
        """Java's text of ``x`` from the significant ``digits`` of |x|'s shortest round-trip
        text and the ``power`` of ten of the first (|x| = d.ddd * 10^power)."""
        sign = f"CASE WHEN {self.text(x)} LIKE '-%' THEN '-' ELSE '' END"
        magnitude = f"CAST(abs({x}) AS DOUBLE PRECISION)"
        plain = self.plain_float_text(x, digits, power)
        return (
            f"CASE WHEN {x} = 'NaN' THEN '\"NaN\"' "
            f"WHEN {x} IN ('Infinity', '-Infinity') THEN "
            f"CASE WHEN {x} > 0 THEN '\"Infinity\"' ELSE '\"-Infinity\"' END "
            f"WHEN {x} = 0 THEN {sign} || '0.0' "
            f"WHEN {magnitude} >= 1e-3 AND {magnitude} < 1e7 THEN {plain} "
            f"ELSE {sign} || {self._scientific_float_text(x, bits, digits, power)} END"
        )

    def _parsed(self, shown: str) -> tuple[str, str]:
        """The significant digits of a positive number's text (``123.45``, ``1e-07``,
        ``2.5e-310``) and the power of ten of the first."""
        mantissa = f"split_part({shown}, 'e', 1)"
        exponent = (
            f"(CASE WHEN strpos({shown}, 'e') > 0 "
            f"THEN CAST(split_part({shown}, 'e', 2) AS INTEGER) ELSE 0 END)"
        )
        whole_digits = f"length(split_part({mantissa}, '.', 1))"
        all_digits = f"replace({mantissa}, '.', '')"
        leading_zeros = f"(length({all_digits}) - length(ltrim({all_digits}, '0')))"
        digits = f"rtrim(ltrim({all_digits}, '0'), '0')"
        return digits, f"({exponent} + {whole_digits} - 1 - {leading_zeros})"

    def _positional_float_text(self, x: str, digits: str, power: str) -> str:
        """|x| (1e-3 <= |x| < 1e7) positional from its digits, signed: '.0' after a whole
        number, zeros after the point before a small one."""
        sign = f"CASE WHEN {x} < 0 THEN '-' ELSE '' END"
        whole = f"rpad(left({digits}, {power} + 1), {power} + 1, '0')"
        fraction = f"coalesce(nullif(substr({digits}, {power} + 2), ''), '0')"
        small = f"'0.' || repeat('0', -{power} - 1) || {digits}"
        return (
            f"{sign} || CASE WHEN {power} >= 0 THEN {whole} || '.' || {fraction} ELSE {small} END"
        )

    def _scientific_float_text(self, x: str, bits: int, digits: str, power: str) -> str:
        """``d.dddE<n>`` of |x| from its digits; Java's two digits for a subnormal of one."""
        shortest = (
            f"left({digits}, 1) || '.' || coalesce(nullif(substr({digits}, 2), ''), '0') "
            f"|| 'E' || {self.text(power)}"
        )
        scale = SUBNORMAL_SCALE[bits]
        magnitude = f"CAST(abs({x}) AS DOUBLE PRECISION)"
        # The nearest two-digit decimal is placed by the value's own exponent (9.8E-45 for the
        # float whose shortest text is 1E-44), not by the shortest text's.
        own = f"CAST(floor(log10({magnitude})) AS INTEGER)"
        near = f"round({magnitude} * 1e{scale} * power(10, 1 - {own} - {scale}))"
        two_digits = self.text(f"CAST({near} AS INTEGER)")
        nearest = (
            f"CASE WHEN {near} >= 100 THEN '1.0E' || {self.text(f'{own} + 1')} "
            f"ELSE left({two_digits}, 1) || '.' || substr({two_digits}, 2, 1) "
            f"|| 'E' || {self.text(own)} END"
        )
        return (
            f"(CASE WHEN length({digits}) = 1 AND abs({x}) < {MIN_NORMAL[bits]} "
            f"THEN {nearest} ELSE {shortest} END)"
        )

    def positional_decimal(self, expression: str) -> str:
        """A decimal's positional text, its integer part always written (``0.06``, ``-0.7``)."""
        return self.text(expression)

    def decimal_text(self, expression: str, scale: int) -> str:
        """A decimal as Java's ``BigDecimal.toString`` (Python's ``str(Decimal)``) writes it."""
        shown = self.positional_decimal(expression)
        if scale <= 6:
            return shown  # the adjusted exponent cannot fall below -6: always positional
        digits = f"replace(replace({shown}, '-', ''), '.', '')"
        coefficient = f"coalesce(nullif(ltrim({digits}, '0'), ''), '0')"
        adjusted = f"(length({coefficient}) - 1 - {scale})"
        scientific = (
            f"CASE WHEN {shown} LIKE '-%' THEN '-' ELSE '' END || left({coefficient}, 1) || "
            f"CASE WHEN length({coefficient}) > 1 THEN '.' || substr({coefficient}, 2) "
            f"ELSE '' END || 'E' || {self.text(adjusted)}"
        )
        return f"CASE WHEN {adjusted} >= -6 THEN {shown} ELSE {scientific} END"

    def year_text(self, year: str) -> str:
        """A proleptic (astronomical) year as java.time writes it: four digits, a sign past."""
        return (
            f"CASE WHEN {year} BETWEEN 0 AND 9999 THEN lpad({self.text(year)}, 4, '0') "
            f"WHEN {year} > 9999 THEN '+' || {self.text(year)} "
            f"ELSE '-' || lpad({self.text(f'-({year})')}, 4, '0') END"
        )

    # What each engine says its own way.

    def date_text(self, expression: str) -> str:
        """A date as ``"yyyy-MM-dd"``."""
        year = self.year_text(self.year_of(expression))
        text = f"'\"' || {year} || {self.after_year(expression, 'date')} || '\"'"
        return self.finite_time(expression, text)

    def timestamp_text(self, expression: str, zoned: bool) -> str:
        """A timestamp as ``"yyyy-MM-ddTHH:mm:ss.ffffff"`` (its UTC instant and ``Z`` if zoned)."""
        wall = self.wall_time(expression, zoned)
        close = "Z\"'" if zoned else "\"'"
        year = self.year_text(self.year_of(wall))
        text = f"'\"' || {year} || {self.after_year(wall, 'timestamp')} || '{close}"
        return self.finite_time(expression, text)

    def finite_time(self, expression: str, text: str) -> str:
        """``text``, the text of the date or timestamp ``expression``, failing the query on an
        infinite value where the engine holds one and the query can fail itself (the base: as
        it is; PostgreSQL's infinities are looked for before the query instead)."""
        return text

    @abstractmethod
    def year_of(self, expression: str) -> str:
        """A date's or timestamp's proleptic (astronomical) year: 1 BC is year 0."""

    @abstractmethod
    def after_year(self, expression: str, kind: str) -> str:
        """The text after the year: ``-MM-dd`` of a ``date``, ``-MM-ddTHH:mm:ss.ffffff`` of a
        ``timestamp``."""

    @abstractmethod
    def wall_time(self, expression: str, zoned: bool) -> str:
        """The wall time a timestamp's text shows: the UTC wall time of its instant when it has
        a zone (``zoned``), else its own as the engine's microsecond timestamp."""

    @abstractmethod
    def binary_text(self, expression: str) -> str:
        """Bytes as standard base64 in quotes."""

    @abstractmethod
    def list_text(self, expression: str, item_text: Writer, depth: int) -> str:
        """A list as ``[...]``, each item written by ``item_text(item expression)``, nulls as
        ``null``; ``depth`` keeps nested lists' variables apart."""

    def bucket_of(self, lane_a: str) -> str:
        """SQL for a row's bucket from its lane A column: the digest's first byte."""
        return f"({lane_a} >> 56)"

    @abstractmethod
    def lanes(self, line: str) -> tuple[str, str, str]:
        """SQL for a line's digest, and its lanes A and B (bytes 0..8 and 8..16 of ``digest``)."""


class DuckDBDialect(Dialect):
    """DuckDB (1.1 and later)."""

    name = "duckdb"
    # DuckDB writes some floats with a double's digits (512313.625 for 512313.62).
    writes_float32 = False

    def __init__(self, python_lambdas: bool = True):
        #: DuckDB 1.3 brought ``lambda x: ...``; 2.0 refuses the older ``x -> ...``.
        self.python_lambdas = python_lambdas

    def _lambda(self, variable: str, body: str) -> str:
        if self.python_lambdas:
            return f"lambda {variable}: {body}"
        return f"{variable} -> {body}"

    def year_of(self, expression: str) -> str:
        return f"year({expression})"

    def after_year(self, expression: str, kind: str) -> str:
        pattern = "-%m-%d" if kind == "date" else "-%m-%dT%H:%M:%S.%f"
        return f"strftime({expression}, '{pattern}')"

    def wall_time(self, expression: str, zoned: bool) -> str:
        if zoned:
            return f"timezone('UTC', {expression})"
        return f"CAST({expression} AS TIMESTAMP)"  # seconds and milliseconds as microseconds

    def binary_text(self, expression: str) -> str:
        return f"'\"' || base64({expression}) || '\"'"

    def finite_time(self, expression: str, text: str) -> str:
        said = literal(INFINITE_VALUE_OF + expression + ": ")
        refusal = f"error({said} || CAST({expression} AS VARCHAR))"
        return f"(CASE WHEN isinf({expression}) THEN {refusal} ELSE {text} END)"

    def positional_decimal(self, expression: str) -> str:
        # DuckDB drops the zero before the point of a DECIMAL(p,p) (``.06``, ``-.7``).
        shown = self.text(expression)
        return (
            f"CASE WHEN {shown} LIKE '.%' THEN '0' || {shown} "
            f"WHEN {shown} LIKE '-.%' THEN '-0' || substr({shown}, 2) ELSE {shown} END"
        )

    def list_text(self, expression: str, item_text: Writer, depth: int) -> str:
        item = f"item{depth}"
        written = f"coalesce({item_text(item)}, 'null')"
        return (
            f"'[' || array_to_string(list_transform({expression}, "
            f"{self._lambda(item, written)}), ',') || ']'"
        )

    def struct_field(self, expression: str, name: str) -> str:
        """One field of a struct value."""
        return f"struct_extract({expression}, {literal(name)})"

    def map_text(self, expression: str, key_text: Writer, value_text: Writer, depth: int) -> str:
        """A map as a JSON object, entries by ascending key, null values as ``null``."""
        entry = f"entry{depth}"
        member = (
            f"{key_text(f'{entry}.key')} || ':' || coalesce({value_text(f'{entry}.value')}, 'null')"
        )
        return (
            f"'{{' || array_to_string(list_transform(list_sort(map_entries({expression})), "
            f"{self._lambda(entry, member)}), ',') || '}}'"
        )

    def lanes(self, line: str) -> tuple[str, str, str]:
        digest = f"sha256({line})"
        lane_a = "CAST('0x' || substr(digest, 1, 16) AS UBIGINT)"
        lane_b = "CAST('0x' || substr(digest, 17, 16) AS UBIGINT)"
        return digest, lane_a, lane_b


class PostgresDialect(Dialect):
    """PostgreSQL (12 and later: shortest round-trip float text)."""

    name = "postgresql"
    lowest_character = 1
    fence = " OFFSET 0"

    def text(self, expression: str) -> str:
        return f"CAST({expression} AS TEXT)"

    def streamed(self, expression: str, arrow_type: object) -> str:
        # Text types the drivers export otherwise (a uuid as 16 bytes, jsonb as its own type)
        # are streamed as their text, which is what rows-v1 writes of them.
        import pyarrow as pa

        is_text = isinstance(arrow_type, pa.DataType) and pa.types.is_string(arrow_type)
        return f"CAST({expression} AS TEXT)" if is_text else expression

    def has_special_characters(self, expression: str) -> str:
        return f"({expression} ~ '[\\x01-\\x1f\"\\\\]')"

    def plain_float_text(self, x: str, digits: str, power: str) -> str:
        # Laid out from the digits: a real is written with an exponent from 1e6 on, and the
        # digits may be one shorter than PostgreSQL's (below).
        return self._positional_float_text(x, digits, power)

    def float_text(self, expression: str, bits: int) -> str:
        # PostgreSQL computes a repeated expression each time it appears, so the steps are
        # nested subqueries, each computed once (OFFSET 0 keeps the planner from merging
        # them back). PostgreSQL's Ryu leaves out the ends of a value's rounding interval:
        # where an end is a decimal one digit shorter (2.123533244770167E16, which reads back
        # by ties to even) it writes a digit more than the shortest. The digits one shorter
        # are tried, and kept when they read back as the same value.
        width = "DOUBLE PRECISION" if bits == 64 else "REAL"
        # Never near the largest value: the shorter digits could round past it (an error).
        largest = "1e308" if bits == 64 else "3.4e38"
        finite = "v <> 0 AND abs(v) < 'Infinity'"
        digits, power = self._parsed("shown")
        steps = [
            f"SELECT {expression} AS v",
            f"SELECT v, CASE WHEN {finite} THEN CAST(abs(v) AS TEXT) END AS shown",
            f"SELECT v, {digits} AS d0, {power} AS p0",
            "SELECT v, d0, p0, CASE WHEN length(d0) > 1 AND abs(v) < "
            f"{largest} THEN CAST(round(CAST(d0 AS NUMERIC) / 10) AS TEXT) END AS shorter",
            "SELECT v, d0, p0, shorter, p0 + length(shorter) - length(d0) + 1 AS shorter_power",
            "SELECT v, d0, p0, shorter, shorter_power, CASE WHEN shorter IS NOT NULL THEN "
            "CAST(shorter || 'e' || CAST(shorter_power - length(shorter) + 1 AS TEXT) AS "
            f"{width}) = abs(v) ELSE false END AS reads_back",
            "SELECT v, CASE WHEN reads_back THEN rtrim(shorter, '0') ELSE d0 END AS digits, "
            "CASE WHEN reads_back THEN shorter_power ELSE p0 END AS power",
        ]
        nested = steps[0]
        for depth, step in enumerate(steps[1:]):
            nested = f"{step} FROM ({nested}) AS step{depth}{self.fence}"
        layout = self._float_layout("v", bits, "digits", "power")
        return f"(SELECT {layout} FROM ({nested}) AS parts)"

    def year_of(self, expression: str) -> str:
        # PostgreSQL counts 1 BC as year -1; java.time (and rows-v1) as year 0.
        year = f"CAST(extract(year FROM {expression}) AS INTEGER)"
        return f"(CASE WHEN {year} < 0 THEN {year} + 1 ELSE {year} END)"

    def after_year(self, expression: str, kind: str) -> str:
        pattern = "-MM-DD" if kind == "date" else '-MM-DD"T"HH24:MI:SS.US'
        return f"to_char({expression}, '{pattern}')"

    def wall_time(self, expression: str, zoned: bool) -> str:
        return f"({expression} AT TIME ZONE 'UTC')" if zoned else expression

    def binary_text(self, expression: str) -> str:
        return f"'\"' || translate(encode({expression}, 'base64'), chr(10), '') || '\"'"

    def list_text(self, expression: str, item_text: Writer, depth: int) -> str:
        alias = f"items{depth}"
        written = f"coalesce({item_text(f'{alias}.item')}, 'null')"
        items = (
            f"(SELECT string_agg({written}, ',' ORDER BY {alias}.place) "
            f"FROM unnest({expression}) WITH ORDINALITY AS {alias}(item, place))"
        )
        listed = f"'[' || coalesce({items}, '') || ']'"
        return f"CASE WHEN {expression} IS NULL THEN NULL ELSE {listed} END"

    def lanes(self, line: str) -> tuple[str, str, str]:
        digest = f"sha256(convert_to({line}, 'UTF8'))"
        return digest, _signed_lane(1), _signed_lane(9)

    def bucket_of(self, lane_a: str) -> str:
        # Lane A is signed here (BIGINT): the shift keeps the sign, the mask drops it.
        return f"(({lane_a} >> 56) & 255)"


def _signed_lane(first_byte: int) -> str:
    """Eight digest bytes from ``first_byte`` (1-based) as a signed BIGINT: PostgreSQL has no
    unsigned type, and sums of the signed values agree with the unsigned ones modulo 2**64."""
    part = f"substring(digest FROM {first_byte} FOR 8)"
    return f"CAST(CAST('x' || encode({part}, 'hex') AS BIT(64)) AS BIGINT)"
