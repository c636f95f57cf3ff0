// The items table: drawn once from the snapshot, then one row at a time as changes arrive.
"use strict";

(() => {
  const { ITEM_COLUMNS, $, el, state, statusText, colorNode, timeText } = Inspector;

  // ---- items table -----------------------------------------------------------------------

  function fillRow(row, item) {
    const cells = [
      document.createTextNode(item.name),
      colorNode(item.color),
      document.createTextNode(statusText(item.status)),
      document.createTextNode(String(item.version)),
      el("time", { datetime: item.updatedAt, text: timeText(item.updatedAt) }),
      el("span", { class: "id", title: item.id, text: item.id.slice(0, 8) }),
    ];
    if (row.cells.length === 0) {
      // The roles keep the table a table for assistive technology where the narrow layout
      // (inspector.css) displays its rows as blocks; data-label names each cell there.
      cells.forEach((cell, index) => row.append(el(index === 0 ? "th" : "td",
        index === 0 ? { scope: "row", role: "rowheader" } : { role: "cell", "data-label": ITEM_COLUMNS[index] }, cell)));
    } else {
      cells.forEach((cell, index) => row.cells[index].replaceChildren(cell));
    }
  }

  function renderItems() {
    const body = $("item-rows");
    const fragment = document.createDocumentFragment();
    state.rows.clear();
    for (const item of state.items.values()) {
      const row = el("tr", { "data-id": item.id, role: "row" });
      fillRow(row, item);
      state.rows.set(item.id, row);
      fragment.append(row);
    }
    body.replaceChildren(fragment);
    updateCounts();
    refreshItemChoices();
  }

  function upsertItem(item) {
    state.items.set(item.id, item);
    let row = state.rows.get(item.id);
    if (row) {
      fillRow(row, item);
    } else {
      row = el("tr", { "data-id": item.id, role: "row" });
      fillRow(row, item);
      state.rows.set(item.id, row);
      $("item-rows").append(row);
    }
    flash(row);
    updateCounts();
    refreshItemChoices();
  }

  function deleteItem(id) {
    state.items.delete(id);
    const row = state.rows.get(id);
    if (row) row.remove();
    state.rows.delete(id);
    updateCounts();
    refreshItemChoices();
  }

  function flash(node) {
    node.classList.remove("flash");
    void node.offsetWidth;
    node.classList.add("flash");
  }

  function updateCounts() {
    $("item-count").textContent = `(${state.items.size})`;
    $("device-count").textContent = `(${state.devices.size})`;
    $("no-devices").hidden = state.devices.size > 0;
  }

  function refreshItemChoices() {
    if (!state.canWrite) return;
    const select = $("open-item");
    const chosen = select.value;
    const options = document.createDocumentFragment();
    for (const item of state.items.values()) options.append(el("option", { value: item.id, text: item.name }));
    select.replaceChildren(options);
    if (state.items.has(chosen)) select.value = chosen;
  }

  Object.assign(Inspector, { renderItems, upsertItem, deleteItem, flash, updateCounts });
})();
