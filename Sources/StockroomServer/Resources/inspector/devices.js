// The device cards: each device's navigation, its open sheet or alert (with its buttons), its
// draft against the item, and the draft form for a token that may write.
"use strict";

(() => {
  const { $, el, state, statusText, colorNode, timeText, itemName, same, say, send, flash, updateCounts, presenceBadge } = Inspector;

  // ---- device cards ----------------------------------------------------------------------

  // The ids a card's labels and headings refer to. Never built from the clientID: a clientID is
  // any [A-Za-z0-9._-]{1,64}, so `device-${clientID}` or `${clientID}-name` could be one of the
  // page's own ids (a device named "list" gave its heading the id of the devices' datalist, one
  // named "create" gave its draft's fields the Create form's ids). Each drawing of a card takes a
  // number of its own instead; the page's own ids (index.html) never start with "card".
  let cardSerial = 0;
  const cardIDs = () => {
    const serial = ++cardSerial;
    return (part) => `card${serial}-${part}`;
  };

  function destinationParts(destination) {
    if (!destination) return { kind: "none", itemID: null, draft: null };
    const kind = Object.keys(destination)[0];
    const value = destination[kind] || {};
    return {
      kind, itemID: value.itemID || null, draft: value.draft || null, baseVersion: value.baseVersion,
      alert: value.alert || null, current: value.current,
    };
  }

  // The fields of a draft beside those of an item, the rows that differ marked. `item` null: the
  // second column says `missing` and, unless `compare` is false, every row counts as differing.
  function compareTable(draft, item, { caption, columns = ["Draft", "Item"], missing = "—", compare = true, className = "draft" }) {
    const table = el("table", { class: className });
    table.append(el("caption", { class: "muted", text: caption }));
    table.append(el("tr", {}, el("th", { scope: "col", text: "Field" }), el("th", { scope: "col", text: columns[0] }), el("th", { scope: "col", text: columns[1] })));
    const fields = [
      ["Name", draft.name, item && item.name, (v) => document.createTextNode(v === "" ? "(empty)" : v)],
      ["Colour", draft.color, item && item.color, colorNode],
      ["Status", draft.status, item && item.status, (v) => document.createTextNode(statusText(v))],
    ];
    for (const [label, draftValue, itemValue, show] of fields) {
      const differs = compare && (!item || !same(draftValue, itemValue));
      table.append(el("tr", { class: differs ? "differs" : "", "data-field": label.toLowerCase() },
        el("th", { scope: "row", text: label }),
        el("td", {}, show(draftValue)),
        el("td", {}, item ? show(itemValue) : document.createTextNode(missing))));
    }
    return table;
  }

  function draftTable(kind, itemID, draft) {
    const item = itemID ? state.items.get(itemID) : null;
    return compareTable(draft, kind === "add" ? null : item,
      { caption: item ? `Draft against ${item.name} v${item.version}` : "Draft (new item)" });
  }

  // A conflict keeps the draft beside `current`, the item as it was when the alert opened (null:
  // deleted), which is what "keep mine" writes over.
  function conflictTable(draft, current, baseVersion) {
    const now = current ? state.items.get(current.id) : null;
    const caption = current
      ? `Your draft (edited from v${baseVersion}) beside the item at v${current.version}` +
        (now && now.version !== current.version ? ` (v${now.version} now)` : "")
      : `Your draft (edited from v${baseVersion}); the item was deleted`;
    return compareTable(draft, current,
      { caption, columns: ["Your draft", "Current"], missing: "deleted", compare: !!current, className: "draft conflict" });
  }

  // An alert the server rendered, with its buttons: each sends its own command for this device.
  function alertBox(clientID, kind, alert, details, id) {
    const titleID = id("alert-title");
    const box = el("section", { class: "alert", "data-kind": kind, "aria-labelledby": titleID });
    box.append(el("p", { class: "alert-title", id: titleID, text: alert.title ? alert.title.text : "" }));
    if (alert.message) box.append(el("p", { class: "alert-message", text: alert.message.text }));
    if (details) box.append(details);
    const error = el("p", { class: "error alert-error", role: "alert" });
    const buttons = el("div", { class: "alert-buttons" });
    for (const choice of alert.buttons || []) {
      const role = choice.role || "none";
      const className = role === "destructive" ? "danger" : role === "cancel" ? "secondary" : "";
      const node = el("button", { type: "button", class: className, "data-role": role, "data-command": JSON.stringify(choice.command),
        text: choice.label ? choice.label.text : "?" });
      node.addEventListener("click", async () => {
        for (const each of buttons.children) each.disabled = true;
        error.textContent = "";
        const failure = await send(clientID, choice.command);
        // On success the device's change redraws the card; on failure nothing changed: say why here too.
        if (failure) {
          error.textContent = failure;
          for (const each of buttons.children) each.disabled = false;
        }
      });
      buttons.append(node);
    }
    box.append(buttons, error);
    return box;
  }

  function urlField(url) {
    const code = el("code", { class: "url", "data-field": "url", text: url });
    const copy = el("button", { type: "button", class: "secondary copy", text: "Copy", "aria-label": `Copy the URL ${url}` });
    copy.addEventListener("click", async () => {
      if (navigator.clipboard && navigator.clipboard.writeText) {
        try {
          await navigator.clipboard.writeText(url);
          return say(`Copied ${url}`);
        } catch {
          // Not allowed here (no focus, or no permission): select it instead.
        }
      }
      const range = document.createRange();
      range.selectNodeContents(code);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      say("The URL is selected: press Ctrl+C (⌘C on a Mac) to copy it.");
    });
    return el("dd", { class: "url-field" }, code, " ", copy);
  }

  function checkpointsField(checkpoints) {
    const names = Object.keys(checkpoints || {}).sort();
    if (!names.length) return el("dd", { "data-field": "checkpoints", text: "none" });
    const list = el("ul", { class: "checkpoints" });
    for (const name of names) {
      const checkpoint = checkpoints[name] || {};
      const entry = el("li", { "data-checkpoint": name },
        el("code", { class: "name", text: name }), ` → depth ${checkpoint.depth}`);
      if (checkpoint.value !== null && checkpoint.value !== undefined) {
        const json = JSON.stringify(checkpoint.value);
        const shown = json.length > 120 ? json.slice(0, 119) + "…" : json;
        entry.append(", value ", el("code", { class: "value", title: json, text: shown }));
      }
      list.append(entry);
    }
    return el("dd", { "data-field": "checkpoints" }, list);
  }

  function renderCard(navigation) {
    const { kind, itemID, draft, baseVersion, alert, current } = destinationParts(navigation.destination);
    const id = cardIDs();
    const card = el("article", { class: "device", "data-client": navigation.clientID, "aria-labelledby": id("title") });
    card.append(el("h3", { id: id("title") },
      el("span", { class: "who" }, el("span", { text: navigation.clientID }), " ", presenceBadge(navigation.clientID)),
      el("span", { class: "muted", text: `v${navigation.version}` })));
    const path = navigation.path.length
      ? navigation.path.map((route) => route.item ? itemName(route.item.id) : JSON.stringify(route)).join(" › ")
      : "(root)";
    let open = "nothing";
    if (kind === "add") open = "Add sheet";
    else if (kind === "edit") open = `Edit ${itemName(itemID)} (from v${baseVersion})`;
    else if (kind === "duplicate") open = `Duplicate of ${itemName(itemID)}`;
    else if (kind === "deleteAlert") open = `Delete alert for ${itemName(itemID)}`;
    else if (kind === "conflict") open = `Conflict alert for ${current ? current.name : itemName(itemID)} (edited from v${baseVersion})`;
    else if (kind !== "none") open = kind;
    const facts = el("dl", {},
      el("dt", { text: "Tab" }), el("dd", { "data-field": "tab", text: navigation.tab }),
      el("dt", { text: "Path" }), el("dd", { "data-field": "path", text: path }),
      el("dt", { text: "Open" }), el("dd", { "data-field": "destination", text: open }),
      el("dt", { text: "Changed" }), el("dd", {}, el("time", { datetime: navigation.updatedAt || "", text: timeText(navigation.updatedAt) })));
    if (typeof navigation.url === "string") facts.append(el("dt", { text: "URL" }), urlField(navigation.url));
    if (navigation.checkpoints !== undefined) facts.append(el("dt", { text: "Checkpoints" }), checkpointsField(navigation.checkpoints));
    card.append(facts);
    // An alert shows with its buttons whatever the token's role: a viewer's click that would write
    // an item is refused by the server (403), and the page says so.
    if (alert) card.append(alertBox(navigation.clientID, kind, alert, kind === "conflict" && draft ? conflictTable(draft, current, baseVersion) : null, id));
    const sheet = kind === "add" || kind === "edit" || kind === "duplicate";
    if (sheet && draft) card.append(draftTable(kind, itemID, draft));
    if (state.canWrite && sheet && draft) card.append(cardActions(navigation.clientID, draft, id));
    return card;
  }

  // The draft form reads its fields through the references below, never by id.
  function cardActions(clientID, draft, id) {
    const box = el("div", { class: "card-actions" });
    const command = (name, body = {}) => () => send(clientID, { [name]: body });
    const form = el("form", { class: "draft-form" });
    const name = el("input", { id: id("name"), class: "draft-name", value: draft.name, maxlength: "200" });
    const stock = el("select", { id: id("stock"), class: "draft-stock" },
      el("option", { value: "inStock", text: "In stock" }), el("option", { value: "outOfStock", text: "Out of stock" }));
    stock.value = draft.status && draft.status.outOfStock ? "outOfStock" : "inStock";
    const quantity = el("input", { id: id("quantity"), class: "draft-quantity", type: "number", min: "0", value: String(draft.status && draft.status.inStock ? draft.status.inStock.quantity : 0) });
    const backOrder = el("input", { id: id("backorder"), class: "draft-backorder", type: "checkbox" });
    backOrder.checked = !!(draft.status && draft.status.outOfStock && draft.status.outOfStock.isOnBackOrder);
    // A quantity belongs to "in stock" only, back order to "out of stock" only: each shows with its status.
    const quantityField = el("div", { "data-field": "quantity" }, el("label", { for: id("quantity"), text: "Quantity" }), quantity);
    const backOrderField = el("div", { "data-field": "backorder" }, el("label", { for: id("backorder") }, backOrder, " On back order"));
    const showStatusFields = () => {
      quantityField.hidden = stock.value !== "inStock";
      backOrderField.hidden = stock.value === "inStock";
    };
    stock.addEventListener("change", showStatusFields);
    showStatusFields();
    form.append(
      el("label", { for: id("name"), text: "Draft name" }), name,
      el("label", { for: id("stock"), text: "Draft status" }), stock,
      quantityField,
      backOrderField,
      el("button", { type: "submit", class: "secondary", text: "Update draft" }));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const status = stock.value === "inStock"
        ? { inStock: { quantity: Number(quantity.value) } }
        : { outOfStock: { isOnBackOrder: backOrder.checked } };
      send(clientID, { updateDraft: { draft: { name: name.value, color: draft.color, status } } });
    });
    box.append(form);
    // A stale save opens the conflict alert on the device rather than failing with 409.
    box.append(button("Save", command("save", { onConflict: "alert" })), " ", button("Cancel", command("cancel"), "secondary"));
    return box;
  }

  function button(text, onClick, className = "") {
    const node = el("button", { type: "button", class: className, text });
    node.addEventListener("click", onClick);
    return node;
  }

  function upsertDevice(navigation, highlight = true) {
    const known = state.devices.has(navigation.clientID);
    state.devices.set(navigation.clientID, navigation);
    const card = renderCard(navigation);
    const old = state.cards.get(navigation.clientID);
    if (old) old.replaceWith(card); else $("devices").prepend(card);
    state.cards.set(navigation.clientID, card);
    if (highlight) flash(card);
    updateCounts();
    // The choices are the clientIDs: a device already known changes none of them.
    if (!known) refreshDeviceChoices();
  }

  function renderDevices() {
    state.cards.clear();
    const fragment = document.createDocumentFragment();
    for (const navigation of state.devices.values()) {
      const card = renderCard(navigation);
      state.cards.set(navigation.clientID, card);
      fragment.append(card);
    }
    $("devices").replaceChildren(fragment);
    updateCounts();
    refreshDeviceChoices();
  }

  // Cards name items and compare drafts with them: redraw the cards that point at a changed item.
  function refreshCardsFor(itemID) {
    for (const navigation of state.devices.values()) {
      const { itemID: open } = destinationParts(navigation.destination);
      const onPath = navigation.path.some((route) => route.item && route.item.id === itemID);
      if (open === itemID || onPath) upsertDevice(navigation, false);
    }
  }

  function refreshDeviceChoices() {
    const list = $("device-list");
    list.replaceChildren(...Array.from(state.devices.keys(), (id) => el("option", { value: id })));
  }

  // A device removed by the server (unseen for limits.deviceRetentionDays): its card goes.
  function removeDevice(clientID) {
    state.devices.delete(clientID);
    state.presence.delete(clientID);
    const card = state.cards.get(clientID);
    if (card) card.remove();
    state.cards.delete(clientID);
    updateCounts();
    refreshDeviceChoices();
  }

  Object.assign(Inspector, { destinationParts, upsertDevice, renderDevices, refreshCardsFor, removeDevice });
})();
