"""Settings → Prices: dollars per million tokens per model, for the session's cost."""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from app.core.config import Settings
from app.ui.settings.tab import SettingsTab

_PRICE_FIELDS = ("input_per_mtok", "cached_input_per_mtok", "output_per_mtok")


class PricesTab(SettingsTab):
    """A table of models and their prices; rows can be added and removed."""

    title: ClassVar[str] = "Prices"

    def __init__(self, s: Settings) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        table = QTableWidget(0, 4)
        table.setHorizontalHeaderLabels(["Model", "Input $/Mtok", "Cached $/Mtok", "Output $/Mtok"])
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        table.verticalHeader().setVisible(False)
        for model, price in s.prices.items():
            self._add_row(table, model, price.input_per_mtok, price.cached_input_per_mtok,
                          price.output_per_mtok)
        add = QPushButton("Add")
        add.clicked.connect(lambda: self._add_row(table, "", 0.0, 0.0, 0.0))
        remove = QPushButton("Remove")
        remove.clicked.connect(lambda: table.removeRow(table.currentRow()))
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(add)
        row.addWidget(remove)
        layout.addWidget(table)
        layout.addLayout(row)
        self.prices = table

    def collect(self, into: dict[str, Any], errors: list[str]) -> None:
        out: dict[str, dict[str, float]] = {}
        for r in range(self.prices.rowCount()):
            item = self.prices.item(r, 0)
            model = item.text().strip() if item else ""
            if not model:
                continue
            row: dict[str, float] = {}
            for c, name in enumerate(_PRICE_FIELDS, start=1):
                cell = self.prices.item(r, c)
                try:
                    row[name] = float(cell.text()) if cell and cell.text().strip() else 0.0
                except ValueError:
                    errors.append(f"Prices, {model}: {cell.text() if cell else ''!r} is not a number")
                    row[name] = 0.0
            out[model] = row
        into["prices"] = out

    @staticmethod
    def _add_row(table: QTableWidget, model: str, *values: float) -> None:
        r = table.rowCount()
        table.insertRow(r)
        table.setItem(r, 0, QTableWidgetItem(model))
        for c, v in enumerate(values, start=1):
            table.setItem(r, c, QTableWidgetItem(f"{v:g}"))
