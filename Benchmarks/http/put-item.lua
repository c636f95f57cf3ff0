-- put-item.lua: PUT /v1/items/{id} with a valid Draft (target (c) of run.sh).
--
-- Environment: TOKEN (an editor token), ITEM_IDS (comma-separated item ids).
-- Thread n writes item n (ids are reused round-robin if there are fewer items than threads),
-- so that PUT and the save cycle (save-cycle.lua) do the same number of writes per item.
-- No If-Match: a PUT without it always succeeds, whatever the item's version.
-- Every response is checked; anything outside 2xx is counted as an error, and the first
-- such response body is kept as a sample. A run with errors is invalid.

local ids = {}
for id in string.gmatch(os.getenv("ITEM_IDS") or "", "[^,]+") do ids[#ids + 1] = id end
local token = os.getenv("TOKEN") or ""

local threads = {}
local next_tid = 0
function setup(thread)
   next_tid = next_tid + 1
   thread:set("tid", next_tid)
   threads[#threads + 1] = thread
end

local path
local n = 0
errors = 0
oks = 0
sample = ""

function init(args)
   if #ids == 0 then error("ITEM_IDS is empty") end
   local id = ids[((tid or 1) - 1) % #ids + 1]
   path = "/v1/items/" .. id
   wrk.headers["Authorization"] = "Bearer " .. token
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   n = n + 1
   -- The quantity changes on every request, so every PUT is a real change of the item.
   local body = string.format(
      '{"name":"Bench item %d","color":{"name":"Red","red":1,"green":0,"blue":0},"status":{"inStock":{"quantity":%d}}}',
      tid or 1, n % 1000000)
   return wrk.format("PUT", path, nil, body)
end

function response(status, headers, body)
   if status >= 200 and status < 300 then
      oks = oks + 1
   else
      errors = errors + 1
      if sample == "" then sample = status .. " " .. string.sub(body or "", 1, 300) end
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   local socket = e.connect + e.read + e.write + e.timeout
   local lua_errors, lua_oks, samples = 0, 0, ""
   for _, t in ipairs(threads) do
      lua_errors = lua_errors + (t:get("errors") or 0)
      lua_oks = lua_oks + (t:get("oks") or 0)
      local s = t:get("sample")
      if s and s ~= "" and samples == "" then samples = s end
   end
   local seconds = summary.duration / 1e6
   io.write(string.format(
      "RESULT requests=%d duration_s=%.3f rps=%.1f errors=%d socket_errors=%d ok=%d p50_ms=%.2f p99_ms=%.2f\n",
      summary.requests, seconds, summary.requests / seconds, lua_errors + socket, socket, lua_oks,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000))
   if samples ~= "" then io.write("ERROR_SAMPLE " .. samples .. "\n") end
end
