"""Values whose canonical text is easy to get wrong: shared by the golden vectors and the tests."""

from __future__ import annotations

import datetime as dt
import math

#: NaN and null (two different things under rows-v1), both zeros and both infinities.
MISSING_AND_SPECIAL_DOUBLES = (math.nan, None, 0.0, -0.0, math.inf, -math.inf)

#: Where Java's Double.toString switches between plain and scientific notation (1e-3 and 1e7),
#: each followed by the double just below it.
NOTATION_BOUNDARIES = (1e-3, math.nextafter(1e-3, 0.0), 1e7, math.nextafter(1e7, 0.0))

#: The first day rows-v1 writes, the first Gregorian day, the Unix epoch and the last day.
DATE_EDGES = (dt.date(1, 1, 1), dt.date(1582, 10, 15), dt.date(1970, 1, 1), dt.date(9999, 12, 31))
