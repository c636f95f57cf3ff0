-- keyed_put.lua: PUT a random line of $LINES ("path<TAB>body template", %d = a random quantity),
-- each request with a fresh Idempotency-Key, as the SDK sends every write (puts.sh with KEYED=1).
-- env AUTH: the Authorization header value.
local auth = os.getenv("AUTH")
local rows = {}
for line in io.lines(os.getenv("LINES")) do
  local path, body = line:match("^([^\t]+)\t(.*)$")
  if path then rows[#rows + 1] = {path, body} end
end
-- Keys unique across the wrk processes started at once: the time, the CPU clock and this
-- process's address of a fresh table.
local address = tonumber(tostring({}):match("0x(%x+)"), 16) or 0
math.randomseed(os.time() + math.floor(os.clock() * 1e6) + address % 1000003)
local prefix = string.format("bench-%d-%d", math.random(1, 1e9), address % 1000003)
local n = 0
function request()
  n = n + 1
  local r = rows[math.random(#rows)]
  local headers = {["Content-Type"] = "application/json", ["Authorization"] = auth, ["Idempotency-Key"] = prefix .. "-" .. n}
  return wrk.format("PUT", r[1], headers, string.format(r[2], math.random(1, 1000000)))
end
