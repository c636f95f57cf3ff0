// Stockroom inspector: a client of the public API like any other. It reads a snapshot and the
// changes just before it (for the Feed panel), then follows the change feed over Server-Sent
// Events from the snapshot's cursor, and applies each change to the one row or card it touches.
// Each device's card says whether it is open now or when it was last seen (its presence).
// Plain JavaScript, no framework, nothing fetched from anywhere but this server.
//
// The page's scripts, run in this order (index.html loads each with `defer`): core.js (constants,
// DOM helpers, the page's state, formatting, messages), api.js, items.js, presence.js, devices.js,
// feed.js, inspector.js. Each is a function of its own that takes what it uses from `Inspector`
// (declared here) and adds to it what the later ones use.
"use strict";

const Inspector = {};

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
    options: new Map(),    // id -> <option> of the Open form's item choices (an editor's)
    devices: new Map(),    // clientID -> Navigation
    cards: new Map(),      // clientID -> card element
    presence: new Map(),   // clientID -> { online, lastSeenAt } (a device with no entry: not known yet)
    presenceTimer: null,   // a re-read of presence is due (see presenceSoon)
    presenceAgain: false,  // a navigation change arrived after it was scheduled
    cursor: null,
    filter: "",            // the item filter the page follows (filter=), empty for every item
    source: null,
    generation: 0,         // bumps on every (re)start, so stale callbacks do nothing
    retry: null,
  };

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

  Object.assign(Inspector, { TOKEN_KEY, FEED_LIMIT, RECENT_REQUESTS, ITEM_COLUMNS, TOPICS, PRESENCE_REREAD_MS,
    PRESENCE_CLOCK_MS, $, el, state, statusText, colorNode, timeText, ago, later, itemName, same, setConnection, say,
    showBanner });
})();
