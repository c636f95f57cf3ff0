// Spreadsheets: the Items panel's Export (every item, or the filter's, as CSV) and, for an editor,
// Import (a file chosen, its dry run's report, then the import with a progress bar).
"use strict";

(() => {
  const { $, el, state, say, errorText } = Inspector;

  const authorized = (extra = {}) => Object.assign({ Authorization: `Bearer ${state.token}` }, extra);

  // ---- export ----------------------------------------------------------------------------

  async function exportItems() {
    const link = $("export-link");
    link.hidden = true;
    if (link.href) URL.revokeObjectURL(link.href);
    const query = state.filter ? `?filter=${encodeURIComponent(state.filter)}` : "";
    say("Exporting…");
    try {
      const response = await fetch(`/v1/items/export${query}`, { headers: authorized(), cache: "no-store" });
      if (response.status !== 200) {
        const text = await response.text();
        let json = null;
        try { json = JSON.parse(text); } catch { json = null; }
        return say(`Export failed: ${errorText({ status: response.status, json })}`, true);
      }
      const blob = await response.blob();
      const rows = (await blob.text()).split("\r\n").length - 2;
      link.href = URL.createObjectURL(blob);
      link.download = "items.csv";
      link.textContent = `items.csv (${rows} ${rows === 1 ? "item" : "items"}, at cursor ${response.headers.get("Stockroom-Cursor")})`;
      link.hidden = false;
      link.click();
      say(`Exported ${rows} ${rows === 1 ? "item" : "items"}.`);
    } catch (error) {
      say(`Export failed: ${error.message}`, true);
    }
  }

  // ---- import ----------------------------------------------------------------------------

  // The chosen file is checked at once (a dry run, the valid rows counted); Import then sends it.
  async function checkFile() {
    const file = $("import-file").files[0];
    $("import-run").disabled = true;
    $("import-report").replaceChildren();
    $("import-progress").hidden = true;
    if (!file) return;
    $("import-report").append(el("p", { text: `Checking ${file.name}…` }));
    const result = await upload(file, "dryRun=true&onError=skip");
    if (!result) return;
    report(result, true);
    $("import-run").disabled = result.inserted + result.updated === 0;
  }

  async function runImport(event) {
    event.preventDefault();
    const file = $("import-file").files[0];
    if (!file) return;
    $("import-run").disabled = true;
    const onError = $("import-skip").checked ? "skip" : "abort";
    const result = await upload(file, `onError=${onError}`);
    if (result) report(result, false);
  }

  // Sends `file` with NDJSON progress: the bar follows the bytes read, then the rows applied.
  async function upload(file, query) {
    const bar = $("import-progress");
    bar.hidden = false;
    bar.max = file.size || 1;
    bar.value = 0;
    try {
      const response = await fetch(`/v1/items/import?${query}`, {
        method: "POST", body: file, cache: "no-store",
        headers: authorized({ "Content-Type": "text/csv", Accept: "application/x-ndjson", "Idempotency-Key": randomKey() }),
      });
      const lines = await readLines(response, (progress) => {
        if (progress.phase === "reading") {
          bar.max = file.size || 1;
          bar.value = progress.bytes;
        } else {
          $("import-phase").textContent = `Applying: ${progress.rows} rows`;
        }
      });
      const last = lines.length ? JSON.parse(lines[lines.length - 1]) : null;
      bar.value = bar.max;
      if (response.status !== 200 || !last || last.error) {
        $("import-report").replaceChildren(el("p", { class: "error", text: `Import failed: ${errorText({ status: response.status, json: last })}` }));
        return null;
      }
      return last;
    } catch (error) {
      $("import-report").replaceChildren(el("p", { class: "error", text: `Import failed: ${error.message}` }));
      return null;
    } finally {
      $("import-phase").textContent = "";
    }
  }

  // Reads an NDJSON body line by line, handing each progress line to `onProgress`; returns the others.
  async function readLines(response, onProgress) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const lines = [];
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      pending += decoder.decode(value || new Uint8Array(), { stream: !done });
      const parts = pending.split("\n");
      pending = parts.pop();
      for (const line of parts.filter((part) => part.trim())) {
        const json = JSON.parse(line);
        if (json.progress) onProgress(json.progress); else lines.push(line);
      }
      if (done) break;
    }
    if (pending.trim()) lines.push(pending);
    return lines;
  }

  function report(summary, dryRun) {
    const counts = `${summary.inserted} to insert, ${summary.updated} to update, ${summary.unchanged} unchanged, ${summary.rejected} rejected`;
    const text = dryRun ? `Checked: ${counts}.`
      : summary.rejected > 0 && summary.inserted + summary.updated + summary.unchanged === 0 && !$("import-skip").checked
        ? `Nothing imported: ${summary.rejected} rows rejected.`
        : `Imported: ${summary.inserted} inserted, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.rejected} rejected.`;
    const nodes = [el("p", { class: "import-summary", text })];
    if (summary.rejects.length) {
      const rows = summary.rejects.slice(0, 20).map((reject) => el("li", {
        text: `Line ${reject.line}${reject.column ? `, ${reject.column}` : ""}: ${reject.message}`,
      }));
      nodes.push(el("ul", { class: "rejects" }, ...rows));
      if (summary.rejected > rows.length) nodes.push(el("p", { class: "muted", text: `… and ${summary.rejected - rows.length} more.` }));
    }
    $("import-report").replaceChildren(...nodes);
  }

  function randomKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return "inspector-import-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("export-items").addEventListener("click", exportItems);
    $("import-file").addEventListener("change", checkFile);
    $("import-form").addEventListener("submit", runImport);
  });
})();
