-- save-cycle.lua: the edit-save cycle through commands (target (d) of run.sh).
--
-- Each request alternates, on the thread's own client:
--   POST /v1/clients/{clientID}/commands {"command":{"openEdit":{"itemID":ID}}}
--   POST /v1/clients/{clientID}/commands {"command":{"save":{}}}
-- so two requests are one full cycle (open the edit sheet, save it into the item).
--
-- Environment: TOKEN (an editor token), ITEM_IDS (comma-separated item ids, at least one per
-- thread), CLIENT_PREFIX (clientIDs are PREFIX-t<n>).
--
-- IMPORTANT: run with as many connections as threads (`wrk -tN -cN`). wrk's Lua cannot tell
-- connections apart, so the thread is the unit that owns a clientID and an item; with one
-- connection per thread its requests are strictly sequential and openEdit/save alternate
-- exactly. Each thread has its own item, because concurrent edit-saves of one item from two
-- clients rightly end in 409 conflict. A misuse (more connections than threads, or fewer
-- items than threads) shows up as 409 errors, which make the run invalid.
--
-- Every response is checked; anything outside 2xx is counted as an error, and the first
-- such response body is kept as a sample.

local ids = {}
for id in string.gmatch(os.getenv("ITEM_IDS") or "", "[^,]+") do ids[#ids + 1] = id end
local token = os.getenv("TOKEN") or ""
local prefix = os.getenv("CLIENT_PREFIX") or "bench"

local threads = {}
local next_tid = 0
function setup(thread)
   next_tid = next_tid + 1
   thread:set("tid", next_tid)
   threads[#threads + 1] = thread
end

local open_req, save_req
errors = 0
opens = 0
saves = 0
sample = ""
item_shortage = 0

function init(args)
   if #ids == 0 then error("ITEM_IDS is empty") end
   if tid > #ids then item_shortage = 1 end
   local id = ids[(tid - 1) % #ids + 1]
   local path = "/v1/clients/" .. prefix .. "-t" .. tid .. "/commands"
   local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
   open_req = wrk.format("POST", path, headers, '{"command":{"openEdit":{"itemID":"' .. id .. '"}}}')
   save_req = wrk.format("POST", path, headers, '{"command":{"save":{}}}')
end

-- What to send next is decided by the responses, not by counting request() calls: wrk calls
-- request() once more than it sends, on the first thread, to check the script. With one
-- connection per thread the reply to a request always arrives before the next request.
local next_is_save = false

function request()
   if next_is_save then return save_req else return open_req end
end

function response(status, headers, body)
   local was_save = next_is_save
   if status >= 200 and status < 300 then
      if was_save then
         saves = saves + 1
         next_is_save = false
      else
         opens = opens + 1
         next_is_save = true
      end
   else
      errors = errors + 1
      next_is_save = false   -- start the cycle again with openEdit
      if sample == "" then
         sample = (was_save and "save " or "openEdit ") .. status .. " " .. string.sub(body or "", 1, 300)
      end
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   local socket = e.connect + e.read + e.write + e.timeout
   local lua_errors, total_opens, total_saves, shortage, samples = 0, 0, 0, 0, ""
   for _, t in ipairs(threads) do
      lua_errors = lua_errors + (t:get("errors") or 0)
      total_opens = total_opens + (t:get("opens") or 0)
      total_saves = total_saves + (t:get("saves") or 0)
      shortage = shortage + (t:get("item_shortage") or 0)
      local s = t:get("sample")
      if s and s ~= "" and samples == "" then samples = s end
   end
   local seconds = summary.duration / 1e6
   io.write(string.format(
      "RESULT requests=%d duration_s=%.3f rps=%.1f cycles_per_s=%.1f errors=%d socket_errors=%d opens=%d saves=%d p50_ms=%.2f p99_ms=%.2f\n",
      summary.requests, seconds, summary.requests / seconds, total_saves / seconds,
      lua_errors + socket, socket, total_opens, total_saves,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000))
   if shortage > 0 then io.write("WARNING fewer items than threads: threads share items and will conflict\n") end
   if samples ~= "" then io.write("ERROR_SAMPLE " .. samples .. "\n") end
end
