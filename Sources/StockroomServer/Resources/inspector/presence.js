// Each device's presence (open now, or when it was last seen), as its card shows it.
"use strict";

(() => {
  const { PRESENCE_REREAD_MS, el, state, ago, later, api } = Inspector;

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

  Object.assign(Inspector, { presenceBadge, refreshPresenceTimes, mergePresence, readPresence, presenceSoon });
})();
