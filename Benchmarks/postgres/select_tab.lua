-- Benchmarks/postgres/put_ab.sh, ROW=tabs: wrk -t1 -c16 -s select_tab.lua URL (AUTH="Bearer TOKEN").
-- selectTab commands over 64 clients, each alternating its tab (every command writes).
local auth = os.getenv("AUTH")
local headers = {["Content-Type"] = "application/json", ["Authorization"] = auth}
local m, nextc, tab = 64, 0, {}
local prefix = "tabs" .. tostring(math.random(1, 1000000))
function request()
  nextc = nextc % m + 1
  tab[nextc] = (tab[nextc] == "settings") and "inventory" or "settings"
  return wrk.format("POST", "/v1/clients/" .. prefix .. "-" .. nextc .. "/commands", headers,
    '{"command":{"selectTab":{"tab":"' .. tab[nextc] .. '"}}}')
end
