// The items table: drawn once from the snapshot, then one row at a time as changes arrive. A
// change costs the same however many items the table holds: its row, its option among the item
// choices, the counts; nothing that reads or rebuilds the whole table or list.
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
    renderItemChoices();
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
    upsertItemChoice(item);
  }

  function deleteItem(id) {
    state.items.delete(id);
    const row = state.rows.get(id);
    if (row) row.remove();
    state.rows.delete(id);
    updateCounts();
    deleteItemChoice(id);
  }

  // Highlights a row or card that changed, fading out. With the Web Animations API: a new flash
  // on a node that is still flashing replaces the running one (the browser drops the one it
  // covers), and nothing reads the layout, which restarting a CSS animation needs.
  const FLASH_KEYFRAMES = [{ backgroundColor: "var(--flash)" }, { backgroundColor: "transparent" }];
  const FLASH_TIMING = { duration: 1200, easing: "ease-out" };
  function flash(node) {
    node.animate(FLASH_KEYFRAMES, FLASH_TIMING);
  }

  function updateCounts() {
    $("item-count").textContent = `(${state.items.size})`;
    $("device-count").textContent = `(${state.devices.size})`;
    $("no-devices").hidden = state.devices.size > 0;
  }

  // The Open form's item choices, in the table's order: drawn with the table, then one option at
  // a time (state.options, id -> <option>). A viewer has no Open form: none are drawn.
  function renderItemChoices() {
    state.options.clear();
    if (!state.canWrite) return;
    const select = $("open-item");
    const chosen = select.value;
    const options = document.createDocumentFragment();
    for (const item of state.items.values()) {
      const option = el("option", { value: item.id, text: item.name });
      state.options.set(item.id, option);
      options.append(option);
    }
    select.replaceChildren(options);
    if (state.items.has(chosen)) select.value = chosen;
  }

  function upsertItemChoice(item) {
    if (!state.canWrite) return;
    const option = state.options.get(item.id);
    if (option) {
      if (option.textContent !== item.name) option.textContent = item.name;
      return;
    }
    const added = el("option", { value: item.id, text: item.name });
    state.options.set(item.id, added);
    $("open-item").append(added);
  }

  function deleteItemChoice(id) {
    const option = state.options.get(id);
    if (option) option.remove();
    state.options.delete(id);
  }

  Object.assign(Inspector, { renderItems, upsertItem, deleteItem, flash, updateCounts });
})();
