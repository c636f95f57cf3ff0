// Stockroom inspector: a client of the public API like any other. It reads a snapshot and the
// changes just before it (for the Feed panel), then follows the change feed over Server-Sent
// Events from the snapshot's cursor, and applies each change to the one row or card it touches.
// Each device's card says whether it is open now or when it was last seen (its presence).
// Plain JavaScript, no framework, nothing fetched from anywhere but this server.
"use strict";

(() => {
  const TOKEN_KEY = "stockroom.inspector.token";
  const FEED_LIMIT = 200;
  const RECENT_REQUESTS = 50;  // at most this many GET /v1/changes to fill the Feed panel on opening
  const ITEM_COLUMNS = ["Name", "Colour", "Status", "Version", "Last change", "ID"];  // as in the table's head
  const TOPICS = "items,navigation,presence";  // what the page follows (the feed's default leaves presence out)
  const PRESENCE_REREAD_MS = 2000;  // after a navigation change: the server counts a command as seen within about a second
  const PRESENCE_CLOCK_MS = 30000;  // how often "last seen 5 min ago" is worked out again

  const $ = (id) => document.getElementById(id);
  const el = (tag, props = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  };

  const state = {
    token: null,
    canWrite: false,
    items: new Map(),      // id -> Item
    rows: new Map(),       // id -> <tr>
    devices: new Map(),    // clientID -> Navigation
    cards: new Map(),      // clientID -> card element
    presence: new Map(),   // clientID -> { online, lastSeenAt } (a device with no entry: not known yet)
    presenceTimer: null,   // a re-read of presence is due (see presenceSoon)
    presenceAgain: false,  // a navigation change arrived after it was scheduled
    cursor: null,
    source: null,
    generation: 0,         // bumps on every (re)start, so stale callbacks do nothing
    retry: null,
  };

  // ---- API -------------------------------------------------------------------------------

  async function api(method, path, body) {
    const headers = { Authorization: `Bearer ${state.token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET") headers["Idempotency-Key"] = randomKey();
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
    let json = null;
    const text = await response.text();
    if (text) { try { json = JSON.parse(text); } catch { json = null; } }
    return { status: response.status, json };
  }

  function randomKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return "inspector-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  const errorText = (result) => result.json && result.json.error
    ? `${result.status} ${result.json.error.code}: ${result.json.error.message}`
    : `HTTP ${result.status}`;

  // ---- formatting ------------------------------------------------------------------------

  const statusText = (status) => {
    if (!status) return "—";
    if (status.inStock) return `In stock: ${status.inStock.quantity}`;
    if (status.outOfStock) return status.outOfStock.isOnBackOrder ? "Out of stock, on back order" : "Out of stock";
    return JSON.stringify(status);
  };
  const colorNode = (color) => {
    if (!color) return document.createTextNode("—");
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.backgroundColor = `rgb(${Math.round(color.red * 255)}, ${Math.round(color.green * 255)}, ${Math.round(color.blue * 255)})`;
    return el("span", {}, swatch, color.name);
  };
  const timeText = (iso) => iso ? new Date(iso).toLocaleString() : "—";
  // "5 min ago", "3 days ago": how long before `now` the server's timestamp `iso` is.
  const ago = (iso, now = Date.now()) => {
    const minutes = Math.floor(Math.max(0, now - Date.parse(iso)) / 60000);
    if (minutes < 1) return "just now";
    if (minutes < 60) return `${minutes} min ago`;
    const hours = Math.floor(minutes / 60);
    if (hours < 24) return hours === 1 ? "1 hour ago" : `${hours} hours ago`;
    const days = Math.floor(hours / 24);
    return days === 1 ? "1 day ago" : `${days} days ago`;
  };
  const later = (a, b) => !a ? (b || null) : !b ? a : Date.parse(b) > Date.parse(a) ? b : a;
  const itemName = (id) => (state.items.get(id) || {}).name || `deleted item ${String(id).slice(0, 8)}`;
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  // ---- connection state and messages ------------------------------------------------------

  function setConnection(stateName, text) {
    const node = $("connection");
    node.dataset.state = stateName;
    node.textContent = text;
  }

  function say(text, isError = false) {
    const node = $("message");
    node.textContent = text;
    node.classList.toggle("error", isError);
  }

  function showBanner(text) {
    $("banner-text").textContent = text;
    $("banner").hidden = false;
  }

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

  // ---- device cards ----------------------------------------------------------------------

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
  function alertBox(clientID, kind, alert, details) {
    const titleID = `alert-title-${clientID}`;
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
    const card = el("article", { class: "device", "data-client": navigation.clientID, "aria-labelledby": `device-${navigation.clientID}` });
    card.append(el("h3", { id: `device-${navigation.clientID}` },
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
    if (alert) card.append(alertBox(navigation.clientID, kind, alert, kind === "conflict" && draft ? conflictTable(draft, current, baseVersion) : null));
    const sheet = kind === "add" || kind === "edit" || kind === "duplicate";
    if (sheet && draft) card.append(draftTable(kind, itemID, draft));
    if (state.canWrite && sheet && draft) card.append(cardActions(navigation.clientID, draft));
    return card;
  }

  function cardActions(clientID, draft) {
    const box = el("div", { class: "card-actions" });
    const command = (name, body = {}) => () => send(clientID, { [name]: body });
    const form = el("form", { class: "draft-form" });
    const id = (name) => `${clientID}-${name}`;
    const name = el("input", { id: id("name"), value: draft.name, maxlength: "200" });
    const stock = el("select", { id: id("stock") },
      el("option", { value: "inStock", text: "In stock" }), el("option", { value: "outOfStock", text: "Out of stock" }));
    stock.value = draft.status && draft.status.outOfStock ? "outOfStock" : "inStock";
    const quantity = el("input", { id: id("quantity"), type: "number", min: "0", value: String(draft.status && draft.status.inStock ? draft.status.inStock.quantity : 0) });
    const backOrder = el("input", { id: id("backorder"), type: "checkbox" });
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
    state.devices.set(navigation.clientID, navigation);
    const card = renderCard(navigation);
    const old = state.cards.get(navigation.clientID);
    if (old) old.replaceWith(card); else $("devices").prepend(card);
    state.cards.set(navigation.clientID, card);
    if (highlight) flash(card);
    updateCounts();
    refreshDeviceChoices();
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

  // ---- presence --------------------------------------------------------------------------

  // "open now" while a feed of the device is open, else when it was last seen; empty until known.
  function presenceBadge(clientID) {
    const badge = el("span", { class: "presence", "data-field": "presence" });
    fillPresence(badge, state.presence.get(clientID));
    return badge;
  }

  function fillPresence(badge, presence, now = Date.now()) {
    badge.dataset.online = presence ? String(presence.online) : "unknown";
    badge.dataset.lastSeen = presence && presence.lastSeenAt ? presence.lastSeenAt : "";
    let text = "";
    let title = "";
    if (presence) {
      const seen = presence.lastSeenAt ? `${new Date(presence.lastSeenAt).toLocaleString()} (${presence.lastSeenAt})` : "";
      if (presence.online) {
        text = "open now";
        title = seen ? `A feed of this device is open now; last seen ${seen}` : "A feed of this device is open now";
      } else if (presence.lastSeenAt) {
        text = `last seen ${ago(presence.lastSeenAt, now)}`;
        title = `Last seen ${seen}`;
      } else {
        text = "never seen";
        title = "No command or feed request of this device has reached the server";
      }
    }
    badge.textContent = text;
    badge.hidden = !presence;
    if (title) badge.title = title; else badge.removeAttribute("title");
  }

  function showPresence(clientID) {
    const card = state.cards.get(clientID);
    const badge = card && card.querySelector(".presence");
    if (badge) fillPresence(badge, state.presence.get(clientID));
  }

  // Relative times age: work them out again (text only, no redraw).
  function refreshPresenceTimes() {
    const now = Date.now();
    for (const [clientID, card] of state.cards) {
      const badge = card.querySelector(".presence");
      if (badge) fillPresence(badge, state.presence.get(clientID), now);
    }
  }

  // `presence` from a presence change or a navigation read. A device's lastSeenAt only moves
  // forward; `online` is taken when `withOnline` (a presence change, the read on opening) or when
  // the page knows nothing of the device yet: a later read could cross a presence change on its
  // way and undo it, and the changes alone keep `online` right from the read on opening on.
  function mergePresence(presence, withOnline) {
    const known = state.presence.get(presence.clientID);
    state.presence.set(presence.clientID, {
      online: withOnline || !known ? !!presence.online : known.online,
      lastSeenAt: later(known && known.lastSeenAt, presence.lastSeenAt),
    });
    showPresence(presence.clientID);
  }

  // Every device's presence, from GET /v1/users/me/navigation (the snapshot has none). On
  // opening, after the snapshot: the changes after the snapshot's cursor then bring it up to date.
  async function readPresence(generation, opening) {
    let result;
    try {
      result = await api("GET", "/v1/users/me/navigation");
    } catch {
      return;  // the server cannot be reached: the feed's own errors say so
    }
    if (generation !== state.generation || result.status !== 200 || !result.json) return;
    if (opening) state.presence = new Map();
    for (const navigation of result.json.clients || []) {
      mergePresence({ clientID: navigation.clientID, online: navigation.online, lastSeenAt: navigation.lastSeenAt }, opening);
    }
  }

  // A command counts as its device seen, which moves lastSeenAt without a presence change (the
  // device's online state is the same): after a navigation change, read presence again once the
  // server has written it down. At most one read every PRESENCE_REREAD_MS.
  function presenceSoon() {
    if (state.presenceTimer) {
      state.presenceAgain = true;
      return;
    }
    const generation = state.generation;
    state.presenceAgain = false;
    state.presenceTimer = setTimeout(async () => {
      await readPresence(generation, false);
      if (generation !== state.generation) return;
      state.presenceTimer = null;
      if (state.presenceAgain) presenceSoon();
    }, PRESENCE_REREAD_MS);
  }

  // ---- feed log --------------------------------------------------------------------------

  // `nameOf` names a deleted item; by default, from the items the page holds.
  function logChange(change, nameOf = itemName) {
    let what;
    if (change.entity === "item") {
      what = change.op === "delete" || !change.value ? `deleted ${nameOf(change.id)}` : `${change.value.name} v${change.value.version} · ${statusText(change.value.status)}`;
    } else if (change.entity === "presence") {
      const presence = change.value || {};
      what = `${change.id}: ${presence.online ? "open now" : "closed"}`;
    } else {
      const nav = change.value;
      what = nav ? `${change.id}: ${nav.tab}, open ${destinationParts(nav.destination).kind}, v${nav.version}` : `${change.id} removed`;
    }
    // A presence change's origin is its own device: nothing to add.
    const origin = change.entity !== "presence" && change.origin && change.origin.clientID ? ` from ${change.origin.clientID}` : "";
    const entry = el("li", { "data-seq": String(change.seq) },
      el("span", { class: "seq", title: change.cursor, text: `#${change.seq}` }),
      el("span", { class: "topic", text: `${change.entity === "item" ? "items" : change.entity} ${change.op}` }),
      el("span", { class: "what", text: what + origin }));
    const feed = $("feed");
    feed.prepend(entry);
    while (feed.children.length > FEED_LIMIT) feed.lastElementChild.remove();
  }

  // ---- the Feed panel on opening ---------------------------------------------------------

  // Cursors are opaque to clients in general, but the inspector is served by the server it reads,
  // so it knows their format (`c1.<epoch>.<seq>`, written by FeedCursor) and can name a position
  // before the snapshot's. Null for anything else.
  const parseCursor = (cursor) => {
    const match = /^c1\.([0-9A-Fa-f]+)\.(\d+)$/.exec(cursor || "");
    return match ? { epoch: match[1], seq: Number(match[2]) } : null;
  };

  // The changes up to the snapshot's cursor, for the Feed panel. The feed reads forward only, so
  // this walks back from the cursor in windows that double in size, each read forward, until it
  // holds FEED_LIMIT changes this token may see, reaches the oldest entry the log keeps (asked
  // first with since=oldest, so that no window starts where trimming took entries: no 410), or has
  // made RECENT_REQUESTS requests. Returns the changes oldest first, whole windows only so that
  // there is no gap; null when a newer start() took over.
  async function readRecent(generation) {
    const head = parseCursor(state.cursor);
    if (!head) return [];
    const at = (seq) => encodeURIComponent(`c1.${head.epoch}.${seq}`);
    const first = await api("GET", `/v1/changes?since=oldest&limit=1&topics=${TOPICS}`);
    if (generation !== state.generation) return null;
    if (first.status !== 200) return [];
    // Nothing this token may see lies before the oldest visible change the log keeps.
    const floor = first.json.changes.length ? first.json.changes[0].seq - 1 : head.seq;
    let recent = [];      // the changes after `end` up to the snapshot, oldest first
    let end = head.seq;
    let span = FEED_LIMIT;
    let requests = 1;
    while (recent.length < FEED_LIMIT && end > floor) {
      const from = Math.max(floor, end - span);
      const found = [];
      let position = from;
      while (position < end) {
        if (++requests > RECENT_REQUESTS) return recent;
        const result = await api("GET", `/v1/changes?since=${at(position)}&limit=1000&topics=${TOPICS}`);
        if (generation !== state.generation) return null;
        // A 410 here is a trim that ran meanwhile: keep the whole windows read so far.
        if (result.status !== 200) return recent;
        for (const change of result.json.changes) if (change.seq <= end) found.push(change);
        const next = parseCursor(result.json.cursor);
        if (!result.json.hasMore || !next || next.seq <= position) break;
        position = next.seq;
      }
      recent = found.concat(recent);
      end = from;
      span *= 2;
    }
    return recent;
  }

  function showRecent(changes) {
    const names = new Map();   // item names seen in these changes, for the deletes among them
    const nameOf = (id) => names.get(id) || itemName(id);
    const shown = changes.filter((change) => ["item", "navigation", "presence"].includes(change.entity)).slice(-FEED_LIMIT);
    for (const change of shown) {
      if (change.entity === "item" && change.value) names.set(change.id, change.value.name);
      logChange(change, nameOf);
    }
  }

  // ---- applying changes ------------------------------------------------------------------

  function apply(change) {
    if (change.entity === "item") {
      if (change.op === "delete" || !change.value) {
        logChange(change);
        deleteItem(change.id);
      } else {
        upsertItem(change.value);
        logChange(change);
      }
      refreshCardsFor(change.id);
    } else if (change.entity === "navigation") {
      logChange(change);
      if (change.op === "delete" || !change.value) {
        removeDevice(change.id);
      } else {
        upsertDevice(change.value);
        presenceSoon();
      }
    } else if (change.entity === "presence") {
      logChange(change);
      if (change.value) mergePresence(change.value, true);
    }
    setCursor(change.cursor);
  }

  function setCursor(cursor) {
    state.cursor = cursor;
    $("cursor").textContent = cursor;
  }

  // ---- snapshot and live feed ------------------------------------------------------------

  async function start() {
    const generation = ++state.generation;
    stopFeed();
    setConnection("connecting", "Loading snapshot…");
    const snapshot = await api("GET", "/v1/snapshot");
    if (generation !== state.generation) return;
    if (snapshot.status === 401) return signOut("The server refused this token (401). It may be wrong or revoked.");
    if (snapshot.status !== 200) {
      setConnection("failed", `Snapshot failed: ${errorText(snapshot)}`);
      return scheduleRetry(generation);
    }
    state.items = new Map(snapshot.json.items.map((item) => [item.id, item]));
    state.devices = new Map(snapshot.json.navigation.map((navigation) => [navigation.clientID, navigation]));
    setCursor(snapshot.json.cursor);
    renderItems();
    renderDevices();
    performance.mark("stockroom-snapshot-rendered");
    $("feed").replaceChildren();
    setConnection("connecting", "Loading presence…");
    await readPresence(generation, true);
    if (generation !== state.generation) return;
    setConnection("connecting", "Loading recent changes…");
    let recent = [];
    try {
      recent = await readRecent(generation);
    } catch {
      // The server cannot be reached: the feed's own errors say so and retry.
    }
    if (generation !== state.generation) return;
    if (recent) showRecent(recent);
    follow(generation);
  }

  function follow(generation) {
    // No clientID: the inspector is not a device, and does not show as one online.
    const url = `/v1/changes/stream?since=${encodeURIComponent(state.cursor)}&topics=${TOPICS}&access_token=${encodeURIComponent(state.token)}`;
    const source = new EventSource(url);
    state.source = source;
    setConnection("connecting", "Connecting to the feed…");
    source.addEventListener("open", () => {
      if (generation === state.generation) setConnection("live", "Live");
    });
    source.addEventListener("change", (event) => {
      if (generation !== state.generation) return;
      apply(JSON.parse(event.data));
    });
    source.addEventListener("error", (event) => {
      if (generation !== state.generation) return;
      if (event.data) {
        // The server's own `event: error`: the stream ends with a contract error.
        let error = {};
        try { error = JSON.parse(event.data).error || {}; } catch { /* not JSON */ }
        source.close();
        return handleFeedError(generation, error.code, error.message);
      }
      if (source.readyState === EventSource.CONNECTING) {
        setConnection("reconnecting", "Reconnecting…");
        return;
      }
      // The browser gave up (a reconnect got an HTTP error): ask the batch route why.
      source.close();
      diagnose(generation);
    });
  }

  async function diagnose(generation) {
    let result;
    try {
      result = await api("GET", `/v1/changes?since=${encodeURIComponent(state.cursor)}&limit=1`);
    } catch {
      result = { status: 0, json: null };
    }
    if (generation !== state.generation) return;
    // The cursor is still good (the stream failed for another reason): try again in a moment.
    if (result.status === 200) {
      setConnection("reconnecting", "Reconnecting…");
      clearTimeout(state.retry);
      state.retry = setTimeout(() => { if (generation === state.generation) follow(generation); }, 2000);
      return;
    }
    const error = (result.json && result.json.error) || {};
    handleFeedError(generation, error.code || `HTTP ${result.status}`, error.message || "the server cannot be reached");
  }

  function handleFeedError(generation, code, message) {
    if (code === "resyncRequired") {
      showBanner(`The feed cannot continue from this page's cursor (410 resyncRequired: ${message}). A new snapshot was loaded at ${new Date().toLocaleTimeString()}.`);
      setConnection("resyncing", "Resyncing…");
      return start();
    }
    if (code === "unauthorized") return signOut(`The server refused this token (401): ${message}`);
    setConnection("failed", `Feed stopped: ${code}. Retrying…`);
    scheduleRetry(generation);
  }

  function scheduleRetry(generation) {
    clearTimeout(state.retry);
    state.retry = setTimeout(() => { if (generation === state.generation) start(); }, 3000);
  }

  function stopFeed() {
    clearTimeout(state.retry);
    clearTimeout(state.presenceTimer);
    state.presenceTimer = null;
    if (state.source) state.source.close();
    state.source = null;
  }

  // ---- commands and item writes ----------------------------------------------------------

  // Sends one command for a device; returns null when it was applied, else what went wrong (also said).
  async function send(clientID, command) {
    const name = Object.keys(command)[0];
    say(`Sending ${name} to ${clientID}…`);
    let failure;
    try {
      const result = await api("POST", `/v1/clients/${encodeURIComponent(clientID)}/commands`, { command });
      if (result.status === 200) {
        const destination = result.json && result.json.navigation && result.json.navigation.destination;
        if (destination && destination.conflict) say(`${name} on ${clientID}: the item changed or was deleted meanwhile; the conflict alert is open on ${clientID}.`);
        else say(`${name} on ${clientID}: done.`);
        return null;
      }
      failure = `${name} on ${clientID} failed: ${errorText(result)}`;
    } catch (error) {
      failure = `${name} on ${clientID} failed: ${error.message}`;
    }
    say(failure, true);
    return failure;
  }

  async function create(event) {
    event.preventDefault();
    const name = $("create-name").value;
    const quantity = Number($("create-quantity").value);
    try {
      const result = await api("POST", "/v1/items", { name, color: null, status: { inStock: { quantity } } });
      if (result.status === 201) {
        say(`Created ${result.json.name}.`);
        $("create-name").value = "";
      } else {
        say(`Create failed: ${errorText(result)}`, true);
      }
    } catch (error) {
      say(`Create failed: ${error.message}`, true);
    }
  }

  function openOnDevice(event) {
    event.preventDefault();
    const clientID = $("open-device").value.trim();
    const itemID = $("open-item").value;
    if (!itemID) return say("There is no item to open.", true);
    send(clientID, { [$("open-what").value]: { itemID } });
  }

  // ---- signing in and out ----------------------------------------------------------------

  async function signIn(token) {
    state.token = token;
    $("token-error").textContent = "";
    setConnection("connecting", "Checking the token…");
    let me;
    try {
      me = await api("GET", "/v1/users/me");
    } catch (error) {
      setConnection("failed", "The server cannot be reached");
      $("token-error").textContent = `The server cannot be reached: ${error.message}`;
      return;
    }
    if (me.status === 401) return signOut("The server refused this token (401). It may be wrong or revoked.");
    if (me.status !== 200) return signOut(`The token could not be checked: ${errorText(me)}`);
    // A viewer may read everything and drive its own navigation, but not write items; the
    // inspector's actions all end in item writes (create, save, delete), so it shows none. An
    // alert open on a device still shows its buttons, as the device has them.
    state.canWrite = me.json.role !== "viewer";
    $("whoami").textContent = `${me.json.user} (${me.json.role})`;
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token-form").hidden = true;
    $("app").hidden = false;
    $("sign-out").hidden = false;
    $("actions").hidden = !state.canWrite;
    $("read-only").hidden = state.canWrite;
    $("read-only").textContent = state.canWrite ? "" :
      `Read-only: this is a viewer token, and a viewer may not write items (the server answers 403 forbidden to a create, save or delete), so the page shows no actions. An alert open on a device shows its buttons as the device has them; those that would write an item are refused. Everything else updates live.`;
    await start();
  }

  function signOut(reason = "") {
    state.generation++;
    stopFeed();
    state.token = null;
    state.presence = new Map();
    sessionStorage.removeItem(TOKEN_KEY);
    $("app").hidden = true;
    $("sign-out").hidden = true;
    $("token-form").hidden = false;
    $("token-error").textContent = reason;
    $("whoami").textContent = "";
    setConnection("signed-out", "Not connected");
    $("token").focus();
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("feed-limit").textContent = String(FEED_LIMIT);
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      signIn($("token").value.trim());
    });
    $("sign-out").addEventListener("click", () => signOut());
    $("banner-close").addEventListener("click", () => { $("banner").hidden = true; });
    $("create-form").addEventListener("submit", create);
    $("open-form").addEventListener("submit", openOnDevice);
    setInterval(refreshPresenceTimes, PRESENCE_CLOCK_MS);
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) signIn(saved);
  });
})();
