// The inspector's requests: every call of the API (the token, an Idempotency-Key on each write),
// and the command a device's button or form sends.
"use strict";

(() => {
  const { state, say } = Inspector;

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

  // ---- commands ------------------------------------------------------------------------

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

  Object.assign(Inspector, { api, errorText, send });
})();
