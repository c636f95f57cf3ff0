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

  // The file chosen and checked, what its dry run found, whether a request is under way, and
  // whether it was imported: Import is enabled while another try may do something.
  const chosen = { file: null, check: null, busy: false, imported: false };

  function updateImportButton() {
    const { file, check, busy, imported } = chosen;
    $("import-run").disabled = !file || !check || busy || imported || check.inserted + check.updated === 0;
  }

  // The chosen file is checked at once (a dry run, the valid rows counted); Import then sends it.
  // The file's bytes are read then, so Import sends what was checked; the file box is emptied, so
  // that choosing the same file again (say, after fixing it) checks it again.
  async function checkFile() {
    const input = $("import-file");
    const picked = input.files[0];
    Object.assign(chosen, { file: null, check: null, busy: true, imported: false });
    updateImportButton();
    $("import-report").replaceChildren();
    $("import-progress").hidden = true;
    $("import-chosen").textContent = "";
    if (!picked) return Object.assign(chosen, { busy: false });
    $("import-report").append(el("p", { text: `Checking ${picked.name}…` }));
    let file;
    try {
      file = new File([await picked.arrayBuffer()], picked.name, { type: picked.type });
    } catch (error) {
      chosen.busy = false;
      $("import-report").replaceChildren(el("p", { class: "error", text: `${picked.name} could not be read: ${error.message}` }));
      return;
    } finally {
      input.value = "";
    }
    chosen.file = file;
    $("import-chosen").textContent = file.name;
    const result = await upload(file, "dryRun=true&onError=skip");
    if (chosen.file !== file) return;   // another file was chosen meanwhile
    chosen.busy = false;
    if (result) {
      chosen.check = result;
      report(result, true);
    }
    updateImportButton();
  }

  async function runImport(event) {
    event.preventDefault();
    const { file } = chosen;
    if (!file || chosen.busy) return;
    chosen.busy = true;
    updateImportButton();
    const onError = $("import-skip").checked ? "skip" : "abort";
    const result = await upload(file, `onError=${onError}`);
    if (chosen.file !== file) return;   // another file was chosen meanwhile
    chosen.busy = false;
    // Done when something was applied; refused (rows rejected under abort) or failed: it may be
    // tried again, with "Import the valid rows" ticked for instance.
    if (result) {
      report(result, false, onError);
      chosen.imported = !refused(result, onError);
    }
    updateImportButton();
  }

  // An import under onError=abort that met a rejected row applied nothing.
  const refused = (summary, onError) => onError === "abort" && summary.rejected > 0;

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
        // An error as the stream's last line comes after a 200 that said nothing about it: its
        // code and message only.
        const why = response.status === 200 && last && last.error
          ? `${last.error.code}: ${last.error.message}`
          : errorText({ status: response.status, json: last });
        $("import-report").replaceChildren(el("p", { class: "error", text: `Import failed: ${why}` }));
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

  // `onError`: the import's (none for a dry run).
  function report(summary, dryRun, onError) {
    const counts = `${summary.inserted} to insert, ${summary.updated} to update, ${summary.unchanged} unchanged, ${summary.rejected} rejected`;
    const text = dryRun ? `Checked: ${counts}.`
      : refused(summary, onError)
        ? `Nothing imported: ${summary.rejected} ${summary.rejected === 1 ? "row" : "rows"} rejected.` +
          (chosen.check && chosen.check.inserted + chosen.check.updated > 0 ? ` Tick "Import the valid rows when some are rejected" to import the others.` : "")
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
    $("import-skip").addEventListener("change", updateImportButton);
  });
})();
