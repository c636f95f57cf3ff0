// Signing in and out, the Actions panel's forms, and the start of the page: the last of the
// inspector's scripts (core.js says which run before it).
"use strict";

(() => {
  const { TOKEN_KEY, FEED_LIMIT, PRESENCE_CLOCK_MS, $, state, setConnection, say, api, errorText, send,
    refreshPresenceTimes, start, stopFeed, setFilter } = Inspector;

  // ---- item writes and opening on a device ---------------------------------------------

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
    $("import-form").hidden = !state.canWrite;
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
    $("filter-form").addEventListener("submit", (event) => {
      event.preventDefault();
      setFilter($("filter").value.trim());
    });
    $("filter-clear").addEventListener("click", () => {
      $("filter").value = "";
      setFilter("");
    });
    setInterval(refreshPresenceTimes, PRESENCE_CLOCK_MS);
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) signIn(saved);
  });

  Object.assign(Inspector, { signOut });
})();
