"""Write the example shop's CSV files: run once, commit the output (fixed seed, stdlib only).

python example_project/seed_data/generate.py [FOLDER]   (default: beside this script)
"""

from __future__ import annotations

import csv
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

SEED = 20240101
HERE = Path(__file__).resolve().parent
COUNTRIES = ["ZA", "BR", "KE", "NG", "PT", "DE", "IN", "US"]
CATEGORIES = {
    "books": (4.5, 39.0),
    "coffee": (3.0, 18.0),
    "garden": (6.0, 120.0),
    "kitchen": (2.5, 85.0),
    "toys": (5.0, 60.0),
}
STATUSES = ["delivered"] * 8 + ["shipped", "cancelled"]
FIRST_NAMES = ["Amara", "Bongani", "Chen", "Diego", "Esi", "Farah", "Goran", "Hana", "Ines", "Jabu"]
LAST_NAMES = ["Mokoena", "Silva", "Otieno", "Adeyemi", "Costa", "Weber", "Iyer", "Smith", "Naidoo"]


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    """Write one CSV file with a header line and Unix line endings."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def customers(rng: random.Random, count: int) -> list[list[object]]:
    """Customers with a country and a sign-up date in 2023."""
    start = datetime(2023, 1, 1)
    return [
        [
            customer_id,
            f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            rng.choice(COUNTRIES),
            (start + timedelta(days=rng.randrange(365))).date().isoformat(),
        ]
        for customer_id in range(1, count + 1)
    ]


def products(rng: random.Random, per_category: int) -> list[list[object]]:
    """Products with a category and a unit price in cents-precise decimal text."""
    rows: list[list[object]] = []
    for category, (low, high) in CATEGORIES.items():
        for number in range(1, per_category + 1):
            price = round(rng.uniform(low, high), 2)
            rows.append([len(rows) + 1, f"{category}-{number:02d}", category, f"{price:.2f}"])
    return rows


def orders(rng: random.Random, count: int, n_customers: int, n_products: int) -> list[list[object]]:
    """Orders spread over January 2024, timestamps in UTC to the second."""
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    seconds_in_month = 31 * 24 * 3600
    instants = sorted(
        start + timedelta(seconds=rng.randrange(seconds_in_month)) for _ in range(count)
    )
    return [
        [
            order_id,
            rng.randint(1, n_customers),
            rng.randint(1, n_products),
            rng.choice([1, 1, 1, 2, 2, 3, 5]),
            instant.strftime("%Y-%m-%dT%H:%M:%SZ"),
            rng.choice(STATUSES),
        ]
        for order_id, instant in enumerate(instants, start=1)
    ]


def write_seed_data(folder: Path) -> None:
    """Generate customers.csv, products.csv and orders.csv into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    customer_rows = customers(rng, 600)
    product_rows = products(rng, 8)
    order_rows = orders(rng, 4000, len(customer_rows), len(product_rows))
    write_csv(
        folder / "customers.csv", ["customer_id", "name", "country", "signup_date"], customer_rows
    )
    write_csv(
        folder / "products.csv", ["product_id", "name", "category", "unit_price"], product_rows
    )
    write_csv(
        folder / "orders.csv",
        ["order_id", "customer_id", "product_id", "quantity", "ordered_at", "status"],
        order_rows,
    )


if __name__ == "__main__":
    write_seed_data(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
