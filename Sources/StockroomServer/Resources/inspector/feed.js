// The Feed panel, the snapshot and the live feed: the snapshot and the changes just before it, then
// the feed followed over Server-Sent Events from the snapshot's cursor, each change applied to
// the one row or card it touches; a 410 loads a new snapshot.
"use strict";

(() => {
  const { FEED_LIMIT, RECENT_REQUESTS, TOPICS, $, el, state, statusText, itemName, setConnection, showBanner, api,
    errorText, renderItems, upsertItem, deleteItem, mergePresence, readPresence, presenceSoon, destinationParts,
    upsertDevice, renderDevices, refreshCardsFor, removeDevice } = Inspector;

  // signOut is inspector.js's, which runs after this file: looked up when it is called.
  const signOut = (reason) => Inspector.signOut(reason);

  const RETRY_MS = 3000;  // a failed snapshot or a stopped feed is tried again after this long

  // ---- feed log --------------------------------------------------------------------------

  // `nameOf` names a deleted item; by default, from the items the page holds.
  function logChange(change, nameOf = itemName) {
    let what;
    if (change.entity === "item" && change.move === "out") {
      what = `${nameOf(change.id)} no longer matches the filter`;
    } else if (change.entity === "item") {
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
    // A filtered feed marks an item that crossed its filter: "moved in" or "moved out".
    const move = change.move ? el("span", { class: "move", "data-move": change.move, text: `moved ${change.move}` }) : null;
    const entry = el("li", { "data-seq": String(change.seq) },
      el("span", { class: "seq", title: change.cursor, text: `#${change.seq}` }),
      el("span", { class: "topic", text: `${change.entity === "item" ? "items" : change.entity} ${change.op}` }),
      move,
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
  // first with since=oldest, so that no window starts where trimming took entries: no 410; and
  // asked again when a trim runs meanwhile), or has made RECENT_REQUESTS requests. Returns the changes oldest first, whole windows only so that
  // there is no gap; null when a newer start() took over.
  async function readRecent(generation) {
    const head = parseCursor(state.cursor);
    if (!head) return [];
    const at = (seq) => encodeURIComponent(`c1.${head.epoch}.${seq}`);
    // Nothing this token may see lies before the oldest visible change the log keeps; null
    // when the log cannot be read.
    const readFloor = async () => {
      const first = await api("GET", `/v1/changes?since=oldest&limit=1&topics=${TOPICS}${filterParam()}`);
      if (first.status !== 200) return null;
      return first.json.changes.length ? first.json.changes[0].seq - 1 : head.seq;
    };
    let floor = await readFloor();
    if (generation !== state.generation) return null;
    if (floor === null) return [];
    let recent = [];      // the changes after `end` up to the snapshot, oldest first
    let end = head.seq;
    let span = FEED_LIMIT;
    let requests = 1;
    while (recent.length < FEED_LIMIT && end > floor) {
      const from = Math.max(floor, end - span);
      const found = [];
      let position = from;
      let trimmed = false;
      while (position < end) {
        if (++requests > RECENT_REQUESTS) return recent;
        const result = await api("GET", `/v1/changes?since=${at(position)}&limit=1000&topics=${TOPICS}${filterParam()}`);
        if (generation !== state.generation) return null;
        if (result.status === 410) {
          trimmed = true;
          break;
        }
        if (result.status !== 200) return recent;
        for (const change of result.json.changes) if (change.seq <= end) found.push(change);
        const next = parseCursor(result.json.cursor);
        if (!result.json.hasMore || !next || next.seq <= position) break;
        position = next.seq;
      }
      if (trimmed) {
        // A trim ran meanwhile and took this window's start: keep the whole windows read so
        // far and read this one again from the new oldest entry.
        if (++requests > RECENT_REQUESTS) return recent;
        const newer = await readFloor();
        if (generation !== state.generation) return null;
        if (newer === null || newer <= floor) return recent;
        floor = newer;
        continue;
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
    let snapshot;
    try {
      snapshot = await api("GET", state.filter ? `/v1/snapshot?filter=${encodeURIComponent(state.filter)}` : "/v1/snapshot");
    } catch (error) {
      // The server cannot be reached (the request failed before any answer): say so, try again.
      if (generation !== state.generation) return;
      setConnection("failed", `Could not load the snapshot: the server cannot be reached (${error.message}). Retrying in ${RETRY_MS / 1000} s…`);
      return scheduleRetry(generation);
    }
    if (generation !== state.generation) return;
    if (snapshot.status === 401) return signOut("The server refused this token (401). It may be wrong or revoked.");
    if (snapshot.status !== 200 || !snapshot.json) {
      setConnection("failed", `Could not load the snapshot: ${errorText(snapshot)}. Retrying in ${RETRY_MS / 1000} s…`);
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
    const url = `/v1/changes/stream?since=${encodeURIComponent(state.cursor)}&topics=${TOPICS}${filterParam()}&access_token=${encodeURIComponent(state.token)}`;
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
    // The filter hid what the log gained: the page's cursor moves on without a change.
    source.addEventListener("progress", (event) => {
      if (generation !== state.generation) return;
      setCursor(JSON.parse(event.data).cursor);
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

  // A failed snapshot or a stopped feed: a new start() (a new snapshot) after RETRY_MS.
  function scheduleRetry(generation) {
    clearTimeout(state.retry);
    state.retry = setTimeout(() => { if (generation === state.generation) start(); }, RETRY_MS);
  }

  // ---- the item filter -------------------------------------------------------------------

  const filterParam = () => state.filter ? `&filter=${encodeURIComponent(state.filter)}` : "";

  function showFilter() {
    $("feed-filter").hidden = !state.filter;
    $("feed-filter-text").textContent = state.filter;
  }

  // Follows `text` (empty: every item) in place of the page's filter without a refetch: the
  // server sends the items the page lacks and the ids it no longer follows, then the feed goes
  // on under the new filter from there. A bad filter is the server's 422, shown under the box.
  async function setFilter(text) {
    $("filter-error").textContent = "";
    if (text === state.filter) return;
    const query = [`since=${encodeURIComponent(state.cursor || "")}`];
    if (text) query.push(`filter=${encodeURIComponent(text)}`);
    if (state.filter) query.push(`fromFilter=${encodeURIComponent(state.filter)}`);
    let result;
    try {
      result = await api("GET", `/v1/snapshot?${query.join("&")}`);
    } catch (error) {
      // Nothing changed: the page keeps its filter and its feed.
      $("filter-error").textContent = `The filter could not be applied: the server cannot be reached (${error.message}).`;
      return;
    }
    if (result.status === 422 || result.status === 400) {
      $("filter-error").textContent = errorText(result);
      return;
    }
    const generation = ++state.generation;
    stopFeed();
    state.filter = text;
    showFilter();
    if (result.status !== 200) return start();   // 410 and the rest: a new snapshot under the new filter
    for (const id of result.json.removed) if (state.items.has(id)) deleteItem(id);
    for (const item of result.json.items) upsertItem(item);
    setCursor(result.json.cursor);
    follow(generation);
  }

  function stopFeed() {
    clearTimeout(state.retry);
    clearTimeout(state.presenceTimer);
    state.presenceTimer = null;
    if (state.source) state.source.close();
    state.source = null;
  }

  Object.assign(Inspector, { start, stopFeed, setFilter });
})();
