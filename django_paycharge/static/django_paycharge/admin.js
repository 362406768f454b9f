// django-paycharge admin: label each cell of the app's tables with its column's name.
// On a phone admin.css stacks the rows and hides the header row; the labels
// (data-label, shown by CSS) tell which value is which. Without JavaScript the
// rows are stacked unlabelled, and nothing else changes.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("#result_list, .inline-group .tabular table")) {
    const labels = Array.from(table.querySelectorAll("thead th"), (th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      Array.from(row.children).forEach((cell, i) => {
        if (labels[i]) cell.dataset.label = labels[i];
      });
    }
  }
});
